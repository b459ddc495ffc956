#include "projector/util/dtype.h"

#include "projector/util/text.h"

namespace projector {

std::optional<Dtype> parse_dtype(std::string_view name) {
  const std::string n = to_lower(name);
  if (n == "fp32" || n == "float32" || n == "float" || n == "torch.float32") return Dtype::kFp32;
  if (n == "tf32") return Dtype::kTf32;
  if (n == "bf16" || n == "bfloat16" || n == "torch.bfloat16") return Dtype::kBf16;
  if (n == "fp16" || n == "float16" || n == "half" || n == "torch.float16") return Dtype::kFp16;
  if (n == "fp8" || n == "e4m3" || n == "e5m2" || n == "hybrid" || n == "uint8") return Dtype::kFp8;
  if (n == "mxfp8" || n == "mx8") return Dtype::kMxfp8;
  if (n == "fp4" || n == "mxfp4" || n == "nvfp4") return Dtype::kFp4;
  return std::nullopt;
}

}  // namespace projector
