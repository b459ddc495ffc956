// Primus-Turbo switches whose meaning several readers share (the Megatron adapter, the Primus
// command-line overrides, the validation mapper), so the framework's rule is written once.
#pragma once

namespace projector {

// What turbo_sync_free_moe_stage turns on (PR4 rocm_arg_validation.py
// _get_sync_free_moe_options): stage 1 the fused router and token permutation, stages 2-3 also
// Turbo's DeepEP (and its grouped GEMM). Stages outside 0..3 are refused by the callers.
struct SyncFreeMoeOptions {
  bool permute_fusion = false;
  bool turbo_deepep = false;
  // Stages 2-3: the dispatch keeps the token counts on the device, so the host does not wait for
  // them once per MoE layer (RuntimeSpec::moe_host_sync_free).
  bool host_sync_free = false;
};
SyncFreeMoeOptions sync_free_moe_options(int stage);

}  // namespace projector
