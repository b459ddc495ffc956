// libFuzzer target: the validation runs-file reader, the mapper and the projection of each mapped
// run (`projector validate`). Validation reports an exception inside one entry against that entry;
// here an entry that failed with anything but bad input is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "projector/hardware/catalog.h"
#include "projector/validate/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace projector;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<RunEntry> runs = parse_runs(text, "fuzz_runs.yaml");
    const ValidationReport report = validate(runs, make_default_project_fn(), default_data_dir());
    for (const RunResult& r : report.runs) {
      if (r.reason.rfind("internal error", 0) == 0) fuzz::finding(r.id + ": " + r.reason);
      for (const MetricComparison& c : r.metrics) {
        fuzz::require_finite(c.predicted, "a predicted metric");
        fuzz::require_finite(c.measured, "a measured metric");
      }
    }
  } catch (const InputError& e) {
    fuzz::require_location(e);
  }
  return 0;
}
