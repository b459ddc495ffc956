// The Megatron back-end adapter: Megatron-LM / Megatron-Core arguments (flat files, or the
// trainer namespace of a Primus experiment) -> JobDraft. Internal to the frontend module.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/megatron/arg_reader.h"
#include "projector/frontend/adapter.h"
#include "projector/frontend/layer_pattern.h"
#include "projector/job/draft.h"

namespace projector::frontend_detail {

class MegatronAdapter final : public BackendAdapter {
 public:
  std::string_view name() const override { return "megatron"; }
  std::vector<std::string> aliases() const override {
    return {"megatron-lm", "megatron_lm", "megatron-core", "megatron_core", "mcore"};
  }
  std::string_view profile(bool primus_experiment) const override {
    return primus_experiment ? "primus" : "megatron-lm";
  }
  std::string_view preset_dir() const override { return "megatron"; }
  KeySchema key_schema(const std::string& data_dir) const override;
  JobDraft normalize(AdapterInput& input) const override;
};

// Folds the argument aliases into one spelling each (idempotent).
void normalize_megatron_args(ConfigValue& args);

// The parallel layout, sharding and overlap settings (megatron/parallel.cpp).
void read_parallel(ArgReader& r, const ModelSpec& model, JobDraft& d);
// Batches, precision, recompute, attention, MoE dispatch, schedule, optimizer (runtime.cpp).
void read_runtime(ArgReader& r, const ModelSpec& model, JobDraft& d);
// Compute units of Primus Turbo's DeepEP when a config names none: turbo_deepep_num_cu (32 CUs,
// primus_turbo.yaml). DeepEP's and HybridEP's SM budgets are profile defaults (deepep_num_sms,
// hybridep_num_sms). Read by runtime.cpp and by the command line's --enable-deepep /
// --sync-free-stage (primus/overrides.cpp).
inline constexpr int kTurboDeepEpDefaultCus = 32;
// Primus' MambaModel loss (fused_ce_mode / fused_ce_chunks, PRIMUS_FUSED_CE*; primus_loss.cpp).
void read_primus_fused_loss(ArgReader& r, const EnvLookup& env, JobDraft& d);

// Megatron / Primus pipeline schedule names (pipeline_schedule_algorithm, Primus pp_algorithm,
// --pipeline-schedule-algorithm): the shared vocabulary (util/schedule_kind.h) plus "all", the
// CLI's "compare every schedule"; nullopt for an unknown name.
std::optional<ScheduleKind> parse_schedule_name(std::string_view text);

// Refuses a model type or layer kind this tool does not model (diffusion transformers,
// attention variants other than GatedDeltaNet, Kimi-K3, heterogeneous layers) with "model type X is
// not supported" (megatron/hybrid.cpp).
void refuse_unmodelled_models(ArgReader& r);
// The layer symbols of a Mamba / hybrid stack ('M' Mamba-2, '*' or '+' attention, '-' MLP, 'E'
// MoE), or nullopt for a GPT (megatron/hybrid.cpp).
std::optional<std::string> hybrid_layer_pattern(ArgReader& r, int num_layers);
// The mixer Primus' gdn / kda hybrid stacks build for 'M' (GDN or KDA), nullopt for Mamba-2;
// `te_spec`: the Transformer-Engine variant of the spec (not *_no_te) (megatron/hybrid.cpp).
std::optional<LinearAttentionKind> hybrid_linear_kind(ArgReader& r, bool& te_spec);
// Per GPT layer, 1 where experimental_attention_variant gated_delta_net builds GDN instead of
// attention (linear_attention_freq), else 0 (megatron/hybrid.cpp).
std::vector<int> linear_attention_pattern(ArgReader& r, int num_layers);
// linear_attention_freq as MG17 get_linear_attention_pattern reads it (an integer N: layer i is
// full attention when (i + 1) % N == 0; a list or its Python text: 1 linear, 0 attention, one
// entry per layer); 1 where the layer is linear attention (megatron/hybrid.cpp).
std::vector<int> linear_layer_pattern(ArgReader& r, const ConfigValue& freq, int num_layers);
// Per GPT layer, 1 where Primus' lfm_layer_types builds an LFM2 short conv ("conv") instead of
// attention, else 0; checks the list as Primus does (megatron/hybrid.cpp).
std::vector<int> lfm_conv_pattern(ArgReader& r, int num_layers);
// Primus' Flux diffusion transformer (model_type flux*, or diffusion_model with Flux's
// num_joint_layers): its model (megatron/flux.cpp); the layouts refused for it are job rules.
bool is_flux_model(ArgReader& r);
ModelSpec build_flux_model(ArgReader& r);
// Primus' DeepSeek-V4 (model_type deepseek_v4): gives the GPT layers V4's hybrid compressed
// attention, hyper-connections and hash routing; refuses the keys not modelled (the layouts are
// job rules) (megatron/deepseek_v4.cpp, docs/deepseek-v4.md).
bool is_deepseek_v4(ArgReader& r);
void apply_deepseek_v4(ArgReader& r, ModelSpec& m);
// Primus' Kimi-K3 (model_type kimi_k3): KDA / NoPE gated MLA interleave, stable latent MoE and
// attention residuals; the schedules Primus refuses for it (megatron/kimi_k3.cpp,
// docs/kimi-k3.md).
bool is_kimi_k3(ArgReader& r);
void apply_kimi_k3(ArgReader& r, ModelSpec& m, LinearAttentionSpec kda);
void check_kimi_k3_parallel(ArgReader& r, const ModelSpec& model, const JobDraft& d);
// The Mamba-2 mixer's d_inner / hidden_size, which the layer spec fixes (megatron/hybrid.cpp).
int mamba_expand(ArgReader& r);

// Megatron's multi-latent-attention geometry keys with its argument defaults (megatron/model.cpp).
void read_mla_geometry(ArgReader& r, AttentionSpec& attn);
// A per-layer setting written as an integer, a YAML list or its Python list-expression text
// ("([0]*1+[1]*7)"), as Megatron and Primus evaluate it; refused at the key otherwise.
PyValue int_or_list(ArgReader& r, const std::string& key, const ConfigValue& v);

// A stated integer within [1, kMaxCount]; nullopt when the key is absent.
std::optional<int> positive_arg(ArgReader& r, const std::string& key);

}  // namespace projector::frontend_detail
