// Internal to workload: the backward mirror of a forward op list (build.cpp) shared with the
// recommendation family's workload (recsys.cpp).
#pragma once

#include <vector>

#include "projector/job/recsys_ranks.h"
#include "projector/job/spec.h"
#include "projector/workload/workload.h"

namespace projector::workload_detail {

// A memory-bound op and a collective op on the layout's `group` (build.cpp's helpers).
Op memory_op(std::string name, double bytes, MemOpClass cls);
Op collective_op(std::string name, GroupKind group, CollectiveKind kind, int size, double bytes);

// Appends the B ops (input gradients, in reverse order) and then the W ops (weight gradients) of
// `fwd` to `out`.
void add_backward_ops(const std::vector<Op>& fwd, std::vector<Op>& out);

// The workload of a recommendation job: one RankWork for the rank with the heaviest embedding
// share (the step waits for it), one chunk.
Workload build_recsys_workload(const JobSpec& job);

// Per-rank buffer of the pooled-embedding all-to-all: what the busiest rank sends or receives.
double recsys_pooled_a2a_bytes(const std::vector<RecsysRankLoad>& loads);

}  // namespace projector::workload_detail
