// Job builder steps (builder_detail.h): microbatch, sequence, global batch, per-device batches,
// accumulation rounds.
#include <algorithm>

#include "job/builder_detail.h"

namespace projector::job_detail {

// MaxText's per_device_batch_size (may be fractional, e.g. 0.125 with context parallelism): the
// batch of one accumulation step is int(devices x pdbs), truncated, and the global batch that
// times the accumulation steps (MX types.py:3458-3466 calculate_global_batch_sizes); one
// microbatch per accumulation step (and per pipeline microbatch with PP) of each DP rank.
void Builder::per_device_batches() {
  RuntimeSpec& rt = job_.runtime;
  const ParallelSpec& p = job_.parallel;
  const int ga = std::max(1, d_.gradient_accumulation);
  const double exact = *d_.per_device_batch * static_cast<double>(world_);
  // A NaN, infinite or huge batch is refused before it is truncated to an integer.
  if (!(exact * ga <= static_cast<double>(kMaxGlobalBatch))) {
    fail(LayoutRule::kSizes, DraftField::kMicroBatchSize,
         fmt::format("{} x {} devices x {} accumulation steps is more than the {} sequences this "
                     "tool models",
                     *d_.per_device_batch, world_, ga, kMaxGlobalBatch));
  }
  if (!(exact >= 1.0)) {
    fail(LayoutRule::kSizes, DraftField::kMicroBatchSize,
         fmt::format("{} x {} devices = {} is less than one sequence per step (MaxText trains on "
                     "int(devices x per_device_batch_size))",
                     *d_.per_device_batch, world_, exact));
  }
  const auto step_batch = static_cast<std::int64_t>(exact);  // int(): truncated
  const std::int64_t gbs = step_batch * ga;
  const bool truncated = static_cast<double>(step_batch) != exact;
  const int pipeline =
      p.pp > 1 ? (d_.pipeline_microbatches > 0 ? d_.pipeline_microbatches : p.pp) : 1;
  const std::int64_t steps = static_cast<std::int64_t>(ga) * std::max(1, pipeline);
  // Past the global batch no rank gets a whole sequence (and the product stays in 64 bits).
  const std::int64_t per_rank =
      bounded_product(std::max(1, job_.dp()), steps, kMaxGlobalBatch).value_or(kMaxGlobalBatch + 1);
  if (gbs % per_rank != 0) {
    fail(LayoutRule::kGbs, DraftField::kMicroBatchSize,
         fmt::format("the global batch {} (per-device batch x {} devices) does not give each of "
                     "the {} batch-sharded ranks a whole number of sequences per microbatch "
                     "({} microbatches)",
                     gbs, world_, job_.dp(), steps));
  }
  rt.global_batch_size = static_cast<int>(gbs);
  rt.micro_batch_size = static_cast<int>(gbs / per_rank);
  job_.defaults.push_back(
      {"global_batch_size", show(rt.global_batch_size),
       fmt::format("{}int({} {} x {} devices) x {} accumulation steps",
                   truncated ? "truncated as MaxText does: " : "",
                   d_.key(DraftField::kGlobalBatchSize), *d_.per_device_batch, world_, ga),
       ""});
  job_.defaults.push_back(
      {"micro_batch_size", show(rt.micro_batch_size),
       fmt::format("global batch {} / ({} batch-sharded ranks x {} microbatches)", gbs, job_.dp(),
                   steps),
       ""});
}

// MaxText's per-device batch sets the microbatch and the global batch together; the other
// frameworks state (or default) each on its own.
void Builder::batches() {
  if (d_.per_device_batch) {
    per_device_batches();
    sequence_length();
  } else {
    micro_batch_size();
    sequence_length();
    global_batch_size();
  }
  accumulation_rounds();
  ModelSpec& m = job_.model;
  if (m.max_position_embeddings == 0) {
    m.max_position_embeddings = job_.runtime.seq_length;
    if (m.position_embedding == PositionEmbeddingKind::kLearnedAbsolute) {
      job_.defaults.push_back({"max_position_embeddings", show(job_.runtime.seq_length),
                               "not stated: the sequence length", ""});
    }
  }
}

void Builder::micro_batch_size() {
  RuntimeSpec& rt = job_.runtime;
  const FrameworkProfile& prof = d_.profile;
  if (d_.micro_batch_size) {
    rt.micro_batch_size =
        size_or(DraftField::kMicroBatchSize, d_.micro_batch_size, 1, nullptr, kMaxGlobalBatch);
  } else if (d_.flush_batch_size) {
    // One flush: the whole per-replica batch without PP, pipeline microbatches with PP (of a
    // stated size, or a count of them: torchtitan before #1073).
    const ParallelSpec& p = job_.parallel;
    int mbs = p.pp > 1 ? d_.pipeline_micro_batch_size.value_or(1) : *d_.flush_batch_size;
    if (p.pp > 1 && d_.pipeline_microbatch_count) {
      // Stages per rank as stated (the layout step derives VPP after this one).
      const int n = *d_.pipeline_microbatch_count > 0 ? *d_.pipeline_microbatch_count
                                                      : p.pp * std::max(1, d_.vpp.value_or(p.vpp));
      if (*d_.flush_batch_size % n != 0) {
        fail(LayoutRule::kGbs, DraftField::kMicroBatchSize,
             fmt::format("the per-replica batch {} is not divisible by the {} pipeline "
                         "microbatches",
                         *d_.flush_batch_size, n));
      }
      mbs = *d_.flush_batch_size / n;
    }
    rt.micro_batch_size = size_or(DraftField::kMicroBatchSize, mbs, 1, nullptr, kMaxGlobalBatch);
    if (*d_.flush_batch_size % rt.micro_batch_size != 0) {
      fail(LayoutRule::kGbs, DraftField::kMicroBatchSize,
           fmt::format("the per-replica batch {} is not divisible by the microbatch size {}",
                       *d_.flush_batch_size, rt.micro_batch_size));
    }
  } else if (prof.micro_batch_size.value) {
    rt.micro_batch_size = *prof.micro_batch_size.value;
    record(DraftField::kMicroBatchSize, show(rt.micro_batch_size), prof.micro_batch_size.source,
           true);
  } else {
    fail(LayoutRule::kSizes, DraftField::kMicroBatchSize,
         fmt::format("required ({})", prof.micro_batch_size.source));
  }
}

void Builder::sequence_length() {
  RuntimeSpec& rt = job_.runtime;
  const FrameworkProfile& prof = d_.profile;
  if (d_.seq_length) {
    rt.seq_length = size_or(DraftField::kSeqLength, d_.seq_length, 1, nullptr, kMaxSeqLength);
  } else if (prof.seq_length.value) {
    rt.seq_length = *prof.seq_length.value;
    record(DraftField::kSeqLength, show(rt.seq_length), prof.seq_length.source, true);
  } else {
    fail(LayoutRule::kSizes, DraftField::kSeqLength,
         fmt::format("required ({})", prof.seq_length.source));
  }
}

void Builder::global_batch_size() {
  RuntimeSpec& rt = job_.runtime;
  const FrameworkProfile& prof = d_.profile;
  const int dp = std::max(1, job_.dp());
  if (d_.global_batch_size) {
    rt.global_batch_size =
        size_or(DraftField::kGlobalBatchSize, d_.global_batch_size, 1, nullptr, kMaxGlobalBatch);
  } else if (d_.replica_batch_size) {
    const std::int64_t replica =
        size_or(DraftField::kGlobalBatchSize, d_.replica_batch_size, 1, nullptr, kMaxGlobalBatch);
    rt.global_batch_size = derived_batch(replica * dp, "per-replica batch x DP");
    record(DraftField::kGlobalBatchSize, show(rt.global_batch_size),
           fmt::format("per-replica batch {} x DP {}", *d_.replica_batch_size, dp));
  } else if (prof.global_batch_size.value) {
    rt.global_batch_size = *prof.global_batch_size.value;
    record(DraftField::kGlobalBatchSize, show(rt.global_batch_size), prof.global_batch_size.source,
           true);
  } else {
    rt.global_batch_size =
        derived_batch(static_cast<std::int64_t>(rt.micro_batch_size) * dp, "micro_batch_size x DP");
    record(DraftField::kGlobalBatchSize, show(rt.global_batch_size),
           fmt::format("micro_batch_size x DP, one microbatch ({}: {})",
                       to_string(prof.microbatch_rule.value.value_or(MicrobatchRule::kGlobalBatch)),
                       prof.microbatch_rule.source),
           true);
  }
}

// Gradient accumulation outside the schedule: one flush per flush batch x DP samples.
void Builder::accumulation_rounds() {
  if (!d_.flush_batch_size) return;
  RuntimeSpec& rt = job_.runtime;
  const int dp = std::max(1, job_.dp());
  const std::int64_t per_flush = static_cast<std::int64_t>(*d_.flush_batch_size) * dp;
  if (rt.global_batch_size % per_flush != 0) {
    fail(LayoutRule::kGbs, DraftField::kGlobalBatchSize,
         fmt::format("global batch {} is not a multiple of the per-replica batch {} x DP {}",
                     rt.global_batch_size, *d_.flush_batch_size, dp));
  }
  rt.accumulation_rounds = static_cast<int>(rt.global_batch_size / per_flush);
  if (rt.accumulation_rounds > 1) {
    record(DraftField::kGlobalBatchSize, fmt::format("{} rounds", rt.accumulation_rounds),
           fmt::format("gradient accumulation: global batch {} / (per-replica batch {} x DP {}), "
                       "each round its own pipeline flush",
                       rt.global_batch_size, *d_.flush_batch_size, dp));
  }
}

}  // namespace projector::job_detail
