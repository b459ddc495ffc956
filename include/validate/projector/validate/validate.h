// Validation against published, measured training runs (data/validation/calibration_runs.yaml):
// load the runs, map each one to a JobSpec (applying and recording framework defaults for what the
// source does not state), run a projection on it, and compare predicted with measured numbers.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projector/job/profile.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/model/job.h"

namespace projector {

// ----------------------------------------------------------------------------------------- input

// One command-line option of a run's config (`args:`): the CLI's long option name without its
// dashes (`hardware`, `nodes`, `gpus-per-node`, `set`, ...) and its values (one; `set` a list).
struct RunConfigArg {
  std::string key;
  std::vector<std::string> values;
  int line = 0;
};

// The framework's own config of a run (docs/validation.md "The user's path"): `validate` projects
// it through its back-end adapter exactly as a user's job, beside the free-text reading.
struct RunConfig {
  std::string path;      // the config file, resolved against the file that names it
  std::string named_in;  // the runs file or configs index that names it
  int line = 0;          // ... and the line
  std::vector<RunConfigArg> args;
};

// One list entry of the runs file, as written (null / absent -> nullopt). Free-text fields are
// kept verbatim; map_run reads them by keywords.
struct RunEntry {
  std::string id;
  int line = 0;  // 1-based line of the entry in the file
  std::string confidence;
  std::string framework;
  std::string source_title;
  // The values and reasons of the entry's `assumed` items and its `notes`, one per line: settings
  // the authors give only in prose (runs_yaml.cpp read_stated).
  std::string stated_text;
  // Non-empty: why the run is projected and shown but kept out of every statistic and gate
  // (data/validation/README.md: a debug run, a throughput set by the input pipeline, ...).
  std::string exclude_from_statistics;

  struct Hardware {
    std::string accelerator;
    std::optional<int> count;
    std::optional<int> per_node;
    std::string interconnect;
  } hardware;

  struct Moe {
    std::optional<int> num_experts;
    std::optional<int> topk;
    std::optional<std::int64_t> moe_ffn_hidden_size;
    std::optional<int> shared_experts;
    std::optional<std::int64_t> shared_expert_ffn_hidden_size;
    std::optional<int> dense_layers;
    std::optional<std::int64_t> dense_ffn_hidden_size;
    std::string moe_layer_freq;  // "all layers", an integer or a Megatron list expression
    std::string router;
  };
  struct Mla {
    std::optional<int> q_lora_rank;
    std::optional<int> kv_lora_rank;
    std::optional<int> qk_nope_head_dim;
    std::optional<int> qk_rope_head_dim;
    std::optional<int> v_head_dim;
  };
  // DeepSeek-V4's hybrid attention and hyper-connections (docs/deepseek-v4.md), in Primus'
  // argument names; one compress ratio per layer.
  struct CompressedAttention {
    std::optional<int> q_lora_rank;
    std::optional<int> qk_rope_head_dim;
    std::optional<int> sliding_window;
    std::optional<bool> attn_sink;
    std::optional<int> o_groups;
    std::optional<int> o_lora_rank;
    std::optional<int> index_topk;
    std::optional<int> index_head_dim;
    std::optional<int> index_n_heads;
    std::optional<int> hc_mult;
    std::optional<int> hc_sinkhorn_iters;
    std::optional<int> num_hash_layers;
    std::vector<std::int64_t> compress_ratios;
  };
  // A recommendation model (model.type dlrm), in TorchRec dlrm_main.py's argument names.
  struct Dlrm {
    std::optional<int> dense_features;
    std::optional<int> embedding_dim;
    std::vector<std::int64_t> num_embeddings_per_feature;
    std::vector<std::int64_t> multi_hot_sizes;  // empty: one-hot
    std::vector<std::int64_t> dense_arch_layer_sizes;
    std::vector<std::int64_t> over_arch_layer_sizes;
    std::string interaction_type;  // dot, dcn, ...
    std::optional<int> dcn_num_layers;
    std::optional<int> dcn_low_rank_dim;
    std::string embedding_dtype;
  };
  struct Model {
    std::string name;
    std::string family;
    std::string type;  // dense / moe / dlrm
    std::optional<int> num_layers;
    std::optional<std::int64_t> hidden_size;
    std::optional<std::int64_t> ffn_hidden_size;
    std::optional<int> num_attention_heads;
    std::optional<int> num_kv_heads;
    std::optional<int> head_dim;
    std::optional<std::int64_t> vocab_size;
    std::optional<int> seq_len;
    std::string activation;
    std::string norm;
    std::string position_embedding;
    std::optional<bool> tied_embeddings;
    std::optional<bool> qk_layernorm;
    std::optional<int> mtp_layers;
    std::string attention;    // free text (e.g. sliding-window notes)
    std::string block;        // free text for non-standard blocks
    std::string arch_source;  // free text: where the architecture came from (a config file)
    std::optional<Moe> moe;
    std::optional<Mla> mla;
    std::optional<CompressedAttention> compressed_attention;
    std::optional<Dlrm> dlrm;
  } model;

