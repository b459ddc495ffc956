// Framework profiles: what each training framework does when a config (or a published run) does
// not say. One data file per framework, data/frameworks/<name>.yaml, every value with its source;
// the back-end adapters and the validation mapper read the same profile, and the job builder
// applies it (job/builder.h), recording each default with the profile it came from.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projector/job/recsys_profile.h"
#include "projector/model/job.h"

namespace projector {

// WhenRule (a default that depends on the layout) lives with the job (model/job.h): a built job
// keeps the rules that decided its switches, so that a re-layout decides them again.
std::string_view to_string(WhenRule w);

// How a framework forms microbatches when the input gives no global batch.
enum class MicrobatchRule : std::uint8_t {
  kGlobalBatch,     // Megatron: GBS / (MBS x DP) microbatches; GBS defaults to MBS x DP
  kLocalBatch,      // torchtitan: a per-rank local batch, split into pipeline microbatches of
                    // pipeline_parallel_microbatch_size (default 1) only with PP
  kPerDeviceBatch,  // MaxText: per_device_batch_size x gradient_accumulation_steps (default 1)
};
std::string_view to_string(MicrobatchRule r);

// Which FLOPs a framework's logs count in TFLOP/s and MFU.
enum class FlopCounting : std::uint8_t { kModel, kHardware };

// Expert tensor parallelism when unstated, in order of preference: "tp" (= TP) or a fixed size.
// The first choice that makes a legal layout is taken (and recorded).
struct EtpChoice {
  bool equal_to_tp = false;
  int size = 1;
  friend bool operator==(const EtpChoice&, const EtpChoice&) = default;
};

template <typename T>
struct ProfileDefault {
  std::optional<T> value;  // nullopt: the framework has no default (the input must say)
  std::string source;      // where the value is documented (file:line, paper, doc page)
};

struct FrameworkProfile {
  std::string name;     // file stem: megatron-lm, primus, nemo, torchtitan, ...
  std::string title;    // "Megatron-LM", "NVIDIA NeMo / Megatron-Bridge recipes", ...
  std::string backend;  // the back-end adapter that reads its configs (megatron, torchtitan, ...)
  std::string file;     // the data file (for messages)
  std::vector<std::string> match;  // lower-case keywords that name it in free text
  // How a run of this framework is read where the tool models it through another framework's
  // conventions (a HugeCTR run through TorchRec's): each note is listed with every run mapped
  // with this profile. Not inherited through `extends`.
  std::vector<std::string> notes;

