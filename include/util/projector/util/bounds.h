// Bounds for every number a user gives (config keys, environment variables, CLI flags, runs files,
// grids). Each integer read is at most kMaxCount in magnitude, so a product of two of them fits 64
// bits. Past that, physical bounds: each is far above any job ever trained (the largest published
// runs have ~130 layers, 10^6-token contexts, 10^5 GPUs, 10^4 microbatches) and low enough that
// every product the models form stays inside 64 bits and every simulation inside ~1 s and a few
// hundred MiB. Past a bound the input is refused with a clear error, never truncated or wrapped.
#pragma once

#include <cstdint>
#include <optional>

namespace projector {

inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 30;
inline constexpr std::int64_t kMaxWorldSize = std::int64_t{1} << 24;  // 16.7M accelerators
// Recommendation (DLRM) jobs: the embedding plan holds shards per table and rank. Published
// TorchRec runs use up to about a thousand GPUs; 8192 ranks plan in under a second.
inline constexpr std::int64_t kMaxRecommendationRanks = std::int64_t{1} << 13;

// Decoder layers (plus MTP layers), and PP x VPP virtual stages, which must hold a layer each.
inline constexpr std::int64_t kMaxLayers = std::int64_t{1} << 14;
// Tokens per sequence, sequences per global batch, tokens per microbatch (MBS x sequence).
inline constexpr std::int64_t kMaxSeqLength = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxGlobalBatch = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxMicrobatchTokens = std::int64_t{1} << 32;
// Microbatches per iteration and replica, and microbatches x virtual stages: the chunk passes the
// pipeline simulator schedules (2^21 take about 0.7 s and 250 MiB).
inline constexpr std::int64_t kMaxMicrobatches = std::int64_t{1} << 16;
inline constexpr std::int64_t kMaxScheduledChunks = std::int64_t{1} << 21;
// Model shape: widths (hidden, FFN, vocabulary, LoRA ranks), heads and head dimensions, experts,
// and the parameter count (so int64 parameter and byte counts cannot overflow).
inline constexpr std::int64_t kMaxWidth = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxHeads = std::int64_t{1} << 16;
inline constexpr std::int64_t kMaxHeadDim = std::int64_t{1} << 14;
inline constexpr std::int64_t kMaxExperts = std::int64_t{1} << 16;
inline constexpr double kMaxParameters = 1e15;

// a x b when both are non-negative and the product is at most `limit` (<= INT64_MAX), else
// nullopt; never overflows.
constexpr std::optional<std::int64_t> bounded_product(std::int64_t a, std::int64_t b,
                                                      std::int64_t limit) {
  if (a < 0 || b < 0) return std::nullopt;
  if (a != 0 && b > limit / a) return std::nullopt;
  return a * b;
}

}  // namespace projector
