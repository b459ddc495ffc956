// The ops of a priced report that the trace covers: pipeline rank `pp_rank`, the blocks the trace
// shows (embedding and output head only when traced) and its phases (F, plus B and W when the
// trace has a backward). Shared by the model comparison and the benchmark step equivalent.
#pragma once

#include "projector/perf/perf.h"
#include "projector/profile/profile.h"

namespace projector::profile::detail {

template <typename F>
void for_each_traced_op(const MeasuredProfile& p, const PerfReport& rep, F&& fn) {
  const ModelComparison& mc = p.model;
  for (const ChunkTiming& ct : rep.chunks) {
    if (ct.pp_rank != mc.bench.pp_rank) continue;
    for (const PricedOp& po : ct.ops) {
      const bool emb = po.block == "embedding";
      const bool out = po.block == "output" || po.block.rfind("mtp", 0) == 0;
      if ((emb && !mc.has_embedding) || (out && !mc.has_output)) continue;
      if (po.op.phase != WorkPhase::kF && !p.has_backward) continue;
      fn(po);
    }
  }
}

}  // namespace projector::profile::detail
