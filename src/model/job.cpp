#include "projector/model/job.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "projector/model/bounds.h"
#include "projector/model/family.h"
#include "projector/util/error.h"

namespace projector {
namespace {

constexpr std::string_view kRecomputeModuleNames[] = {
    "core_attn", "mlp", "moe", "moe_act", "layernorm", "mla_up_proj", "shared_experts"};
static_assert(std::size(kRecomputeModuleNames) == kNumRecomputeModules);

}  // namespace

std::string_view to_string(LayerKind k) {
  switch (k) {
    case LayerKind::kTransformer:
      return "transformer";
    case LayerKind::kAttention:
      return "attention";
    case LayerKind::kMamba:
      return "mamba";
    case LayerKind::kFfn:
      return "ffn";
    case LayerKind::kLinearTransformer:
      return "linear_transformer";
    case LayerKind::kLinearAttention:
      return "linear_attention";
  }
  return "?";
}

std::string_view to_string(ModelFamily f) {
  switch (f) {
    case ModelFamily::kDecoderLm:
      return "decoder LM";
    case ModelFamily::kRecommendation:
      return "recommendation";
  }
  return "?";
}

std::string_view to_string(RecomputeModule m) {
  const auto i = static_cast<std::size_t>(m);
  return i < std::size(kRecomputeModuleNames) ? kRecomputeModuleNames[i] : "?";
}

std::optional<RecomputeModule> parse_recompute_module(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kRecomputeModuleNames); ++i) {
    if (kRecomputeModuleNames[i] == name) return static_cast<RecomputeModule>(i);
  }
  return std::nullopt;
}

std::vector<std::string> RecomputeModules::names() const {
  std::vector<std::string> out;
  for (int i = 0; i < kNumRecomputeModules; ++i) {
    if (has(static_cast<RecomputeModule>(i))) out.emplace_back(kRecomputeModuleNames[i]);
  }
  return out;
}

std::int64_t padded_vocab_size(const ModelSpec& model, int tp) {
  const std::int64_t multiple = static_cast<std::int64_t>(model.make_vocab_size_divisible_by > 0
                                                              ? model.make_vocab_size_divisible_by
                                                              : 1) *
                                (tp > 0 ? tp : 1);
  return (model.vocab_size + multiple - 1) / multiple * multiple;
}

Dtype PrecisionSpec::gemm_dtype() const {
  if (fp4 != Fp4Recipe::kNone) return Dtype::kFp4;
  switch (fp8) {
    case Fp8Recipe::kNone:
      return params_dtype;
    case Fp8Recipe::kMxfp8:
      return Dtype::kMxfp8;
    default:
      return Dtype::kFp8;
  }
}

Dtype PrecisionSpec::attention_dtype() const {
  if (!fp8_attention) return params_dtype;
  return fp8 == Fp8Recipe::kMxfp8 ? Dtype::kMxfp8 : Dtype::kFp8;
}

std::string_view to_string(Fp4Recipe r) {
  switch (r) {
    case Fp4Recipe::kNone:
      return "none";
    case Fp4Recipe::kNvfp4:
      return "nvfp4";
    case Fp4Recipe::kMxfp4:
      return "mxfp4";
  }
  return "?";
}

std::string_view to_string(RecomputeGranularity g) {
  switch (g) {
    case RecomputeGranularity::kNone:
      return "none";
    case RecomputeGranularity::kFull:
      return "full";
    case RecomputeGranularity::kSelective:
      return "selective";
    case RecomputeGranularity::kOpPolicy:
      return "op";
    case RecomputeGranularity::kTensors:
      return "tensors";
  }
  return "?";
}

std::string_view to_string(MoeDispatchKind k) {
  switch (k) {
    case MoeDispatchKind::kPermute:
      return "permute";
    case MoeDispatchKind::kDenseCapacity:
      return "dense_capacity";
    case MoeDispatchKind::kDenseAll:
      return "dense_all";
  }
  return "?";
}

std::string_view to_string(MeshRole r) {
  switch (r) {
    case MeshRole::kData:
      return "data";
    case MeshRole::kStage:
      return "stage";
    case MeshRole::kFsdp:
      return "fsdp";
    case MeshRole::kFsdpTranspose:
      return "fsdp_transpose";
    case MeshRole::kContext:
      return "context";
    case MeshRole::kTensor:
      return "tensor";
    case MeshRole::kTensorSequence:
      return "tensor_sequence";
    case MeshRole::kExpert:
      return "expert";
    case MeshRole::kOther:
      return "other";
  }
  return "?";
}

