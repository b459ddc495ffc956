// A runs file that is not UTF-8 is refused at its line (issue 30), before YAML or the report see
// the bytes: the CLI exits 2 with file:line and Python raises projector.InputError.
#include <gtest/gtest.h>

#include "projector/util/error.h"
#include "projector/validate/validate.h"

namespace projector {
namespace {

TEST(RunsUtf8, InvalidBytesAreRefusedAtTheirLine) {
  const std::string text =
      "# runs\n- id: ok\n  confidence: high\n- id: caf\xE9\n  confidence: high\n";
  try {
    parse_runs(text, "runs.yaml");
    FAIL() << "a runs file with a Latin-1 byte was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "runs.yaml");
    EXPECT_EQ(e.where().line, 4);
    EXPECT_NE(e.message().find("caf\\xE9"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("not valid UTF-8"), std::string::npos) << e.message();
  }
  // The last line, without a newline, and an overlong encoding of '/' are found too.
  EXPECT_THROW(parse_runs("- id: a\n- id: \xC0\xAF", "runs.yaml"), InputError);
  // Well-formed UTF-8 (a name with an accent) is not refused for that.
  EXPECT_NO_THROW(parse_runs("- id: caf\xC3\xA9\n  confidence: high\n", "runs.yaml"));
}

}  // namespace
}  // namespace projector
