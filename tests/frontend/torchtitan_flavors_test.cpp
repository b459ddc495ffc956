// The transcribed torchtitan flavor table (data/frameworks/torchtitan/flavors.yaml) against a
// torchtitan checkout's own source, when one is present: BACKEND_PATH, else
// PRIMUS_PATH/third_party/torchtitan (the environment variables Primus documents). Skipped
// otherwise. A drifted transcription fails here rather than mis-sizing a cluster.
//
// The reader itself is tested on a synthetic checkout written by the test (always run).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "frontend/torchtitan/flavors.h"
#include "frontend/torchtitan/python_source.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

using frontend_detail::FlavorCatalog;
using frontend_detail::FlavorModel;

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;

std::string checkout_from_environment() {
  for (const char* var : {"BACKEND_PATH", "PRIMUS_PATH"}) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') continue;
    std::string path = v;
    if (std::string(var) == "PRIMUS_PATH") path += "/third_party/torchtitan";
    const std::string pkg = frontend_detail::torchtitan_package_dir(path);
    if (!pkg.empty()) return pkg;
  }
  return "";
}

// Two values agree when they are the same literal, numbers compared numerically.
bool same(const ConfigValue& a, const ConfigValue& b) {
  auto numeric = [](const ConfigValue& v, double& out) {
    if (v.kind == ConfigValue::Kind::kInt)
      out = static_cast<double>(v.i);
    else if (v.kind == ConfigValue::Kind::kFloat)
      out = v.f;
    else
      return false;
    return true;
  };
  double x = 0.0, y = 0.0;
  if (numeric(a, x) && numeric(b, y)) return x == y;
  if (a.is_null() || b.is_null()) return a.is_null() && b.is_null();
  if (a.kind != b.kind) return false;
  if (a.kind == ConfigValue::Kind::kBool) return a.b == b.b;
  return a.to_text() == b.to_text();
}

// Every key the transcription resolves (class defaults, the flavor's arguments, moe_args) equals
// the checkout's resolved value.
void expect_same_flavors(const FlavorCatalog& table, const FlavorCatalog& checkout) {
  for (const FlavorModel& tm : table.models) {
    const FlavorModel* cm = checkout.find(tm.name);
    ASSERT_NE(cm, nullptr) << tm.name << " missing from " << checkout.origin;
    for (const auto& [flavor, stated] : tm.flavors) {
      const ConfigValue* cs = cm->flavor(flavor);
      ASSERT_NE(cs, nullptr) << tm.name << " " << flavor << " missing from " << checkout.origin;
      const ConfigValue want = frontend_detail::resolve_flavor(table, tm, stated);
      const ConfigValue got = frontend_detail::resolve_flavor(checkout, *cm, *cs);
      for (const auto& [key, value] : want.entries) {
        const ConfigValue* other = got.find(key);
        if (key == "moe_args") {
          ASSERT_TRUE(other != nullptr && other->is_map()) << tm.name << " " << flavor;
          for (const auto& [mk, mv] : value.entries) {
            const ConfigValue* o = other->find(mk);
            EXPECT_TRUE(o != nullptr && same(mv, *o))
                << tm.name << " " << flavor << " moe_args." << mk << ": transcribed "
                << mv.to_text() << ", checkout " << (o ? o->to_text() : "(absent)");
          }
          continue;
        }
        EXPECT_TRUE(other != nullptr && same(value, *other))
            << tm.name << " " << flavor << " " << key << ": transcribed " << value.to_text()
            << ", checkout " << (other ? other->to_text() : "(absent)") << " (" << cm->table_source
            << ")";
      }
    }
  }
}

TEST(TorchtitanFlavors, TranscriptionMatchesInstalledCheckout) {
  const std::string pkg = checkout_from_environment();
  if (pkg.empty()) GTEST_SKIP() << "no torchtitan checkout (BACKEND_PATH / PRIMUS_PATH)";
  const FlavorCatalog table = frontend_detail::load_transcribed_flavors(kData);
  std::vector<std::string> names;
  for (const FlavorModel& m : table.models) names.push_back(m.name);
  expect_same_flavors(table, frontend_detail::read_checkout_flavors(pkg, names));
}

