#include <gtest/gtest.h>

#include <cmath>

#include "projector/frontend/config_value.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

using Kind = ConfigValue::Kind;

ConfigValue parse(const std::string& text, const EnvLookup& env = {}) {
  return parse_yaml_text(text, "t.yaml", env);
}

// PyYAML (YAML 1.1) resolution, as Primus sees values.
TEST(YamlScalars, Yaml11Rules) {
  const ConfigValue v = parse(
      "a: 1e-5\nb: 1.0e-5\nc: yes\nd: off\ne: 017\nf: 0x1F\ng: 1_000\nh: .inf\ni: ~\n"
      "j: \"12\"\nk: 'true'\nl: 08\nm: -.inf\nn: .nan\no: 1.5\np: 0b101\nq: 1:30\nr: On\n"
      "s: 1.0e6\n");
  EXPECT_EQ(v.find("a")->kind, Kind::kString);  // no dot: not a YAML 1.1 float
  EXPECT_EQ(v.find("a")->s, "1e-5");
  EXPECT_EQ(v.find("b")->kind, Kind::kFloat);
  EXPECT_DOUBLE_EQ(v.find("b")->f, 1e-5);
  EXPECT_EQ(v.find("c")->kind, Kind::kBool);
  EXPECT_TRUE(v.find("c")->b);
  EXPECT_EQ(v.find("d")->kind, Kind::kBool);
  EXPECT_FALSE(v.find("d")->b);
  EXPECT_EQ(v.find("e")->i, 15);  // octal 17
  EXPECT_EQ(v.find("f")->i, 31);
  EXPECT_EQ(v.find("g")->i, 1000);
  EXPECT_TRUE(std::isinf(v.find("h")->f));
  EXPECT_TRUE(v.find("i")->is_null());
  EXPECT_EQ(v.find("j")->kind, Kind::kString);  // quoted: always a string
  EXPECT_EQ(v.find("k")->kind, Kind::kString);
  EXPECT_EQ(v.find("l")->kind, Kind::kString);  // 08 is neither octal nor decimal in YAML 1.1
  EXPECT_LT(v.find("m")->f, 0.0);
  EXPECT_TRUE(std::isnan(v.find("n")->f));
  EXPECT_DOUBLE_EQ(v.find("o")->f, 1.5);
  EXPECT_EQ(v.find("p")->i, 5);
  EXPECT_EQ(v.find("q")->i, 90);  // sexagesimal 1:30
  EXPECT_TRUE(v.find("r")->b);
  EXPECT_EQ(v.find("s")->kind, Kind::kString);  // exponent without sign: PyYAML keeps a string
}

TEST(YamlScalars, LocationsAreOneBasedKeyLines) {
  const ConfigValue v = parse("a: 1\nnested:\n  b: 2\n");
  EXPECT_EQ(v.find("a")->where.line, 1);
  EXPECT_EQ(v.find("nested")->find("b")->where.line, 3);
  EXPECT_EQ(v.find("nested")->find("b")->where.file, "t.yaml");
}

TEST(YamlEnv, SubstitutesAndRetypes) {
  const EnvLookup env = fixed_environment({{"TP", "4"}, {"FLAG", "true"}, {"NAME", "x"}});
  const ConfigValue v = parse(
      "a: ${TP}\nb: ${PP:2}\nc: ${FLAG}\nd: ${NAME}_${TP}\ne: \"${TP}\"\nf: ${LR:0.5}\n"
      "g: ${EMPTY:}\n",
      env);
  EXPECT_EQ(v.find("a")->kind, Kind::kInt);
  EXPECT_EQ(v.find("a")->i, 4);
  EXPECT_EQ(v.find("b")->i, 2);
  EXPECT_EQ(v.find("c")->kind, Kind::kBool);
  EXPECT_EQ(v.find("d")->s, "x_4");
  EXPECT_EQ(v.find("e")->kind, Kind::kInt);  // substituted results are re-typed (Primus)
  EXPECT_DOUBLE_EQ(v.find("f")->f, 0.5);
  EXPECT_EQ(v.find("g")->kind, Kind::kString);
  EXPECT_EQ(v.find("g")->s, "");
}

