// Primus' MambaModel loss (PR13): Primus patches Megatron's MambaModel to compute the loss with
// FLA's fused cross entropy. fla_runtime_patches.py resolves each knob as the environment variable,
// else the YAML key, else its default: fused_ce_mode (PRIMUS_FUSED_CE, default 1) and
// fused_ce_chunks (PRIMUS_FUSED_CE_CHUNKS, default 32).
//   0: Megatron's own cross entropy (cross_entropy_loss_fusion as stated);
//   1: FusedLinearCrossEntropyLoss: the tokens in `chunks` tiles, each tile's logits computed,
//      turned into their gradient in place and multiplied back into the input and weight
//      gradients inside the forward; the full logits never exist;
//   2: FusedCrossEntropyLoss: the full logits in the activation dtype, the gradient written into
//      them in the forward (a fused cross entropy).
// GPT models (model_type gpt) do not go through MambaModel and keep Megatron's loss.
#include <fmt/format.h>

#include <string>

#include "frontend/megatron/adapter.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

constexpr std::int64_t kDefaultMode = 1;
constexpr std::int64_t kDefaultChunks = 32;

struct Knob {
  std::int64_t value = 0;
  std::string origin;  // "environment NAME", the key, or "default"
};

// The environment over the key (as the Primus patch resolves them) unless --set states the key
// (the command line beats the environment, as for PRIMUS_TP), then the default.
Knob resolve(ArgReader& r, const EnvLookup& env, const std::string& key, const char* var,
             std::int64_t fallback) {
  if (r.has(key) && r.where(key).file == "--set") return {r.int_quiet(key, fallback), key};
  if (env) {
    if (const std::optional<std::string> text = env(var); text && !text->empty()) {
      const SourceLocation where{fmt::format("environment {}", var), 0, 0};
      const ConfigValue v = resolve_plain_scalar(*text, where);
      if (v.kind != ConfigValue::Kind::kInt) {
        throw InputError(where, var, fmt::format("expected an integer, got '{}'", *text));
      }
      return {v.i, where.file};
    }
  }
  if (r.has(key)) return {r.int_quiet(key, fallback), key};
  return {fallback, "default"};
}

void check_range(ArgReader& r, const Knob& k, const std::string& key, std::int64_t lo,
                 std::int64_t hi) {
  if (k.value >= lo && k.value <= hi) return;
  const std::string message = fmt::format("must be {}..{}, got {}", lo, hi, k.value);
  if (k.origin.rfind("environment ", 0) == 0) {
    throw InputError({k.origin, 0, 0}, k.origin.substr(12), message);
  }
  r.fail(key, message);
}

}  // namespace

void read_primus_fused_loss(ArgReader& r, const EnvLookup& env, JobDraft& d) {
  if (d.profile.name != "primus") return;
  if (to_lower(r.string_or("model_type", "gpt", "")) != "mamba") return;
  const Knob mode = resolve(r, env, "fused_ce_mode", "PRIMUS_FUSED_CE", kDefaultMode);
  check_range(r, mode, "fused_ce_mode", 0, 2);
  const Knob chunks = resolve(r, env, "fused_ce_chunks", "PRIMUS_FUSED_CE_CHUNKS", kDefaultChunks);
  check_range(r, chunks, "fused_ce_chunks", 1, 65536);
  if (mode.origin == "default") {
    d.defaults.push_back({"fused_ce_mode", std::to_string(kDefaultMode),
                          "not stated: Primus' MambaModel computes the loss with FLA's "
                          "FusedLinearCrossEntropyLoss (fla_runtime_patches.py default)",
                          ""});
  }
  if (mode.value == 0) return;
  d.runtime.cross_entropy_fusion = true;
  if (mode.value == 2) return;
  d.runtime.vocab_tiles = static_cast<int>(chunks.value);
  d.runtime.loss_grad_in_forward = true;
  if (chunks.origin == "default") {
    d.defaults.push_back({"fused_ce_chunks", std::to_string(kDefaultChunks),
                          "not stated: FLA fused linear cross entropy in token chunks "
                          "(fla_runtime_patches.py default)",
                          ""});
  }
}

}  // namespace projector::frontend_detail
