// Real traces and the jobs they show (tests/profile/data/README.md), loaded once per process.
#pragma once

#include <map>
#include <string>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/profile/profile.h"

namespace projector::testing {

inline std::string profile_data(const std::string& name) {
  return std::string(PROJECTOR_TEST_DATA_DIR) + "/../profile/data/" + name;
}

inline std::string repo_examples(const std::string& name) {
  return std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../examples/" + name;
}

inline const profile::TraceData& fixture_trace(const std::string& name) {
  static std::map<std::string, profile::TraceData> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, profile::read_trace(profile_data(name))).first;
  return it->second;
}

inline profile::MeasuredProfile fixture_profile(const std::string& name) {
  return profile::analyze_trace(fixture_trace(name));
}

// The job of a fixture config on `hardware`, `gpus_per_node` x `nodes` (0: the config's).
inline JobSpec fixture_job(const std::string& config, const std::string& hardware,
                           int gpus_per_node = 0, int nodes = 0) {
  LoadRequest r;
  r.config_path = profile_data(config);
  r.hardware = hardware;
  if (gpus_per_node > 0) r.cli.gpus_per_node = gpus_per_node;
  if (nodes > 0) r.cli.nodes = nodes;
  return load_job(r);
}

inline constexpr const char* kQwenConfig = "qwen1.5_0.5B-bf16-forward.yaml";
inline constexpr const char* kQwenH100 = "qwen1.5_0.5b_fwd_h100.json.gz";
inline constexpr const char* kQwenMi300x = "qwen1.5_0.5b_fwd_mi300x.json.gz";
inline constexpr const char* kDeepSeekConfig = "deepseek_v3-4moe-layers-ep64-fp8.yaml";
inline constexpr const char* kHtaNccl = "hta_a100_ddp_nccl.json.gz";
inline constexpr const char* kHtaMi250 = "hta_mi250_minitoy_train.json.gz";

// A Qwen profile compared with its job on one GPU of `hardware`.
inline profile::MeasuredProfile qwen_profile(const char* trace, const char* hardware) {
  profile::MeasuredProfile p = fixture_profile(trace);
  profile::compare_with_job(p, fixture_job(kQwenConfig, hardware, 1));
  return p;
}

}  // namespace projector::testing