  struct Training {
    std::optional<int> global_batch_size;
    std::optional<int> micro_batch_size;
    std::optional<int> seq_len;
    std::optional<int> tp, pp, vpp, cp, ep, etp, dp;
    std::optional<bool> sequence_parallel;
    std::optional<bool> distributed_optimizer;
    std::string zero_stage;  // an integer or free text
    std::string fsdp;        // free text: yes / no / ...
    std::string recompute;
    // Megatron's recompute_modules as the run set them (selective recompute's module list).
    std::vector<std::string> recompute_modules;
    std::string precision;
    std::optional<bool> flash_attention;
    // flash_attention as written when it is a description rather than a boolean ("TE fused
    // attention (CK backend)"); flash_attention then holds its reading.
    std::string flash_attention_text;
    std::string pipeline_schedule;
    std::string pipeline_layout;
    // Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split:
    // the embedding / the loss count as one layer each when the layers are split evenly.
    std::optional<bool> account_for_embedding_in_pipeline_split;
    std::optional<bool> account_for_loss_in_pipeline_split;
    std::string overlap;            // free text with Megatron overlap flags
    std::string moe_dispatcher;     // free text: alltoall, allgather, flex, deepep, ... (also read
                                    // from moe_dispatch)
    std::string moe_token_balance;  // free text: "forced balanced routing", ...
    // Megatron-Core's combined 1F1B EP overlap (overlap_moe_expert_parallel_comm) and TE's fused
    // token permute (moe_permute_fusion), as the recipe the run used set them.
    std::optional<bool> moe_a2a_overlap;
    std::optional<bool> moe_permute_fusion;
    // Free text: "none", "transformer_engine, scope [attn, moe_router, moe_preprocess]",
    // "full_iteration ...", "unknown ..." (Megatron cuda_graph_impl / cuda_graph_modules).
    std::string cuda_graphs;
    std::string features;                         // free text: FSDP2, torch.compile, Float8, ...
    std::optional<int> local_batch_size;          // torchtitan per-rank batch
    std::optional<double> per_device_batch_size;  // MaxText per-chip batch (may be fractional)
    std::optional<int> fsdp_shard_degree;
    std::optional<int> batch_size_per_gpu;  // TorchRec --batch_size (per rank)
    std::string optimizer;                  // free text: sgd, adagrad, adam, ...
    // Free text: "fp32 Adam states", "precision-aware optimizer: bf16 main grads, bf16 exp_avg /
    // exp_avg_sq", ... (Megatron's use_precision_aware_optimizer and its dtypes).
    std::string optimizer_states;
    std::string sharding;     // free text: a sharding type, or the planner's
    std::string parallelism;  // free text: MaxText ici_* / dcn_* axes, topology
    std::optional<bool> token_dropping;
  } training;

