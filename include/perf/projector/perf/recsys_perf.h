// The recommendation family's part of a performance report (perf/perf.h): the step of TorchRec's
// train pipeline on the critical rank and its breakdown, in samples per second.
#pragma once

#include <string>
#include <vector>

namespace projector {

struct RecsysStep {
  // The step: the device's work, overlapped (TrainPipelineSparseDist) with the host's work for the
  // step and with the next batch's input pipeline (host-to-device copy, input all-to-all).
  double step_s = 0.0;
  double device_s = 0.0;        // embedding + comm + dense + exposed DP + optimizer + UVM
  double host_s = 0.0;          // framework host time of one step (profile: per step + per sample)
  double input_dist_s = 0.0;    // the input KJT all-to-all (splits, lengths, ids)
  double h2d_s = 0.0;           // the local batch's host-to-device copy
  bool pipelined_input = true;  // false: the input pipeline adds to the device step
  std::string bound;            // "device", "host" or "input pipeline"
  // Breakdown of the device step (seconds per step on the critical rank).
  double embedding_s = 0.0;       // lookups, backward and fused optimizer update (HBM)
  double embedding_host_s = 0.0;  // rows read and written over the host link (UVM)
  double comm_s = 0.0;            // pooled-embedding output distribution, forward and backward
  double dense_s = 0.0;           // GEMMs, attention and elementwise passes of the dense part
  double dp_exposed_s = 0.0;      // dense-gradient all-reduce not hidden by the backward
  double dp_allreduce_s = 0.0;    // its full duration
  double optimizer_s = 0.0;       // the dense optimizer step
  double exposed_s = 0.0;         // step beyond the device's work (host- or input-bound)
  double samples_per_s = 0.0;
  double samples_per_s_per_gpu = 0.0;
  int critical_rank = 0;
  // Embedding time (lookups and backward) of every rank when the world has at most 64 ranks.
  std::vector<double> rank_embedding_s;
  double pooled_a2a_bytes = 0.0;  // per-rank buffer of the output all-to-all
  double input_bytes = 0.0;       // per-rank ids and lengths of the input all-to-all
};

}  // namespace projector
