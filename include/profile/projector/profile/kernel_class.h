// Which op class a GPU kernel belongs to, from its name (and, for collectives, the arguments
// Kineto records). Names follow the vendor libraries: cuBLAS / cuBLASLt (sm90_xmma_gemm_*,
// nvjet_*, ampere_*gemm*), CUTLASS, hipBLASLt / Tensile (Cijk_*), Composable Kernel, Triton
// (triton_*mm*, attn_fwd), FlashAttention 2/3, PyTorch's flash kernels, cuDNN SDPA, CK / aiter
// fmha, NCCL / RCCL, DeepEP, and PyTorch's native elementwise, reduction and norm kernels.
#pragma once

#include <cstdint>
#include <string_view>

#include "projector/cost/collective.h"
#include "projector/cost/measured.h"

namespace projector::profile {

enum class KernelClass : std::uint8_t {
  kGemm,
  kGroupedGemm,
  kAttentionFwd,
  kAttentionBwd,
  kNorm,
  kRope,
  kSoftmax,
  kActivation,
  kCast,         // dtype conversion and fp8 quantisation (with or without transpose)
  kElementwise,  // adds, muls, copies, fills, reductions, concatenation, dropout
  kRouter,       // MoE top-k
  kPermute,      // MoE token permute / unpermute, gathers and scatters
  kEmbedding,
  kLoss,
  kOptimizer,
  kConvolution,
  kMemcpy,
  kMemset,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv,
  kBroadcast,
  kOther,  // not recognised: the residual
  kCount
};
inline constexpr int kNumKernelClasses = static_cast<int>(KernelClass::kCount);

std::string_view to_string(KernelClass c);
bool is_collective(KernelClass c);

// `collective_name`: Kineto's args["Collective name"] ("allreduce", "_allgather_base", ...), or
// empty. Memcpy / memset activities are classified by their category, not by this function.
KernelClass classify_kernel(std::string_view name, std::string_view collective_name = {});

// The cost class whose ratio the kernel's time anchors; false when no modelled op corresponds
// (copies, memsets, convolutions, unrecognised kernels and collectives, handled separately).
bool cost_class_of(KernelClass c, CostClass& out);
// For collective classes.
CollectiveKind collective_kind(KernelClass c);

}  // namespace projector::profile
