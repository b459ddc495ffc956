#include "projector/frontend/export_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "projector/job/spec.h"

namespace projector {
namespace {

void emit(YAML::Emitter& out, const ConfigValue& v) {
  switch (v.kind) {
    case ConfigValue::Kind::kNull:
      out << YAML::Null;
      break;
    case ConfigValue::Kind::kBool:
      out << v.b;
      break;
    case ConfigValue::Kind::kInt:
      out << v.i;
      break;
    case ConfigValue::Kind::kFloat:
      // The text as written keeps 1.0e-5 readable; a float with no text is printed exactly.
      if (v.s.empty()) {
        out << YAML::Precision(17) << v.f;
      } else {
        out << v.s;
      }
      break;
    case ConfigValue::Kind::kString:
      out << YAML::DoubleQuoted << v.s;
      break;
    case ConfigValue::Kind::kList:
      out << YAML::Flow << YAML::BeginSeq;
      for (const ConfigValue& item : v.items) emit(out, item);
      out << YAML::EndSeq;
      break;
    case ConfigValue::Kind::kMap:
      out << YAML::Block << YAML::BeginMap;
      for (const auto& [key, value] : v.entries) {
        out << YAML::Key << key << YAML::Value;
        emit(out, value);
      }
      out << YAML::EndMap;
      break;
  }
}

// The layout and batch the projection used, as Megatron arguments: environment (PRIMUS_TP, ...)
// and CLI flags act on the draft, after the arguments were merged.
void write_layout(const JobSpec& job, ConfigValue& args) {
  const ParallelSpec& p = job.parallel;
  auto put = [&](const char* key, std::int64_t value) {
    args.set(key, ConfigValue::make_int(value));
  };
  put("tensor_model_parallel_size", p.tp);
  put("pipeline_model_parallel_size", p.pp);
  if (p.vpp > 1) {
    put("num_virtual_stages_per_pipeline_rank", p.vpp);
    args.erase("virtual_pipeline_model_parallel_size");
  }
  put("context_parallel_size", p.cp);
  put("expert_model_parallel_size", p.ep);
  put("expert_tensor_parallel_size", p.etp);
  put("micro_batch_size", job.runtime.micro_batch_size);
  put("global_batch_size", job.runtime.global_batch_size);
  put("seq_length", job.runtime.seq_length);
}

}  // namespace

std::string resolved_config_yaml(const ResolvedConfig& config, const JobSpec& job) {
  ConfigValue args = config.args;
  if (config.framework == "megatron" && job.model.family == ModelFamily::kDecoderLm) {
    write_layout(job, args);
  }
  YAML::Emitter out;
  out << YAML::Comment("resolved by projector from " + config.source +
                       (config.model_preset_path.empty()
                            ? std::string()
                            : "; model preset " + config.model_preset_path + " inlined"));
  out << YAML::Newline;
  out << YAML::BeginMap;
  out << YAML::Key << "modules" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "pre_trainer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "framework" << YAML::Value << config.framework;
  // The presets by name, as Primus expects them; every value they set is in `overrides:` too.
  auto preset = [&](const char* key, const std::string& path) {
    if (!path.empty()) {
      out << YAML::Key << key << YAML::Value << std::filesystem::path(path).filename().string();
    }
  };
  preset("config", config.module_preset_path);
  preset("model", config.model_preset_path);
  out << YAML::Key << "overrides" << YAML::Value;
  emit(out, args);
  out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace projector
