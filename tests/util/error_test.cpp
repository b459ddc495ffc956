// One-line input errors (util/error.h): "file:line:col: key: message", a flag named once.
#include "projector/util/error.h"

#include <gtest/gtest.h>

#include <string>

namespace projector {
namespace {

TEST(InputError, NamesFileLineKeyAndMessage) {
  EXPECT_STREQ(InputError({"a.yaml", 3, 5}, "num_layers", "must be positive").what(),
               "a.yaml:3:5: num_layers: must be positive");
  EXPECT_STREQ(InputError({}, "tp", "bad").what(), "tp: bad");
  // A command-line flag is the place and the key: "--grid: ...", not "--grid: --grid: ...".
  EXPECT_STREQ(InputError({"--grid", 0, 0}, "--grid", "unknown axis 'x'").what(),
               "--grid: unknown axis 'x'");
  // A file that happens to share the key's text but has a line keeps both.
  EXPECT_STREQ(InputError({"k", 2, 0}, "k", "m").what(), "k:2: k: m");
  // Newlines never split the line.
  EXPECT_STREQ(InputError({}, "", "a\nb").what(), "a b");
}

}  // namespace
}  // namespace projector
