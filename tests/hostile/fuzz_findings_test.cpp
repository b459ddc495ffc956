// Inputs the libFuzzer targets (fuzz/) found, minimised by hand, each a regression test of the
// library call that failed.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "projector/frontend/config_value.h"
#include "projector/profile/profile.h"
#include "projector/profile/trace.h"
#include "projector/util/error.h"

namespace {

using namespace projector;

// trace_fuzzer: a JSON number beyond int64 in an event field was converted to int64 (undefined
// behaviour, UBSan "outside the range of representable values"). It now saturates.
TEST(FuzzFindings, TraceNumbersBeyondInt64Saturate) {
  const std::string trace =
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,)"
      R"( "ts": 6.49e20, "dur": 1e300, "args": {"correlation": 9.3e18, "device": -9.3e18,)"
      R"( "stream": 18446744073709551615}}]})";
  const profile::TraceData t = profile::parse_trace_text(trace, "t.json");
  ASSERT_EQ(t.gpu.size(), 1u);
  EXPECT_EQ(t.gpu[0].correlation, std::numeric_limits<std::int64_t>::max());
}

// trace_fuzzer: a profile JSON with a number beyond double escaped as nlohmann's out_of_range
// (an uncaught exception, exit 3); it is bad input.
TEST(FuzzFindings, ProfileJsonNumberBeyondDoubleIsBadInput) {
  try {
    profile::parse_profile(R"({"kind": "projector-measured-profile", "x": 1.0e+309})", "p.json");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "p.json");
    EXPECT_NE(std::string(e.what()).find("not a readable JSON document"), std::string::npos)
        << e.what();
  }
}

// torchrec_fuzzer: a ',' outside a flow collection made yaml-cpp 0.7's LoadAll return empty
// documents at the same place for ever (a hang). It is malformed YAML, named at its line; a
// second real document is still refused as one.
TEST(FuzzFindings, StrayFlowCommaIsMalformedYaml) {
  const std::pair<const char*, int> cases[] = {
      {",", 1}, {"a: [1, 2],\n", 1}, {"a: 1\n---\n, b", 3}};
  for (const auto& [text, line] : cases) {
    try {
      parse_yaml_text(text, "c.yaml", fixed_environment({}));
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, "c.yaml");
      EXPECT_EQ(e.where().line, line) << text;
      EXPECT_NE(std::string(e.what()).find("malformed YAML"), std::string::npos) << e.what();
    }
  }
  try {
    parse_yaml_text("a: 1\n---\nb: 2\n", "two.yaml", fixed_environment({}));
    ADD_FAILURE() << "two documents accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 3);
    EXPECT_NE(std::string(e.what()).find("2 YAML documents"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_yaml_text("a: [1, 2]\n", "ok.yaml", fixed_environment({})).entries.size(), 1u);
}

// YAML scalars: the hand-written PyYAML matchers agree with the resolver's regular expressions
// on the edge cases (the typing the fuzzers lean on).
TEST(FuzzFindings, Yaml11ScalarEdgeCases) {
  struct Case {
    const char* text;
    ConfigValue::Kind kind;
  };
  const Case cases[] = {
      {"0b", ConfigValue::Kind::kString},
      {"0b1_0", ConfigValue::Kind::kInt},
      {"0x", ConfigValue::Kind::kString},
      {"0_", ConfigValue::Kind::kInt},
      {"08", ConfigValue::Kind::kString},
      {"1:75", ConfigValue::Kind::kString},
      {"1:5:59", ConfigValue::Kind::kInt},
      {"00:30", ConfigValue::Kind::kString},
      {"1e5", ConfigValue::Kind::kString},
      {"1.e5", ConfigValue::Kind::kString},
      {"1.e+5", ConfigValue::Kind::kFloat},
      {"-.5", ConfigValue::Kind::kString},
      {".5", ConfigValue::Kind::kFloat},
      {"+.inf", ConfigValue::Kind::kFloat},
      {"-.nan", ConfigValue::Kind::kString},
      {"1:30.5", ConfigValue::Kind::kFloat},
      {"1:30.5e+1", ConfigValue::Kind::kString},
      {"9223372036854775808", ConfigValue::Kind::kFloat},
      {"-9223372036854775808", ConfigValue::Kind::kInt},
      {"+", ConfigValue::Kind::kString},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(resolve_plain_scalar(c.text, {}).kind, c.kind) << c.text;
  }
  EXPECT_EQ(resolve_plain_scalar("-9223372036854775808", {}).i,
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(resolve_plain_scalar("1:5:59", {}).i, 3600 + 5 * 60 + 59);
  EXPECT_EQ(resolve_plain_scalar("0b1_0", {}).i, 2);
  EXPECT_DOUBLE_EQ(resolve_plain_scalar("99999999999999999999", {}).f, 1e20);
  EXPECT_TRUE(is_integer_literal(std::string(30000, '9')));
}

}  // namespace
