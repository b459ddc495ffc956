#include "projector/model/job.h"

#include <cctype>
#include <string>

namespace projector {

std::int64_t padded_vocab_size(const ModelSpec& model, int tp) {
  const std::int64_t multiple = static_cast<std::int64_t>(model.make_vocab_size_divisible_by > 0
                                                              ? model.make_vocab_size_divisible_by
                                                              : 1) *
                                (tp > 0 ? tp : 1);
  return (model.vocab_size + multiple - 1) / multiple * multiple;
}

Dtype PrecisionSpec::gemm_dtype() const {
  switch (fp8) {
    case Fp8Recipe::kNone:
      return params_dtype;
    case Fp8Recipe::kMxfp8:
      return Dtype::kMxfp8;
    default:
      return Dtype::kFp8;
  }
}

std::optional<Dtype> parse_dtype(std::string_view name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "fp32" || n == "float32" || n == "float" || n == "torch.float32") return Dtype::kFp32;
  if (n == "tf32") return Dtype::kTf32;
  if (n == "bf16" || n == "bfloat16" || n == "torch.bfloat16") return Dtype::kBf16;
  if (n == "fp16" || n == "float16" || n == "half" || n == "torch.float16") return Dtype::kFp16;
  if (n == "fp8" || n == "e4m3" || n == "e5m2" || n == "hybrid" || n == "uint8") return Dtype::kFp8;
  if (n == "mxfp8" || n == "mx8") return Dtype::kMxfp8;
  if (n == "fp4" || n == "mxfp4" || n == "nvfp4") return Dtype::kFp4;
  return std::nullopt;
}

std::string_view to_string(RecomputeGranularity g) {
  switch (g) {
    case RecomputeGranularity::kNone:
      return "none";
    case RecomputeGranularity::kFull:
      return "full";
    case RecomputeGranularity::kSelective:
      return "selective";
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
