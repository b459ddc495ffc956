// The MaxText back-end adapter: MaxText's configuration (a MaxText YAML with base_config, or the
// trainer namespace of a Primus experiment with framework: maxtext) -> JobDraft. Internal to the
// frontend module; the MaxText rules it shares with the validation mapper are in
// projector/frontend/maxtext.h. Sources: docs/maxtext.md.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "projector/frontend/adapter.h"
#include "projector/frontend/maxtext.h"
#include "projector/job/draft.h"

namespace projector::frontend_detail {

class MaxTextAdapter final : public BackendAdapter {
 public:
  std::string_view name() const override { return "maxtext"; }
  std::vector<std::string> aliases() const override { return {"jax", "max_text"}; }
  std::string_view profile(bool /*primus_experiment*/) const override { return "maxtext"; }
  std::string_view preset_dir() const override { return "maxtext"; }
  KeySchema key_schema(const std::string& data_dir) const override;
  bool recognizes(const ConfigValue& flat_config) const override;
  JobDraft normalize(AdapterInput& input) const override;
};

// The MaxText namespace after MaxText's own merge (pyconfig.py, docs/maxtext.md): the config
// (the experiment's keys) over base.yml, then the model config named by model_name over both,
// then the command-line overrides (Primus override_model.*, projector --set) over everything.
// `args` holds the merged keys; base.yml's defaults stay separate so that each default applied is
// recorded when it is read.
struct MaxTextConfig {
  ConfigValue base;        // base.yml defaults: a checkout's, else the bundled transcription
  std::string base_file;   // where they came from
  std::string model_file;  // the model config merged in ("" none)
  bool from_checkout = false;
};
// Merges the model config and the overrides into `in.args` (idempotent) and returns the base.
MaxTextConfig merge_maxtext_config(AdapterInput& in, JobDraft& d);

// Typed reading of the merged namespace, falling back to base.yml's default (recorded once).
class MaxTextReader {
 public:
  MaxTextReader(const ConfigValue& args, const MaxTextConfig& cfg, JobDraft& d)
      : args_(args), cfg_(cfg), d_(d) {}
  // The stated value or base.yml's; nullptr when neither has one (or it is null / "None").
  const ConfigValue* get(const std::string& key);
  bool stated(const std::string& key) const;  // in the merged config (not a base default)
  // base.yml's value without recording it as applied (nullptr when none).
  const ConfigValue* base_value(const std::string& key) const;
  SourceLocation where(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  std::int64_t integer(const std::string& key, std::int64_t fallback);
  double number(const std::string& key, double fallback);
  bool boolean(const std::string& key, bool fallback);
  std::string text(const std::string& key, const std::string& fallback);
  std::vector<std::string> list(const std::string& key);

 private:
  const ConfigValue& args_;
  const MaxTextConfig& cfg_;
  JobDraft& d_;
  std::set<std::string> recorded_;
};

// The architecture (maxtext/model.cpp).
void read_maxtext_model(MaxTextReader& r, JobDraft& d);
// The ici_* / dcn_* mesh, the pipeline and context-parallel settings (maxtext/mesh.cpp).
void read_maxtext_mesh(MaxTextReader& r, JobDraft& d);
// Batches, dtypes, optimizer, quantization, remat policy, attention, MoE dispatch, where the job
// runs (maxtext/runtime.cpp).
void read_maxtext_runtime(MaxTextReader& r, JobDraft& d);

}  // namespace projector::frontend_detail
