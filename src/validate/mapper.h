// The validation mapper's internals: a published run (free text, partly unstated) -> JobDraft.
// Every value the entry leaves open is left to the framework profile and the job builder, which
// record it; the free-text readings are listed as assumptions here. Internal to validate.
#pragma once

#include <string>

#include "projector/job/draft.h"
#include "projector/validate/validate.h"
#include "validate/phrases.h"

namespace projector::validate_detail {

class Mapper {
 public:
  Mapper(const RunEntry& e, MappedRun& out, JobDraft& draft) : e_(e), out_(out), d_(draft) {}

  // A value chosen because the entry does not state it.
  void assume(const std::string& key, const std::string& value, const std::string& reason) {
    out_.assumptions.push_back(key + " = " + value + " (" + reason + ")");
    d_.defaults.push_back({key, value, reason});
  }
  // A reading of free text.
  void note(const std::string& text) { out_.assumptions.push_back(text); }
  // Withdraws an earlier assumption about `key` that a later inference replaces.
  void retract(const std::string& key);
  // Records the first reason the run cannot be mapped; mapping goes on to fill what it can.
  void fail(const std::string& reason) {
    if (out_.reason.empty()) out_.reason = reason;
  }

  const RunEntry& e_;
  MappedRun& out_;
  JobDraft& d_;
  const FrameworkProfile* nemo = nullptr;  // for entries that follow NeMo's recipes
  std::string data_dir;                    // catalogues (MaxText model configs, ...)
};

bool has(const std::string& haystack_lower, const char* needle);

// map_run.cpp: "AMD", "NVIDIA", "TPU" or "other", from the catalogue entry and the entry's text.
std::string accelerator_family(const AcceleratorSpec& a, const std::string& text);

// map_model.cpp: the model block (decoder LM or recommendation).
void map_model(Mapper& m, int seq_len);
// map_torchrec.cpp: model.type dlrm (TorchRec dlrm_main.py names) and its training settings.
void map_recommendation(Mapper& m);

// torchtitan_runs.cpp: a run of a torchtitan profile, through the torchtitan back-end adapter
// (model and training blocks as the JobConfig namespace a job file would have).
void map_torchtitan_run(Mapper& m, const std::string& data_dir, int seq_len);

// map_maxtext.cpp: a MaxText run (profile back-end "maxtext"): its mesh (ici_* / dcn_* axes in
// training.parallelism), per-device batch, remat policy, dtypes, MoE dispatch, and the
// architecture of the MaxText model config its arch_source names. `cl` is the loaded cluster.
void map_maxtext_training(Mapper& m, const ClusterSpec& cl);

// map_text.cpp: free-text readings.
ActivationKind read_activation(Mapper& m, const std::string& text, bool& gated);
void read_recompute(Mapper& m, const std::string& text);
void read_dispatcher(Mapper& m, const std::string& text);
// "forced balanced routing" (Megatron moe_router_force_load_balancing and the like): the router's
// choice is replaced by a balanced one, so no routing skew is possible.
// AutoModel's fake balanced gate, stated in the entry's assumptions or notes (`stated`), also
// places each token's copies on consecutive experts (MoePlacement::kConsecutive).
void read_token_balance(Mapper& m, const std::string& text, const std::string& stated);
void read_precision(Mapper& m, const std::string& text);
void read_schedule(Mapper& m, const std::string& text);
void read_interconnect(Mapper& m, const std::string& text, ClusterSpec& cluster);
FlopConvention read_convention(Mapper& m, const std::string& text);
// Scale-out bandwidth per node in Gb/s that an interconnect description states (0: none), with
// the reading in `how`. Units are read as written: Gb/s, Gbit/s, Gbps are bits, GB/s and GBps
// bytes; "per GPU" rates are multiplied by the GPUs of a node.
double stated_node_gbps(const std::string& text, int gpus_per_node, std::string& how);

}  // namespace projector::validate_detail