// A synthetic checkout in torchtitan's layout: the reader finds the table the train spec
// registers, the args class in model/args.py, field(default_factory=...) defaults, products,
// nested MoEArgs calls, and the MoEArgs defaults elsewhere under models/.
TEST(TorchtitanFlavors, ReadsACheckoutsSource) {
  testing::TempDir dir;
  namespace fs = std::filesystem;
  const fs::path models = fs::path(dir.path()) / "torchtitan" / "models";
  fs::create_directories(models / "toy" / "model");
  fs::create_directories(models / "moe");
  std::ofstream(models / "moe" / "moe.py") << "from dataclasses import dataclass\n\n"
                                              "@dataclass\nclass MoEArgs:\n"
                                              "    num_experts: int = 8\n"
                                              "    top_k: int = 1  # comment\n\n"
                                              "class Other:\n    pass\n";
  std::ofstream(models / "toy" / "model" / "args.py")
      << "@dataclass\nclass ToyArgs(BaseModelArgs):\n    dim: int = 4096\n"
         "    max_seq_len: int = 4096 * 4\n    ratio: float | None = None\n"
         "    moe_args: MoEArgs = field(default_factory=MoEArgs)\n"
         "    names: list[str] = field(default_factory=lambda: [\"a\"])\n";
  std::ofstream(models / "toy" / "__init__.py")
      << "from .model.args import ToyArgs\n\ntoy_args = {\n"
         "    \"small\": ToyArgs(dim=256, ratio=1.3),  # trailing\n"
         "    \"moe\": ToyArgs(\n        dim=1_024,\n        moe_args=MoEArgs(num_experts=16, "
         "top_k=2),\n"
         "    ),\n}\n\n"
         "def get_train_spec():\n    return TrainSpec(model_args=toy_args, x=1)\n";
  const std::string pkg = frontend_detail::torchtitan_package_dir(dir.path());
  ASSERT_EQ(pkg, (fs::path(dir.path()) / "torchtitan").string());
  const FlavorCatalog c = frontend_detail::read_checkout_flavors(pkg, {"toy", "absent"});
  ASSERT_EQ(c.models.size(), 1u);
  const FlavorModel& m = c.models[0];
  EXPECT_EQ(m.args_class, "ToyArgs");
  EXPECT_EQ(m.flavor_names(), (std::vector<std::string>{"small", "moe"}));
  const ConfigValue small = frontend_detail::resolve_flavor(c, m, *m.flavor("small"));
  EXPECT_EQ(small.find("dim")->i, 256);
  EXPECT_EQ(small.find("max_seq_len")->i, 16384);
  EXPECT_DOUBLE_EQ(small.find("ratio")->f, 1.3);
  EXPECT_EQ(small.find("moe_args")->find("num_experts")->i, 8);
  const ConfigValue moe = frontend_detail::resolve_flavor(c, m, *m.flavor("moe"));
  EXPECT_EQ(moe.find("dim")->i, 1024);
  EXPECT_TRUE(moe.find("ratio")->is_null());
  EXPECT_EQ(moe.find("moe_args")->find("num_experts")->i, 16);
  EXPECT_EQ(moe.find("moe_args")->find("top_k")->i, 2);
  // Values keep their file and line.
  EXPECT_EQ(m.flavor("small")->find("dim")->where.line, 4);
  EXPECT_NE(m.flavor("small")->find("dim")->where.file.find("__init__.py"), std::string::npos);
}

// The transcription is self-consistent with its own re-check (the comparison is not vacuous: a
// changed value is caught).
TEST(TorchtitanFlavors, ComparisonCatchesADrift) {
  const FlavorCatalog table = frontend_detail::load_transcribed_flavors(kData);
  FlavorCatalog drifted = table;
  for (auto& [flavor, args] : drifted.models[0].flavors) {
    if (args.find("n_layers") != nullptr) args.set("n_layers", ConfigValue::make_int(31));
  }
  int failures = 0;
  {
    ::testing::TestPartResultArray results;
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    expect_same_flavors(table, drifted);
    failures = results.size();
  }
  EXPECT_GT(failures, 0);
  expect_same_flavors(table, table);
}

TEST(TorchtitanFlavors, PythonExpressions) {
  std::size_t pos = 0;
  const ConfigValue v = frontend_detail::parse_python_expression(
      "{'a': [1, 2.5, -3], \"b\": (1 + 2 * 3), 'c': None, 'd': True, 'e': f(x=1, y='z')}", pos,
      "f.py", 1);
  ASSERT_TRUE(v.is_map());
  EXPECT_EQ(v.find("a")->items.size(), 3u);
  EXPECT_EQ(v.find("a")->items[2].i, -3);
  EXPECT_EQ(v.find("b")->i, 7);
  EXPECT_TRUE(v.find("c")->is_null());
  EXPECT_TRUE(v.find("d")->b);
  EXPECT_EQ(v.find("e")->find("y")->s, "z");
  pos = 0;
  EXPECT_THROW(frontend_detail::parse_python_expression("{'a': ", pos, "f.py", 1), InputError);
}

}  // namespace
}  // namespace projector