  struct Measured {
    std::optional<double> tokens_per_sec_per_gpu;
    // The same run measured with vanilla and with async tensor parallelism (torchtitan's tables):
    // compared is the one the configuration describes (validate.cpp throughput_evidence).
    std::optional<double> tokens_per_sec_per_gpu_vanilla_tp;
    std::optional<double> tokens_per_sec_per_gpu_async_tp;
    std::optional<double> tokens_per_sec_total;
    // Samples (sequences; rows for recommendation models) per second; LLM runs compare it as
    // tokens / s / seq_len.
    std::optional<double> samples_per_sec_total;
    std::optional<double> tflops_per_gpu;  // also read from tflops_per_chip
    std::string flop_counting;
    std::optional<double> mfu_pct;
    std::optional<double> step_time_s;
    std::optional<double> peak_memory_gib;
    std::optional<double> peak_memory_gb;
    // Percent of the device's memory in use (Primus logs "usage_ratio": used / total of the whole
    // device); compared as that fraction of the catalogue's HBM.
    std::optional<double> peak_memory_pct;
    std::string memory_metric;
  } measured;

  struct Derived {  // computed by the file's authors from published numbers; not measurements
    std::optional<double> tokens_per_sec_per_gpu;
    std::optional<double> step_time_s;
  } derived;

  // `config:` / `args:` of the entry, or the configs index's item for it.
  std::optional<RunConfig> config;
  // `description: config`: the run is described by its framework config alone (a measurement
  // published as a comment in that config); the config path is the run's reading, statistics
  // included, and the entry states no model or training block.
  bool described_by_config = false;

  // Per-entry problems, one line each: "<id>: <field>: <message> (line N)". An entry with errors
  // (not a mapping, no id, a duplicate id) is reported as status "invalid"; the other entries are
  // unaffected.
  std::vector<std::string> errors;
  // A field whose value has the wrong type is dropped with one of these instead: the entry maps
  // from what it states correctly, and the warning is listed with its assumptions.
  std::vector<std::string> warnings;
  // Measurements that contradict themselves (a negative value): the run is kept out of the
  // statistics with these as the reason (validate() adds the ones that need the mapped job).
  std::vector<std::string> contradictions;
  bool ok() const { return errors.empty(); }
};

// Reads a runs file. A missing file, a YAML syntax error or a top level that is not a list throws
// InputError; anything wrong inside one entry becomes that entry's `errors`. Unknown keys are
// ignored.
std::vector<RunEntry> load_runs(const std::string& path);
// Same, from YAML text (`file` names it in messages and is where relative `config:` paths start).
std::vector<RunEntry> parse_runs(const std::string& yaml_text, const std::string& file);

// A configs index (data/validation/configs/index.yaml): a list of {runs_file, run, config, args}
// naming the framework's own config of published runs without editing the runs files. Attaches
// the items whose runs_file is `runs_file`'s name to those runs (config paths are relative to the
// index). An item naming a run the file lacks, a config that does not exist, a run that states
// its own config, or a malformed item throws InputError at the item's line.
void attach_run_configs(std::vector<RunEntry>& runs, const std::string& runs_file,
                        const std::string& index_path);
// <directory of runs_file>/configs/index.yaml when it exists, else "".
std::string default_configs_index(const std::string& runs_file);

// --------------------------------------------------------------------------------------- mapping

// How the source counted the FLOPs in its TFLOP/s and MFU figures.
struct FlopConvention {
  bool hardware = false;  // includes the recompute forward (SC'21, BLOOM, MT-NLG)
  FlopOptions options;    // causal halving of attention
  std::string description;
  // False when the source's count cannot be re-expressed from the job (a hybrid model whose
  // layers the framework counted as dense transformer layers): its TFLOP/s is then compared
  // only through the step time the data file derived from it.
  bool comparable = true;
};

struct MappedRun {
  std::string id;
  bool mapped = false;
  std::string reason;  // why not mapped (empty when mapped)
  // Non-empty: the entry's architecture is one the tool does not model (validate reports the run
  // as not_modelled with this reason instead of projecting an approximation).
  std::string not_modelled;
  JobSpec job;                   // filled as far as possible even when not mapped
  std::string accelerator_name;  // catalogue key ("" when not found)
  std::string framework;  // the framework profile (data/frameworks/<name>.yaml) it was read with
  std::string backend;    // that framework's back-end adapter name (megatron, torchtitan, ...)
  FlopConvention flop_convention;
  // Regime labels used to group errors.
  bool moe = false;
  std::string accelerator_family;  // AMD, NVIDIA, TPU, other
  int num_gpus = 0;
  bool fp8 = false;
  // Every value chosen because the entry did not state it, and every free-text reading.
  std::vector<std::string> assumptions;
};

// What mapping reads from the data directory, read once per validation run rather than once per
// entry: the framework profiles, the accelerator catalogue's names, and each accelerator and
// network file on first use. A catalogue that cannot be read fails the entries that need it, one
// by one, with its error.
class MappingCatalogue {
 public:
  MappingCatalogue(std::string data_dir, ProfileCatalog profiles);
  explicit MappingCatalogue(const std::string& data_dir);
  ~MappingCatalogue();
  MappingCatalogue(const MappingCatalogue&) = delete;
  MappingCatalogue& operator=(const MappingCatalogue&) = delete;

