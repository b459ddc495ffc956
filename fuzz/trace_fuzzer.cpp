// libFuzzer target: the measured-profile readers (src/profile): a Kineto / Chrome trace through
// the streaming reader and the analysis, the profile written as JSON and read back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "projector/profile/profile.h"
#include "projector/profile/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace projector;
  const std::string text(reinterpret_cast<const char*>(data), size);
  profile::TraceLimits limits;
  limits.max_kept_events = 200000;  // keeps one input's memory small
  try {
    const profile::TraceData trace = profile::parse_trace_text(text, "fuzz_trace.json", limits);
    const profile::MeasuredProfile p = profile::analyze_trace(trace);
    const std::string json = profile::profile_json(p);
    profile::parse_profile(json, "fuzz_profile.json");
    profile::profile_text(p);
  } catch (const InputError& e) {
    fuzz::require_location(e);
  }
  try {  // the profile JSON reader on the raw input as well
    profile::parse_profile(text, "fuzz_profile.json");
  } catch (const InputError& e) {
    fuzz::require_location(e);
  }
  return 0;
}
