// Kernel-name rules. Order matters: attention before GEMM (FlashAttention 3 kernels are
// cutlass::device_kernel<flash::...>), collectives first (NCCL names contain "Reduce"), memory
// layout helpers (transpose, cast) before the GEMM rule (they live in GEMM libraries' namespaces).
#include "projector/profile/kernel_class.h"

#include <array>
#include <string>

namespace projector::profile {
namespace {

bool has(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

template <std::size_t N>
bool any(std::string_view s, const std::array<std::string_view, N>& ps) {
  for (std::string_view p : ps) {
    if (has(s, p)) return true;
  }
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The function's own name: the last `::` component before its template or parameter list,
// e.g. "transpose" for "void dpsk::grouped_gemm::cuda::utils::transpose<512, 128>(...)".
std::string_view base_name(std::string_view s) {
  if (s.substr(0, 5) == "void ") s.remove_prefix(5);
  const std::size_t end = s.find_first_of("<(");
  s = s.substr(0, end);
  const std::size_t colon = s.rfind("::");
  return colon == std::string_view::npos ? s : s.substr(colon + 2);
}

KernelClass collective_from(std::string_view l) {
  if (any(l, std::array<std::string_view, 2>{"allreduce", "all_reduce"}))
    return KernelClass::kAllReduce;
  if (any(l, std::array<std::string_view, 2>{"allgather", "all_gather"}))
    return KernelClass::kAllGather;
  if (any(l, std::array<std::string_view, 2>{"reducescatter", "reduce_scatter"}))
    return KernelClass::kReduceScatter;
  if (any(l, std::array<std::string_view, 3>{"alltoall", "all_to_all", "all2all"}))
    return KernelClass::kAllToAll;
  if (any(l, std::array<std::string_view, 3>{"sendrecv", "send", "recv"}))
    return KernelClass::kSendRecv;
  if (any(l, std::array<std::string_view, 2>{"broadcast", "bcast"})) return KernelClass::kBroadcast;
  if (has(l, "reduce")) return KernelClass::kAllReduce;
  return KernelClass::kOther;
}

bool is_attention(std::string_view l) {
  static constexpr std::array<std::string_view, 12> kAttn = {
      "flash",  "fmha",    "attn_fwd", "attn_bwd",       "_attn",  "attention",
      "_sdpa_", "mha_fwd", "mha_bwd",  "_bwd_kernel_dk", "paged_", "flashattn"};
  return any(l, kAttn);
}

bool attention_backward(std::string_view l) {
  static constexpr std::array<std::string_view, 7> kBwd = {"bwd",  "backward",  "bprop", "dq_dk",
                                                           "dkdv", "convertdq", "_dq_"};
  return any(l, kBwd);
}

// Judged on the function's own name: PyTorch's elementwise kernels carry "LoadWithCast" and
// "gpu_kernel_impl_nocast" in their template arguments whatever they compute.
KernelClass memory_layout(std::string_view base) {
  if (has(base, "transpose")) return KernelClass::kElementwise;
  if (any(base, std::array<std::string_view, 4>{"cast", "quant", "to_fp8", "amax"}) &&
      !has(base, "gemm") && !has(base, "broadcast")) {
    return KernelClass::kCast;
  }
  return KernelClass::kOther;
}

bool is_gemm(std::string_view l) {
  static constexpr std::array<std::string_view, 12> kGemm = {
      "gemm",         "gemv", "nvjet",     "cijk_",      "cublas", "matmul",
      "splitkreduce", "_mm_", "mm_kernel", "triton_tem", "wmma",   "xmma"};
  return any(l, kGemm);
}

bool is_convolution(std::string_view l) {
  static constexpr std::array<std::string_view, 12> kConv = {
      "conv",  "implicit_gemm", "winograd", "fprop",       "dgrad",       "wgrad",
      "fft2d", "im2col",        "scudnn",   "cudnn_train", "cudnn_infer", "cask_cudnn"};
  return any(l, kConv) && !has(l, "sdpa");
}

// Grouped (MoE expert) GEMMs. A library namespace alone ("dpsk::grouped_gemm::") is not enough:
// DeepGEMM-style libraries run dense GEMMs from it too; the kernel name must say m- or k-grouped.
bool is_grouped_gemm(std::string_view l) {
  static constexpr std::array<std::string_view, 10> kGrouped = {
      "m_grouped",     "k_grouped",     "groupedgemm", "group_gemm",     "moe_gemm",
      "grouped_gemm_", "grouped_gemm<", "grouped_mm",  "grouped_matmul", "fused_moe"};
  return any(l, kGrouped);
}

KernelClass pointwise(std::string_view l) {
  if (any(l, std::array<std::string_view, 8>{"layer_norm", "layernorm", "rms_norm", "rmsnorm",
                                             "ln_fwd", "ln_bwd", "batch_norm", "group_norm"}) ||
      any(l, std::array<std::string_view, 3>{"bn_fw", "bn_bw", "normaliz"})) {
    return KernelClass::kNorm;
  }
  if (any(l, std::array<std::string_view, 2>{"rotary", "rope"})) return KernelClass::kRope;
  if (any(l, std::array<std::string_view, 7>{"cross_entropy", "nll_loss", "log_softmax",
                                             "logsoftmax", "mse_", "_loss", "softmax_cross"})) {
    return KernelClass::kLoss;
  }
  if (has(l, "softmax")) return KernelClass::kSoftmax;
  // ("lamb" would match every "lambda" in PyTorch's kernel names.)
  if (any(l, std::array<std::string_view, 8>{"adam", "sgd", "lamb_", "lion_", "muon", "optimizer",
                                             "adagrad", "_foreach_"})) {
    return KernelClass::kOptimizer;
  }
  if (any(l, std::array<std::string_view, 3>{"embedding", "indexselect", "index_select"})) {
    return KernelClass::kEmbedding;
  }
  if (any(l, std::array<std::string_view, 2>{"topk", "top_k"})) return KernelClass::kRouter;
  if (any(l,
          std::array<std::string_view, 12>{"permute", "scatter", "gather", "index_put", "moe_align",
                                           "expand_to_fused", "fused_mapping", "radixsort", "sort",
                                           "count_expert", "histogram", "dispatch_layout"})) {
    return KernelClass::kPermute;
  }
  if (any(l, std::array<std::string_view, 10>{"silu", "gelu", "swiglu", "relu", "sigmoid", "tanh",
                                              "geglu", "act_and_mul", "glu_", "swish"})) {
    return KernelClass::kActivation;
  }
  if (any(l, std::array<std::string_view, 2>{"nchwtonhwc", "nhwctonchw"})) {
    return KernelClass::kElementwise;  // layout transforms around cuDNN kernels
  }
  static constexpr std::array<std::string_view, 22> kElementwise = {
      "elementwise", "vectorized", "reduce_kernel", "reduce",    "fill",   "copy",
      "cat",         "add",        "mul",           "where",     "mask",   "clamp",
      "neg",         "pow",        "rsqrt",         "exp",       "arange", "dropout",
      "philox",      "triton_poi", "triton_red",    "triton_per"};
  if (any(l, kElementwise)) return KernelClass::kElementwise;
  if (any(l, std::array<std::string_view, 4>{"distribution", "multi_tensor_apply", "pool", "div"}))
    return KernelClass::kElementwise;
  return KernelClass::kOther;
}

}  // namespace

KernelClass classify_kernel(std::string_view name, std::string_view collective_name) {
  const std::string l = lower(name);
  if (!collective_name.empty()) {
    const KernelClass c = collective_from(lower(collective_name));
    if (c != KernelClass::kOther) return c;
  }
  if (has(l, "nccl") || has(l, "rccl") || has(l, "msccl")) {
    const KernelClass c = collective_from(l);
    return c == KernelClass::kOther ? KernelClass::kAllReduce : c;
  }
  // DeepEP and custom all-reduce kernels (vLLM / PyTorch symmetric memory).
  if (has(l, "::ep::") || has(l, "deep_ep") || has(l, "deepep")) {
    if (any(l, std::array<std::string_view, 4>{"dispatch", "combine", "notify", "barrier"}))
      return KernelClass::kAllToAll;
  }
  if (any(l, std::array<std::string_view, 4>{"cross_device_reduce", "multimem_all_reduce",
                                             "one_shot_all_reduce", "two_shot_all_reduce"})) {
    return KernelClass::kAllReduce;
  }
  const std::string_view base = base_name(name);
  const std::string lbase = lower(base);
  if (is_attention(l) && !has(lbase, "transpose")) {
    return attention_backward(l) ? KernelClass::kAttentionBwd : KernelClass::kAttentionFwd;
  }
  const KernelClass layout = memory_layout(lbase);
  if (layout != KernelClass::kOther) return layout;
  if (is_convolution(l)) return KernelClass::kConvolution;
  if (is_grouped_gemm(l)) return KernelClass::kGroupedGemm;
  if (is_gemm(l)) return KernelClass::kGemm;
  return pointwise(l);
}

std::string_view to_string(KernelClass c) {
  static constexpr std::array<std::string_view, kNumKernelClasses> kNames = {
      "gemm",           "grouped_gemm", "attention_fwd", "attention_bwd", "norm",
      "rope",           "softmax",      "activation",    "cast",          "elementwise",
      "router",         "permute",      "embedding",     "loss",          "optimizer",
      "convolution",    "memcpy",       "memset",        "all_reduce",    "all_gather",
      "reduce_scatter", "all_to_all",   "send_recv",     "broadcast",     "other"};
  const int i = static_cast<int>(c);
  return i >= 0 && i < kNumKernelClasses ? kNames[static_cast<std::size_t>(i)] : "?";
}

bool is_collective(KernelClass c) {
  return c >= KernelClass::kAllReduce && c <= KernelClass::kBroadcast;
}

CollectiveKind collective_kind(KernelClass c) {
  switch (c) {
    case KernelClass::kAllGather:
      return CollectiveKind::kAllGather;
    case KernelClass::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case KernelClass::kAllToAll:
      return CollectiveKind::kAllToAll;
    case KernelClass::kSendRecv:
      return CollectiveKind::kSendRecv;
    case KernelClass::kBroadcast:
      return CollectiveKind::kBroadcast;
    default:
      return CollectiveKind::kAllReduce;
  }
}

bool cost_class_of(KernelClass c, CostClass& out) {
  switch (c) {
    case KernelClass::kGemm:
      out = CostClass::kGemm;
      return true;
    case KernelClass::kGroupedGemm:
      out = CostClass::kGroupedGemm;
      return true;
    case KernelClass::kAttentionFwd:
      out = CostClass::kAttentionFwd;
      return true;
    case KernelClass::kAttentionBwd:
      out = CostClass::kAttentionBwd;
      return true;
    case KernelClass::kNorm:
    case KernelClass::kRope:
    case KernelClass::kSoftmax:
    case KernelClass::kActivation:
    case KernelClass::kCast:
    case KernelClass::kElementwise:
    case KernelClass::kRouter:
      out = CostClass::kElementwise;
      return true;
    case KernelClass::kPermute:
    case KernelClass::kEmbedding:
      out = CostClass::kPermute;
      return true;
    case KernelClass::kLoss:
      out = CostClass::kLoss;
      return true;
    case KernelClass::kOptimizer:
      out = CostClass::kOptimizer;
      return true;
    default:
      return false;
  }
}

}  // namespace projector::profile