std::string_view to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kNone:
      return "none";
    case Fp8Recipe::kDelayed:
      return "delayed";
    case Fp8Recipe::kTensorwise:
      return "tensorwise";
    case Fp8Recipe::kBlockwise:
      return "blockwise";
    case Fp8Recipe::kMxfp8:
      return "mxfp8";
    case Fp8Recipe::kRowwise:
      return "rowwise";
    case Fp8Recipe::kRowwiseHpWgrad:
      return "rowwise_with_gw_hp";
  }
  return "?";
}

std::string_view to_string(FsdpKind f) {
  switch (f) {
    case FsdpKind::kNone:
      return "none";
    case FsdpKind::kFsdp2:
      return "fsdp2";
    case FsdpKind::kZero3:
      return "zero3";
  }
  return "?";
}

}  // namespace projector

namespace projector {

std::string_view to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::kAllToAll:
      return "alltoall";
    case MoeDispatcher::kAllGather:
      return "allgather";
    case MoeDispatcher::kFlex:
      return "flex";
  }
  return "?";
}

std::string_view to_string(MoeDispatchKernel k) {
  switch (k) {
    case MoeDispatchKernel::kCollective:
      return "collective";
    case MoeDispatchKernel::kDeepEp:
      return "deepep";
    case MoeDispatchKernel::kHybridEp:
      return "hybridep";
    case MoeDispatchKernel::kNcclEp:
      return "ncclep";
    case MoeDispatchKernel::kTurboDeepEp:
      return "turbo_deepep";
  }
  return "?";
}

std::string_view to_string(MoeRouting r) {
  switch (r) {
    case MoeRouting::kLearned:
      return "learned";
    case MoeRouting::kForced:
      return "forced";
    case MoeRouting::kBalanced:
      break;
  }
  return "balanced";
}

std::string_view to_string(MoeOverlap o) {
  switch (o) {
    case MoeOverlap::kSharedExperts:
      return "shared_experts";
    case MoeOverlap::kOtherMicrobatch:
      return "other_microbatch";
    case MoeOverlap::kDelayedWgrad:
      return "delayed_wgrad";
    case MoeOverlap::kCount:
      break;
  }
  return "?";
}

std::vector<std::string> MoeOverlaps::names() const {
  std::vector<std::string> out;
  for (int i = 0; i < static_cast<int>(MoeOverlap::kCount); ++i) {
    if (has(static_cast<MoeOverlap>(i))) out.emplace_back(to_string(static_cast<MoeOverlap>(i)));
  }
  return out;
}

}  // namespace projector

namespace projector {
namespace {
constexpr std::string_view kOffloadModuleNames[] = {
    "attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act"};
static_assert(std::size(kOffloadModuleNames) == static_cast<std::size_t>(OffloadModule::kCount));
}  // namespace

std::string_view to_string(OffloadModule m) {
  const auto i = static_cast<std::size_t>(m);
  return i < std::size(kOffloadModuleNames) ? kOffloadModuleNames[i] : "?";
}

std::optional<OffloadModule> parse_offload_module(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kOffloadModuleNames); ++i) {
    if (kOffloadModuleNames[i] == name) return static_cast<OffloadModule>(i);
  }
  return std::nullopt;
}

// Megatron's names (transformer/enums.py CudaGraphModule; "full" is the deprecated whole layer).
constexpr std::string_view kCudaGraphModuleNames[] = {"layer",      "attn",           "mlp",  "moe",
                                                      "moe_router", "moe_preprocess", "mamba"};
static_assert(std::size(kCudaGraphModuleNames) ==
              static_cast<std::size_t>(CudaGraphModule::kCount));

std::string_view to_string(CudaGraphModule m) {
  const auto i = static_cast<std::size_t>(m);
  return i < std::size(kCudaGraphModuleNames) ? kCudaGraphModuleNames[i] : "?";
}

std::optional<CudaGraphModule> parse_cuda_graph_module(std::string_view name) {
  if (name == "full") return CudaGraphModule::kLayer;
  for (std::size_t i = 0; i < std::size(kCudaGraphModuleNames); ++i) {
    if (kCudaGraphModuleNames[i] == name) return static_cast<CudaGraphModule>(i);
  }
  return std::nullopt;
}

}  // namespace projector

namespace projector {

double glu_saved_bytes_per_element(ActivationKind a, double act_bytes) {
  return a == ActivationKind::kSitu ? 6.0 * 4.0 : 2.0 * act_bytes;
}

double glu_forward_bytes_per_element(ActivationKind a, double act_bytes) {
  // Situ: the casts read 2 inputs and write 2 fp32 copies (2a + 8), the gate's chain 44, the up
  // half's 24, the product 12, the cast back 4 + a.
  return a == ActivationKind::kSitu ? 3.0 * act_bytes + 92.0 : 3.0 * act_bytes;
}

}  // namespace projector
