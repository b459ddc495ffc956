// libFuzzer target: the experiment front-end end to end. The input is an experiment file,
// optionally followed by a line "#%fuzz" and lines "env NAME=value" (the process environment the
// front-end sees: PRIMUS_TP, NNODES, ${VAR} substitutions, ...) and "set key=value" (--set). A job
// that loads is projected (memory and performance), as `projector both` does.
//
// Built as four targets (CMakeLists.txt) that differ in their seed corpus and the file's suffix:
// experiment (YAML, Megatron and Primus seeds), maxtext (YAML, Primus MaxText experiments),
// torchrec (YAML, TorchRec DLRM configs and dlrm_main.py command lines) and torchtitan (a `.toml`
// torchtitan job file, read by the TOML reader; "#%fuzz" is a TOML comment).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_common.h"
#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"

namespace {

using namespace projector;

struct Input {
  std::string yaml;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> sets;
};

Input split(const std::string& data) {
  Input in;
  const std::size_t marker = data.find("#%fuzz\n");
  in.yaml = data.substr(0, marker);
  if (marker == std::string::npos) return in;
  std::istringstream tail(data.substr(marker + 7));
  std::string line;
  while (std::getline(tail, line)) {
    if (line.rfind("env ", 0) == 0) {
      const std::size_t eq = line.find('=');
      if (eq != std::string::npos) in.env.emplace_back(line.substr(4, eq - 4), line.substr(eq + 1));
    } else if (line.rfind("set ", 0) == 0) {
      in.sets.push_back(line.substr(4));
    }
  }
  return in;
}

void project(const JobSpec& job) {
  MemoryOptions mo;
  const MemoryReport mem = project_memory(job, mo);
  fuzz::require_finite(mem.peak_point_bytes, "peak memory");
  fuzz::require_finite(mem.peak_upper_bytes, "peak memory upper bound");
  PerfOptions po;
  po.keep_op_table = false;
  po.with_memory = false;
  const PerfReport perf = project_performance(job, po);
  fuzz::require_finite(perf.iteration_s, "iteration time");
  fuzz::require_finite(perf.tokens_per_s_per_gpu, "tokens/s per GPU");
}

}  // namespace

#ifndef PROJECTOR_FUZZ_SUFFIX
#define PROJECTOR_FUZZ_SUFFIX ".yaml"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Input in = split(std::string(reinterpret_cast<const char*>(data), size));
  LoadRequest request;
  request.config_path = fuzz::scratch_file(PROJECTOR_FUZZ_SUFFIX, in.yaml);
  request.env = fixed_environment(in.env);
  request.set_overrides = in.sets;
  try {
    project(load_job(request));
  } catch (const InputError& e) {
    fuzz::require_location(e);
  }
  return 0;
}