  const std::string& data_dir() const { return data_dir_; }
  const ProfileCatalog& profiles() const { return profiles_; }
  // As match_accelerator_name() (hardware/catalog.h).
  std::optional<std::string> match_accelerator(const std::string& text);
  // The catalogue entry `name` and its default network, each loaded once.
  const AcceleratorSpec& accelerator(const std::string& name);
  const NetworkSpec& default_network(const AcceleratorSpec& accelerator);

 private:
  struct Cache;
  std::string data_dir_;
  ProfileCatalog profiles_;
  std::unique_ptr<Cache> cache_;
};

// Maps one entry with the framework profiles of `data_dir` (read once per call; pass a
// MappingCatalogue when mapping many entries).
MappedRun map_run(const RunEntry& entry, const std::string& data_dir);
MappedRun map_run(const RunEntry& entry, const std::string& data_dir,
                  const ProfileCatalog& profiles);
MappedRun map_run(const RunEntry& entry, MappingCatalogue& catalogue);

// ------------------------------------------------------------------------------------ validation

// What a run's published peak memory is, read from its `memory_metric` text (docs/memory.md
// "Validation"): the allocator's reserved peak (torch max_memory_reserved, XLA's own peak: the
// reading when nothing else is said), its allocated peak (max_memory_allocated), or the whole
// device's used memory (rocm-smi / nvidia-smi, which also counts the runtime context and the
// communicator buffers).
enum class MeasuredMemory { kReserved, kAllocated, kDevice };
struct MemoryMetricReading {
  MeasuredMemory kind = MeasuredMemory::kReserved;
  // The figure labelled GB is bytes / 1024^3 (the log divides by 1024^3 and prints "GB").
  bool gb_are_gib = false;
  std::string note;  // why, when a rule applied
};
MemoryMetricReading read_memory_metric(std::string_view memory_metric);

// What a projection predicts for one job (per GPU; 0 = not predicted).
struct Prediction {
  double tokens_per_sec_per_gpu = 0.0;
  double step_time_s = 0.0;
  double model_tflops_per_gpu = 0.0;
  double hardware_tflops_per_gpu = 0.0;
  double mfu_pct = 0.0;
  std::optional<double> peak_memory_gib;     // reserved (torch max_memory_reserved; XLA's own)
  std::optional<double> peak_allocated_gib;  // allocated (torch max_memory_allocated)
  std::optional<double> peak_device_gib;     // the whole device: + context and comm buffers
  // The memory verdict is OOM: contradicts a run that was measured (it fit). validate() re-decides
  // it with the run's calibrated memory range (verdict_with_range, leave-one-family-out) from the
  // peak rank's bytes below; out_of_memory_point keeps the verdict without the range.
  bool out_of_memory = false;
  bool out_of_memory_point = false;
  struct PeakBytes {
    double point = 0.0;      // the peak rank's total
    double upper = 0.0;      // the peak upper bound
    double allocator = 0.0;  // the peak rank's allocator part (what the residuals scale)
    double capacity = 0.0;   // HBM per device
  };
  std::optional<PeakBytes> peak_bytes;
  // Dropless expert-parallel MoE projected with balanced routing: the same job with the busiest
  // EP rank receiving skew_load_factor times the mean routed tokens (PerfReport::routing_skew).
  std::optional<double> skewed_tokens_per_sec_per_gpu;
  double skew_load_factor = 1.0;
};

using ProjectFn = std::function<Prediction(const JobSpec&)>;

// The performance projection the CLI validates. Declared here, implemented by the perf module.
ProjectFn make_default_project_fn();

// One compared metric.
struct MetricComparison {
  std::string metric;  // tokens_per_sec_per_gpu, tflops_per_gpu, mfu_pct, step_time_s,
                       // peak_memory_gib
  double predicted = 0.0;
  double measured = 0.0;
  double error_pct = 0.0;  // 100 * (predicted - measured) / measured
  std::string basis;       // where the measured value came from (measured / derived / converted)
};

struct RunResult {
  std::string id;
  // ok, invalid (entry errors), unmapped, projection_failed, not_modelled (a model family the
  // projections do not model yet), no_measurement
  std::string status;
  std::string reason;
  Prediction predicted;
  std::vector<MetricComparison> metrics;
  // Throughput error used for the summary: 100 * (predicted / measured throughput - 1), from the
  // best available of tokens/s, step time, TFLOP/s (source convention) or MFU.
  std::optional<double> throughput_error_pct;
  std::string throughput_basis;
  std::optional<double> memory_error_pct;
  // The throughput error of the skewed-routing projection (Prediction::skewed_tokens_per_sec_per_
  // gpu) on the same basis; reported beside the balanced one, never in the statistics.
  std::optional<double> skewed_throughput_error_pct;
  std::vector<std::string> assumptions;
  // The entry's exclude_from_statistics reason: compared and shown, never in a statistic.
  std::string excluded;
  // The same run projected from its framework config (RunEntry::config), compared like the
  // free-text reading above.
  struct ConfigPath {
    std::string config;  // the config file
    // ok, load_failed (the adapter refused the config), projection_failed, not_modelled,
    // no_measurement
    std::string status;
    std::string reason;
    Prediction predicted;
    std::vector<MetricComparison> metrics;
    std::optional<double> throughput_error_pct;
    std::string throughput_basis;
    std::optional<double> memory_error_pct;
    std::vector<std::string> warnings;  // the adapter's warnings on the config
  };
  std::optional<ConfigPath> config_path;
  // The framework profile the run was read with, and its family: one source's runs of one model
  // (the unit of leave-one-family-out fits: "<source title to its first comma> | <model family>").
  std::string framework;
  std::string family;
  // The run's regime (interval/interval.h) and its calibrated 80 % range, scored leave-one-family-
  // out (data/validation/residuals.json without the run's own family): tokens/s/GPU and, where
  // memory is projected, peak GiB. `in_range`: the measurement lies inside (the throughput error is
  // between the residuals' 10th and 90th percentiles).
  std::string regime_key;
  // Its pooling ladder (Regime::levels without "all"): coverage is reported at every level.
  std::vector<std::string> regime_levels;
  // The run's throughput error with the constants fitted without its family (its row of
  // residuals.json, same id and family): the range is drawn around that projection and
  // `in_range` judged on it. Absent for a run the residuals do not hold (scored in-sample).
  std::optional<double> lofo_error_pct;
  std::string range_refusal;  // why no range (interval.h range_refusal), "" otherwise
  std::string range_level;
  int range_runs = 0;
  std::optional<std::pair<double, double>> tokens_range;
  std::optional<std::pair<double, double>> memory_range;
  std::optional<bool> in_range;
  // Regime labels
  bool moe = false;
  bool recommendation = false;  // the recommendation family (model regime "recommendation")
  std::string accelerator_family;
  int num_gpus = 0;
  bool pp = false, cp = false, ep = false, fp8 = false;
};

struct ErrorStats {
  int count = 0;
  double mape_pct = 0.0;         // mean of |error|
  double median_abs_pct = 0.0;   // median of |error|
  double p90_abs_pct = 0.0;      // 90th percentile of |error| (linear interpolation)
  double mean_signed_pct = 0.0;  // bias: > 0 means predictions are too optimistic / too large
};

// Statistics of a list of signed percentage errors.
ErrorStats error_stats(const std::vector<double>& errors_pct);

struct RegimeStats {
  std::string group;  // model, accelerator, scale, pp, cp, ep, fp8
  std::string value;  // dense / moe, AMD / NVIDIA / TPU, <=64 / <=1024 / >1024, with / without
  ErrorStats throughput;
};

// Interval coverage: compared runs with a range, and those whose measurement lies inside it.
struct CoverageStats {
  std::string group;  // all, model, accelerator, regime (each level of the runs' regime ladders)
  std::string value;
  int runs = 0;
  int inside = 0;
  double pct() const { return runs > 0 ? 100.0 * inside / runs : 0.0; }
};

// Whether `inside` of `runs` is a count a calibrated range of coverage `p` gives with at least
// `tail` probability on each side: P(X <= inside) >= tail and P(X >= inside) >= tail for X ~
// Binomial(runs, p). 8 of 8 inside an 80 % range has probability 0.8^8 = 17 %: consistent,
// although outside a 70-90 % band that a group of 8 can meet only with 6 or 7.
bool coverage_consistent(int inside, int runs, double p = 0.8, double tail = 0.025);

// The user's path (RunResult::config_path) over the runs that have a config, with the free-text
// path's statistics on the same runs beside it.
struct ConfigPathSummary {
  int runs = 0;      // runs with a config (excluded runs not counted)
  int compared = 0;  // ... projected from it and compared
  int failed = 0;    // ... whose config did not load or project
  ErrorStats throughput;
  ErrorStats memory;
  ErrorStats free_text_throughput;  // the free-text path on the same runs (both compared)
  ErrorStats free_text_memory;
  ErrorStats same_runs_throughput;         // the config path on those same runs
  std::vector<std::string> projected_oom;  // ran, but the config's projection says OOM
};

struct ValidationSummary {
  int runs = 0;
  int compared = 0;
  int unmapped = 0;
  int invalid = 0;
  int failed = 0;
  int not_modelled = 0;
  int excluded = 0;  // compared runs kept out of the statistics (exclude_from_statistics)
  ErrorStats throughput;
  ErrorStats memory;
  // Compared runs whose projection says out of memory although they ran.
  std::vector<std::string> projected_oom;
  std::vector<RegimeStats> by_regime;
  // Runs with a skewed-routing projection, and those whose measurement lies between it and the
  // balanced projection (the routing bracket).
  int skew_bracketed = 0;
  std::vector<std::string> within_skew_bracket;
  // "all" first, then by model, accelerator and regime level
  std::vector<CoverageStats> coverage;
  ConfigPathSummary config_path;
};

struct ValidationReport {
  std::vector<RunResult> runs;
  ValidationSummary summary;
};

// Summary of already computed results (overall and by regime).
ValidationSummary summarize(const std::vector<RunResult>& runs);

// Maps every entry, projects the mapped ones and compares. The projection throwing InputError
// marks that run projection_failed; other runs go on.
ValidationReport validate(const std::vector<RunEntry>& runs, const ProjectFn& project,
                          const std::string& data_dir);
// Uses the bundled data directory.
ValidationReport validate(const std::vector<RunEntry>& runs, const ProjectFn& project);

// JSON text of a report: {"schema_version", "runs": [...], "summary": {...}}.
inline constexpr int kValidationSchemaVersion = 1;
std::string report_to_json(const ValidationReport& report);

}  // namespace projector
