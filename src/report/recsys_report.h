// The recommendation family in the report module (internal): the model, plan, step and memory in
// text and JSON (docs/json-schema.md, `recommendation` and `recsys` objects).
#pragma once

#include <string>

#include "json_common.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"

namespace projector::report_detail {

// Tables, dense part, interaction, HSTU, optimizers and the embedding plan (for `config`).
std::string recsys_model_text(const JobSpec& job);
Json recsys_model_json(const JobSpec& job);

// The performance summary: samples/s, the step and its breakdown, the plan.
std::string recsys_perf_text(const JobSpec& job, const PerfReport& rep);
Json recsys_perf_json(const JobSpec& job, const PerfReport& rep);

// The memory summary: per rank tables, optimizer state, activations, buffers and the verdict.
std::string recsys_memory_text(const JobSpec& job, const MemoryReport& rep);
Json recsys_memory_json(const MemoryReport& rep);

}  // namespace projector::report_detail
