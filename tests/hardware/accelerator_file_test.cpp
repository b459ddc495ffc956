// Accelerator-file validation: a broken copy of a bundled file fails with file, line and key.
#include <gtest/gtest.h>

#include <algorithm>

#include "hardware/hw_test_util.h"
#include "projector/hardware/catalog.h"

namespace projector {
namespace {

using testing::data_dir;
using testing::line_of;
using testing::read_text;
using testing::replaced;
using testing::ScratchDir;

const std::string& mi300x_text() {
  static const std::string text = read_text(data_dir() + "/hardware/accelerators/mi300x.yaml");
  return text;
}

struct BadCase {
  std::string from;     // text in mi300x.yaml
  std::string to;       // its replacement
  std::string key;      // the key the error must name
  std::string at_line;  // text on the line the error must point at (in the broken file)
};

void expect_error(const BadCase& c) {
  ScratchDir dir;
  const std::string body = replaced(mi300x_text(), c.from, c.to);
  const std::string path = dir.write("mi300x.yaml", body);
  try {
    load_accelerator_file(path);
    ADD_FAILURE() << "expected InputError for " << c.key;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path);
    EXPECT_EQ(e.key(), c.key) << e.what();
    EXPECT_EQ(e.where().line, line_of(body, c.at_line)) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(AcceleratorFile, UnchangedCopyLoads) {
  ScratchDir dir;
  const std::string path = dir.write("mi300x.yaml", mi300x_text());
  const AcceleratorSpec a = load_accelerator_file(path);
  EXPECT_EQ(a.name, "mi300x");
  EXPECT_DOUBLE_EQ(a.peak_tflops[static_cast<int>(Dtype::kBf16)], 1307.4);
}

TEST(AcceleratorFile, MalformedNumberNamesKeyAndLine) {
  expect_error({"  bf16: 1307.4", "  bf16: lots", "peak_tflops.bf16", "  bf16: lots"});
  expect_error({"compute_units: {value: 304", "compute_units: {value: 30x4", "compute_units",
                "compute_units:"});
}

TEST(AcceleratorFile, MissingRequiredFieldIsAnError) {
  // Drop the hbm_bandwidth line: the error names the key and points at the mapping holding it.
  const std::string line = mi300x_text().substr(mi300x_text().find("hbm_bandwidth:"));
  const std::string whole_line = line.substr(0, line.find('\n') + 1);
  ScratchDir dir;
  const std::string path = dir.write("mi300x.yaml", replaced(mi300x_text(), whole_line, ""));
  try {
    load_accelerator_file(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "hbm_bandwidth");
    EXPECT_EQ(e.where().file, path);
    EXPECT_GT(e.where().line, 0);
  }
}

TEST(AcceleratorFile, MissingSourceIsAnError) {
  expect_error(
      {"dies: {value: 8, source: \"R1/O5: 8 XCDs\"}", "dies: {value: 8}", "dies.source", "dies:"});
}

TEST(AcceleratorFile, UnknownKeysAndUnitsAreErrors) {
  expect_error({"default_network: mi300x_ib400", "default_network: mi300x_ib400\nhbm_size: 3",
                "hbm_size", "hbm_size:"});
  expect_error({"unit: TB/s", "unit: TiB/s", "hbm_bandwidth.unit", "hbm_bandwidth:"});
}

TEST(AcceleratorFile, OutOfRangeFractionsAreErrors) {
  expect_error({"  hbm_permute_fraction: {value: 0.057", "  hbm_permute_fraction: {value: 5.7",
                "calibration.hbm_permute_fraction", "hbm_permute_fraction:"});
  // The first "    bf16: {value: " is the fitted gemm_peak_fraction line: 0.x becomes 70.x.
  expect_error({"    bf16: {value: ", "    bf16: {value: 7", "calibration.gemm_peak_fraction.bf16",
                "    bf16: {value: 7"});
}

TEST(AcceleratorFile, FractionForAnUnsupportedDtypeIsAnError) {
  expect_error({"    mxfp8: null", "    mxfp8: {value: 0.5, source: \"x\"}",
                "calibration.gemm_peak_fraction.mxfp8", "    mxfp8: {value: 0.5"});
}

TEST(AcceleratorFile, StatusIsRequiredAndShippingOrAnnounced) {
  expect_error({"status: {value: shipping", "status: {value: sampling", "status", "status:"});
  const std::string line = mi300x_text().substr(mi300x_text().find("status:"));
  ScratchDir dir;
  const std::string path =
      dir.write("mi300x.yaml", replaced(mi300x_text(), line.substr(0, line.find('\n') + 1), ""));
  try {
    load_accelerator_file(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "status") << e.what();
  }
}

TEST(AcceleratorFile, TorusKeysOnlyOnATorus) {
  expect_error({"scaleup_domain: {value: 8",
                "torus_dims: {value: 2, source: \"x\"}\nscaleup_domain: {value: 8", "torus_dims",
                "torus_dims:"});
}

// gemm_epilogue: per_tile (mi300x's file) or overlapped; any other word names the key and line;
// a file without it takes per_tile and records that default as the key's source.
TEST(AcceleratorFile, GemmEpilogueIsPerTileOrOverlapped) {
  EXPECT_FALSE(load_accelerator_file(data_dir() + "/hardware/accelerators/mi300x.yaml")
                   .gemm_epilogue_overlapped);
  EXPECT_TRUE(load_accelerator_file(data_dir() + "/hardware/accelerators/gb200.yaml")
                  .gemm_epilogue_overlapped);
  expect_error({"gemm_epilogue: {value: per_tile", "gemm_epilogue: {value: sometimes",
                "gemm_epilogue", "gemm_epilogue:"});
  ScratchDir dir;
  const std::string line = mi300x_text().substr(mi300x_text().find("gemm_epilogue:"));
  const AcceleratorSpec a = load_accelerator_file(
      dir.write("mi300x.yaml", replaced(mi300x_text(), line.substr(0, line.find('\n') + 1), "")));
  EXPECT_FALSE(a.gemm_epilogue_overlapped);
  const auto src = std::find_if(a.sources.begin(), a.sources.end(),
                                [](const auto& f) { return f.field == "gemm_epilogue"; });
  ASSERT_NE(src, a.sources.end());
  EXPECT_EQ(src->source.rfind("default per_tile", 0), 0u) << src->source;
}

TEST(AcceleratorFile, ExtraPeaksAreInformationalAndSourced) {
  ScratchDir dir;
  const AcceleratorSpec a = load_accelerator_file(dir.write(
      "mi300x.yaml", replaced(mi300x_text(), "  int8: {value: 2600",
                              "  fp64: {value: 163.4, source: \"R1\"}\n  int8: {value: 2600")));
  ASSERT_EQ(a.extra_peak_tflops.size(), 2u);
  EXPECT_EQ(a.extra_peak_tflops[0].format, "fp64");
  EXPECT_DOUBLE_EQ(a.extra_peak_tflops[0].tflops, 163.4);
  EXPECT_EQ(a.source_of("peak_tflops.fp64"), "R1");
  expect_error({"  int8: {value: 2600", "  fp5: {value: 1, source: \"x\"}\n  int8: {value: 2600",
                "peak_tflops.fp5", "  fp5:"});
}

TEST(AcceleratorFile, SustainedClockAboveBoostIsAnError) {
  expect_error({"sustained_clock_mhz: {value: 1207", "sustained_clock_mhz: {value: 2500",
                "sustained_clock_mhz", "sustained_clock_mhz:"});
}

// A measured idle power lies below the board power (MI300X: 191 W of 750 W, EN5).
TEST(AcceleratorFile, IdlePowerBelowBoardPower) {
  ScratchDir dir;
  EXPECT_DOUBLE_EQ(load_accelerator_file(dir.write("mi300x.yaml", mi300x_text())).idle_power_w,
                   191.0);
  expect_error(
      {"idle_power_w: {value: 191", "idle_power_w: {value: 750", "idle_power_w", "idle_power_w:"});
}

TEST(AcceleratorFile, DefaultNetworkMustExist) {
  ScratchDir dir;
  const std::string path = dir.write(
      "mi300x.yaml",
      replaced(mi300x_text(), "default_network: mi300x_ib400", "default_network: no_such_net"));
  const AcceleratorSpec a = load_accelerator_file(path);
  try {
    default_network_for(a, data_dir());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "default_network");
    EXPECT_EQ(e.where().file, path);
    EXPECT_NE(e.message().find("no_such_net"), std::string::npos);
  }
}

}  // namespace
}  // namespace projector