  ProfileDefault<bool> distributed_optimizer;
  ProfileDefault<WhenRule> sequence_parallel;
  ProfileDefault<bool> overlap_grad_reduce;
  ProfileDefault<WhenRule> overlap_param_gather;
  ProfileDefault<WhenRule> tp_comm_overlap;
  ProfileDefault<WhenRule> p2p_overlap;  // pipeline sends beside the compute (unset: always)
  ProfileDefault<bool> flash_attention;  // flash / fused attention on when unstated
  ProfileDefault<AttentionKernel> attention_kernel;  // the kernel when it is on
  ProfileDefault<Fp8Recipe> fp8_recipe;              // when FP8 is on but no recipe is named
  // The FP8 recipes whose weights the framework keeps in FP8 (fp8_param_gather) when the input
  // does not say; empty: none.
  ProfileDefault<std::vector<Fp8Recipe>> fp8_param_gather;
  ProfileDefault<Dtype> grad_reduce_dtype;  // gradient buffer and DP reduction
  ProfileDefault<FsdpKind> fsdp;
  ProfileDefault<int> vocab_padding;  // make_vocab_size_divisible_by (x TP)
  ProfileDefault<double> dropout;     // attention and hidden dropout
  // The model's shape where a run or config leaves it to the framework (Megatron's argument
  // defaults); a model family's own facts (data/models/_families.yaml) come first.
  ProfileDefault<NormKind> norm;
  ProfileDefault<PositionEmbeddingKind> position_embedding;
  ProfileDefault<bool> tied_embeddings;
  // Share of the compute stream's time spent between kernels (launch latency, host-side Python
  // and synchronisation, allocator calls): the idle gaps a Kineto trace shows on the compute
  // stream of a steady-state step. Compute-stream ops take busy / (1 - gap). The one end-to-end
  // constant of a framework profile, fitted on data/validation (scripts/fit_frameworks.py).
  ProfileDefault<double> kernel_gap_fraction;
  // Host time of issuing work (RuntimeSpec::host_dispatch), in microseconds, measured by host-side
  // microbenchmarks (never fitted end to end): an eager operator call, a Transformer Engine module
  // entry, a kernel issued from a C++ loop (TE's per-expert grouped GEMM).
  ProfileDefault<double> host_op_us;
  ProfileDefault<double> host_module_us;
  ProfileDefault<double> host_launch_us;
  // The gradient bucket of an overlapped data-parallel reduction when the input states none:
  // max(min_params, params_per_dp x DP) parameters (Megatron-Core's DDP). Unset: one bucket per
  // model chunk (a framework without buckets, or XLA's own scheduling).
  ProfileDefault<int> ddp_bucket_min_params;
  ProfileDefault<int> ddp_bucket_params_per_dp;
  // KV heads the tensor axis does not divide are padded (ParallelSpec::kv_heads_padded).
  ProfileDefault<bool> kv_heads_padded;
  ProfileDefault<RecomputeModules> selective_recompute;
  ProfileDefault<bool> loss_grad_in_place;
  // Whether the framework's launcher turns on the PyTorch allocator's expandable segments
  // (RuntimeSpec::allocator); unset: PyTorch's default, off.
  ProfileDefault<bool> expandable_segments;
  // MoE: the routing probabilities scale the experts' activation (the combine keeps no expert
  // output for their gradient) rather than the combined output.
  ProfileDefault<bool> moe_probs_in_experts;
  // SMs a deduplicating dispatcher's kernels run on when the input states none (Megatron's
  // moe_deepep_num_sms / moe_hybridep_num_sms, DeepEP's Buffer.num_sms): the dispatch is bound by
  // their copy rate, and the compute it overlaps runs on the other SMs.
  ProfileDefault<int> deepep_num_sms;
  ProfileDefault<int> hybridep_num_sms;
  ProfileDefault<MicrobatchRule> microbatch_rule;
  ProfileDefault<FlopCounting> flop_counting;
  ProfileDefault<std::vector<EtpChoice>> expert_tensor_parallel;
  ProfileDefault<int> micro_batch_size;
  ProfileDefault<int> global_batch_size;
  ProfileDefault<int> seq_length;
  // The catalogue accelerator when a config names only a device class (MaxText `hardware: tpu`
  // without a compile_topology); nullopt: the class alone is not enough (--hardware required).
  ProfileDefault<std::string> accelerator;
  RecsysProfile recsys;  // recommendation models (`recsys:`; empty for the LLM frameworks)
  // What the host issues per MoE op (`host_census:`, inherited through `extends`); null: none.
  std::shared_ptr<const HostCensus> host_census;
};

// Every profile of a data directory (data/frameworks/*.yaml), `extends:` resolved.
class ProfileCatalog {
 public:
  ProfileCatalog() = default;
  explicit ProfileCatalog(std::vector<FrameworkProfile> profiles);

  // By name; nullptr when unknown.
  const FrameworkProfile* find(std::string_view name) const;
  // The profile named first in free text ("NeMo 24.07 (Megatron-Core)" is NeMo); at one position
  // the longer keyword wins. nullptr when no keyword occurs.
  const FrameworkProfile* match(std::string_view text) const;
  const std::vector<FrameworkProfile>& all() const { return profiles_; }
  std::vector<std::string> names() const;

 private:
  std::vector<FrameworkProfile> profiles_;
};

// Reads <data_dir>/frameworks/*.yaml. A malformed file, an unknown key, a value without a source or
// a missing `extends:` parent is an InputError naming the file, line and key.
ProfileCatalog load_framework_profiles(const std::string& data_dir);
// One file (its parent, if any, looked up in the same directory).
FrameworkProfile load_framework_profile(const std::string& path);
// The profile `name` of <data_dir>/frameworks/ alone (its file and its `extends:` chain), for a
// job that names its framework: a process need not parse every profile. InputError when there is
// no such profile.
FrameworkProfile load_named_framework_profile(const std::string& data_dir, std::string_view name);

}  // namespace projector
