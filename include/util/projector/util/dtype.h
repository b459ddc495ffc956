// Numeric formats of weights, activations, gradients and GEMM inputs.
#pragma once

#include <optional>
#include <string_view>

namespace projector {

enum class Dtype { kFp32, kTf32, kBf16, kFp16, kFp8, kMxfp8, kFp4 };

inline constexpr Dtype kAllDtypes[] = {Dtype::kFp32, Dtype::kTf32,  Dtype::kBf16, Dtype::kFp16,
                                       Dtype::kFp8,  Dtype::kMxfp8, Dtype::kFp4};

// Storage bytes per element (fp4 = 0.5; block scales of mxfp8/blockwise are accounted separately).
constexpr double bytes_per_element(Dtype d) {
  switch (d) {
    case Dtype::kFp32:
    case Dtype::kTf32:
      return 4.0;
    case Dtype::kBf16:
    case Dtype::kFp16:
      return 2.0;
    case Dtype::kFp8:
    case Dtype::kMxfp8:
      return 1.0;
    case Dtype::kFp4:
      return 0.5;
  }
  return 4.0;
}

constexpr std::string_view to_string(Dtype d) {
  switch (d) {
    case Dtype::kFp32:
      return "fp32";
    case Dtype::kTf32:
      return "tf32";
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFp16:
      return "fp16";
    case Dtype::kFp8:
      return "fp8";
    case Dtype::kMxfp8:
      return "mxfp8";
    case Dtype::kFp4:
      return "fp4";
  }
  return "?";
}

// Accepts the names above plus common spellings (float32, bfloat16, half, e4m3, ...).
std::optional<Dtype> parse_dtype(std::string_view name);

}  // namespace projector
