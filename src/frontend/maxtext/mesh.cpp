// MaxText's ici_* / dcn_* mesh and pipeline keys -> the draft's device mesh (docs/maxtext.md
// "Mesh"). The builder resolves the -1 axes once it knows the devices (job/mesh.h).
#include <fmt/format.h>

#include "frontend/maxtext/adapter.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

// One axis size: the stated value, else base.yml's (recorded only when it is the auto -1).
int axis_size(MaxTextReader& r, const std::string& key) {
  if (!r.stated(key)) {
    // Legacy keys (ici_sequence_parallelism, tensor_transpose) may be absent from base.yml; a
    // default of 1 is the usual case and not worth a line, the auto -1 is.
    const ConfigValue* v = r.base_value(key);
    if (v == nullptr || v->kind != ConfigValue::Kind::kInt || v->i != -1) {
      return v != nullptr && v->kind == ConfigValue::Kind::kInt ? static_cast<int>(v->i) : 1;
    }
  }
  const std::int64_t n = r.integer(key, 1);
  if (n == -1) return -1;
  if (n < 1 || n > kMaxWorldSize) {
    r.fail(key, fmt::format("must be a positive integer or -1 (auto), got {}", n));
  }
  return static_cast<int>(n);
}

void read_pipeline(MaxTextReader& r, JobDraft& d, bool staged) {
  if (!staged) return;
  const std::int64_t per_stage = r.integer("num_layers_per_pipeline_stage", 1);
  if (per_stage < 1 || per_stage > kMaxLayers) {
    r.fail("num_layers_per_pipeline_stage", fmt::format("must be in 1..{}", kMaxLayers));
  }
  d.layers_per_virtual_stage = static_cast<int>(per_stage);
  // A gemma2 MaxText layer is two transformer layers (model.cpp, gemma2.py Gemma2DecoderLayer).
  if (to_lower(r.text("decoder_block", "llama2")) == "gemma2") *d.layers_per_virtual_stage *= 2;
  const std::int64_t micro = r.integer("num_pipeline_microbatches", -1);
  if (micro > 0) d.pipeline_microbatches = static_cast<int>(micro);
  if (r.integer("pipeline_parallel_layers", -1) > 0) {
    d.warnings.push_back(fmt::format(
        "{}:{}: pipeline_parallel_layers (part of the layers pipelined) is not modelled: every "
        "layer is projected as pipelined",
        r.where("pipeline_parallel_layers").file, r.where("pipeline_parallel_layers").line));
  }
  // pipeline.py runs a scanned circular pipeline: every microbatch's forward before the
  // backward (GPipe order); projected with the 1F1B / interleaved tables, which keep fewer
  // microbatches' activations in flight.
  d.warnings.push_back(
      "MaxText's pipeline keeps every microbatch's activations until the backward (GPipe "
      "order); the memory projection uses the 1F1B / interleaved in-flight counts");
}

}  // namespace

void read_maxtext_mesh(MaxTextReader& r, JobDraft& d) {
  d.mesh.clear();
  bool staged = false;
  for (const maxtext::MeshAxisName& a : maxtext::mesh_axis_names()) {
    MeshAxis m;
    m.role = a.role;
    m.name = std::string(a.axis);
    m.ici = axis_size(r, fmt::format("ici_{}_parallelism", a.key));
    m.dcn = axis_size(r, fmt::format("dcn_{}_parallelism", a.key));
    if (m.ici == 1 && m.dcn == 1) continue;
    staged = staged || (m.role == MeshRole::kStage);
    d.mesh.push_back(std::move(m));
  }
  if (d.mesh.empty()) d.mesh.push_back(MeshAxis{MeshRole::kData, "data", 1, 1, {}, {}});
  // MX1 custom_mesh: rings of 2x2 / 2x4 chips for the last ICI axis (max_utils.py).
  d.mesh_placement = to_lower(r.text("custom_mesh", ""));
  // XLA gathers each (scanned) layer's weights as the layer runs and prefetches the next.
  d.parallel.fsdp_per_layer = true;
  const std::string cp = to_lower(r.text("context_parallel_strategy", "all_gather"));
  d.parallel.cp_comm_type = cp == "ring"                       ? CpCommType::kP2p
                            : (cp == "ulysses" || cp == "usp") ? CpCommType::kA2a
                                                               : CpCommType::kAllGather;
  read_pipeline(r, d, staged);
}

}  // namespace projector::frontend_detail