TEST(YamlEnv, UnsetWithoutDefaultIsAnErrorNamingFileLineKey) {
  try {
    parse("x: 1\nmodules:\n  tp: ${NOT_SET}\n", fixed_environment({}));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "t.yaml");
    EXPECT_EQ(e.where().line, 3);
    EXPECT_EQ(e.key(), "modules.tp");
    EXPECT_NE(std::string(e.what()).find("NOT_SET"), std::string::npos);
  }
}

TEST(YamlErrors, DuplicateKey) {
  try {
    parse("a: 1\nb:\n  c: 1\n  c: 2\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 4);
    EXPECT_EQ(e.key(), "b.c");
  }
}

TEST(YamlErrors, MalformedReportsLine) {
  try {
    parse("a: [1, 2\nb: 3\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "t.yaml");
    EXPECT_GE(e.where().line, 1);
    EXPECT_NE(e.message().find("malformed YAML"), std::string::npos);
  }
}

TEST(YamlErrors, MissingFile) {
  EXPECT_THROW(parse_yaml_file("/nonexistent/x.yaml", {}), InputError);
}

TEST(YamlMerge, DeepMergeMapsMergeScalarsAndListsReplace) {
  ConfigValue base = parse("a: {x: 1, y: 2}\nl: [1, 2, 3]\ns: 1\n");
  const ConfigValue top = parse("a: {y: 3, z: 4}\nl: [9]\ns: two\n");
  deep_merge(base, top);
  EXPECT_EQ(base.find("a")->find("x")->i, 1);
  EXPECT_EQ(base.find("a")->find("y")->i, 3);
  EXPECT_EQ(base.find("a")->find("z")->i, 4);
  ASSERT_EQ(base.find("l")->items.size(), 1u);
  EXPECT_EQ(base.find("s")->s, "two");
}

TEST(YamlMerge, YamlMergeKey) {
  const ConfigValue v = parse("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 5\n");
  EXPECT_EQ(v.find("d")->find("x")->i, 1);
  EXPECT_EQ(v.find("d")->find("y")->i, 5);
}

TEST(YamlExtends, ChainListOrderAndRelativePaths) {
  testing::TempDir dir;
  dir.write("base/a.yaml", "x: 1\ny: 1\nm: {p: 1, q: 1}\n");
  dir.write("base/b.yaml", "extends: a.yaml\ny: 2\nm: {q: 2}\n");
  dir.write("c.yaml", "z: 3\n");
  const std::string top =
      dir.write("top.yaml", "extends:\n  - base/b.yaml\n  - c.yaml\nz: 4\nm: {r: 3}\n");
  const ConfigValue v = load_yaml_with_extends(top, {});
  EXPECT_EQ(v.find("x")->i, 1);
  EXPECT_EQ(v.find("y")->i, 2);  // b overrides a
  EXPECT_EQ(v.find("z")->i, 4);  // the file itself wins over its parents
  EXPECT_EQ(v.find("m")->find("p")->i, 1);
  EXPECT_EQ(v.find("m")->find("q")->i, 2);
  EXPECT_EQ(v.find("m")->find("r")->i, 3);
  EXPECT_EQ(v.find("extends"), nullptr);
  EXPECT_EQ(v.find("y")->where.file, dir.path() + "/base/b.yaml");
}

TEST(YamlExtends, CycleAndMissingParentAreErrors) {
  testing::TempDir dir;
  dir.write("a.yaml", "extends: b.yaml\n");
  const std::string b = dir.write("b.yaml", "extends: a.yaml\n");
  EXPECT_THROW(load_yaml_with_extends(b, {}), InputError);
  const std::string m = dir.write("m.yaml", "x: 1\nextends: nothere.yaml\n");
  try {
    load_yaml_with_extends(m, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.key(), "extends");
  }
}

}  // namespace
}  // namespace projector
