// The torchtitan back-end adapter: a torchtitan JobConfig namespace (a job TOML, or the trainer
// namespace of a Primus experiment with `framework: torchtitan`) -> JobDraft, with torchtitan's
// semantics (docs/torchtitan.md cites each rule to torchtitan's source). Internal to the frontend.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frontend/torchtitan/flavors.h"
#include "frontend/torchtitan/reader.h"
#include "frontend/torchtitan/versions.h"
#include "projector/frontend/adapter.h"
#include "projector/job/draft.h"

namespace projector::frontend_detail {

class TorchtitanAdapter final : public BackendAdapter {
 public:
  std::string_view name() const override { return "torchtitan"; }
  std::vector<std::string> aliases() const override { return {"titan", "torch_titan"}; }
  std::string_view profile(bool primus_experiment) const override {
    return primus_experiment ? "primus-torchtitan" : "torchtitan";
  }
  std::string_view preset_dir() const override { return "torchtitan"; }
  KeySchema key_schema(const std::string& data_dir) const override;
  JobDraft normalize(AdapterInput& input) const override;
  bool sweeps_fsdp2_layouts() const override { return true; }
};

// Folds legacy spellings into torchtitan v0.2.x's (idempotent): `[float8]` / `[mx]` sections ->
// `quantize.linear.float8` / `.mx`, converters "float8" / "mx" -> "quantize.linear.float8" /
// "quantize.linear.mx".
void normalize_torchtitan_args(ConfigValue& args);

// The installed torchtitan to read flavor tables from: --backend-path, else BACKEND_PATH, else
// <Primus>/third_party/torchtitan; empty when none exists.
std::string torchtitan_checkout(const AdapterInput& in);

// What the rest of the adapter needs to know about the model beyond its ModelSpec.
struct TitanModelFacts {
  std::string name;                       // model.name
  std::string attn_type = "sdpa";         // sdpa, flex, varlen
  std::string attn_mask_type = "causal";  // causal, block_causal
  bool pipelining = true;  // the model's train spec has a pipelining function (gpt_oss has none)
  bool moe = false;
};

// model.name / model.flavor (+ architecture keys under `model:`) -> ModelSpec (model.cpp).
ModelSpec read_torchtitan_model(TitanReader& r, const AdapterInput& in, JobDraft& d,
                                TitanModelFacts& facts);
// The version a job is read as, with the table of keys that changed (versions.h).
struct TitanKeyVersion {
  const TitanVersions& table;
  const TitanVersion& version;
  // The change that introduced `key` when the job predates it; nullptr otherwise.
  const TitanChange* predating(std::string_view key) const {
    return predating_change(table, version, key);
  }
};
// Mesh, batches, pipeline split and schedule (parallel.cpp).
void read_torchtitan_parallel(TitanReader& r, const TitanModelFacts& facts,
                              const TitanKeyVersion& version, JobDraft& d);
// Activation checkpointing, precision and converters, compile, attention kernel, optimizer
// (runtime.cpp).
void read_torchtitan_runtime(TitanReader& r, const TitanModelFacts& facts, JobDraft& d);

}  // namespace projector::frontend_detail
