// Environment and CLI overrides on the neutral draft, and the cluster they ask for. Internal to
// the frontend module.
#pragma once

#include "projector/frontend/loader.h"
#include "projector/job/draft.h"

namespace projector::frontend_detail {

// PRIMUS_TP ... PRIMUS_ETP, then the CLI flags (--tp ... --seq, --enable-zero-bubble, ...).
void apply_overrides(const LoadRequest& request, JobDraft& draft);

// The hardware and node count the request asks for (flags beat PRIMUS_GPU_ARCH / NNODES /
// GPUS_PER_NODE); names the draft's node fields after where they came from.
ClusterRequest cluster_request(const LoadRequest& request, JobDraft& draft);

}  // namespace projector::frontend_detail
