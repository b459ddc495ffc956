// derived_from: an entry without its own measurements reuses a sibling's calibration only through
// this key, every borrowed value says where it was measured, and a broken derivation is an error
// naming file, line and key.
#include <gtest/gtest.h>

#include <string>

#include "hardware/hw_test_util.h"
#include "projector/hardware/catalog.h"

namespace projector {
namespace {

using testing::data_dir;
using testing::line_of;
using testing::read_text;
using testing::replaced;
using testing::ScratchDir;

using Cal = AcceleratorSpec::Calibration;

// Every scalar calibration field, for field-by-field comparisons.
std::vector<const Sourced*> fields(const Cal& c) {
  return {&c.attention_fwd_fraction,
          &c.attention_bwd_fraction,
          &c.attention_fa2_fwd_fraction,
          &c.attention_fa2_bwd_fraction,
          &c.hbm_elementwise_fraction,
          &c.hbm_permute_fraction,
          &c.hbm_gather_fraction,
          &c.hbm_optimizer_fraction,
          &c.hbm_loss_fraction,
          &c.kernel_launch_s,
          &c.runtime_context_bytes,
          &c.comm_buffer_bytes_per_group,
          &c.workspace_bytes,
          &c.fragmentation_fraction,
          &c.fragmentation_upper_fraction,
          &c.comm_compute_interference,
          &c.grouped_gemm_fraction,
          &c.kernel_fixed_s,
          &c.grouped_gemm_fraction_fp8,
          &c.gemm_fp8_blockwise_fraction};
}

TEST(Derived, BundledDerivedEntriesCarryTheirSiblingsValuesAndSayWhere) {
  int derived = 0;
  for (const auto& a : load_accelerator_catalog(data_dir())) {
    if (a.derived_from.empty()) {
      EXPECT_TRUE(a.calibration_note().empty()) << a.name;
      continue;
    }
    SCOPED_TRACE(a.name);
    ++derived;
    const AcceleratorSpec base = load_accelerator(a.derived_from, data_dir());
    EXPECT_TRUE(base.derived_from.empty()) << "derive from a measured entry";
    EXPECT_FALSE(a.source_of("derived_from").empty());
    EXPECT_EQ(a.calibration_note(),
              "efficiency borrowed from " + a.derived_from + ", not measured on " + a.name);
    const std::string prefix =
        "borrowed from " + a.derived_from + " (not measured on " + a.name + "): ";
    const auto mine = fields(a.calibration);
    const auto theirs = fields(base.calibration);
    for (std::size_t i = 0; i < mine.size(); ++i) {
      EXPECT_DOUBLE_EQ(mine[i]->value, theirs[i]->value) << i;
      if (!theirs[i]->source.empty()) {
        EXPECT_EQ(mine[i]->source, prefix + theirs[i]->source);
      }
    }
    for (Dtype d : kAllDtypes) {
      const int i = static_cast<int>(d);
      if (a.peak_tflops[i] <= 0.0) {
        EXPECT_EQ(a.calibration.gemm_peak_fraction[i], 0.0);
        continue;
      }
      EXPECT_DOUBLE_EQ(a.calibration.gemm_peak_fraction[i], base.calibration.gemm_peak_fraction[i])
          << to_string(d);
      EXPECT_EQ(a.calibration.gemm_peak_fraction_source[i].rfind(prefix, 0), 0u) << to_string(d);
    }
  }
  EXPECT_EQ(derived, 7);  // gb300, b300, h20, rubin, mi300a, mi455x, tpu7x
}

// Entries that do not derive never present a borrowed value as their own.
TEST(Derived, OwnCalibrationsHaveNoBorrowedSources) {
  for (const auto& a : load_accelerator_catalog(data_dir())) {
    if (!a.derived_from.empty()) continue;
    for (const Sourced* s : fields(a.calibration)) {
      EXPECT_EQ(s->source.find("borrowed from"), std::string::npos) << a.name;
    }
  }
}

// A scratch catalogue: the bundled b200 and a derived part written next to it.
struct Scratch {
  ScratchDir dir;
  std::string write_base() const {
    return dir.write("b200.yaml", read_text(data_dir() + "/hardware/accelerators/b200.yaml"));
  }
};

const std::string& b300_text() {
  static const std::string text = read_text(data_dir() + "/hardware/accelerators/b300.yaml");
  return text;
}

TEST(Derived, OwnKeysOverrideAndTheRestIsBorrowed) {
  Scratch s;
  s.write_base();
  const std::string body =
      b300_text() +
      "calibration:\n  gemm_peak_fraction:\n    fp4: {value: 0.5, source: \"own\"}\n"
      "  kernel_launch_s: {value: 3.0e-06, source: \"own launch\"}\n";
  const AcceleratorSpec a = load_accelerator_file(s.dir.write("b300.yaml", body));
  const int fp4 = static_cast<int>(Dtype::kFp4);
  EXPECT_DOUBLE_EQ(a.calibration.gemm_peak_fraction[fp4], 0.5);
  EXPECT_EQ(a.calibration.gemm_peak_fraction_source[fp4], "own");
  EXPECT_DOUBLE_EQ(a.calibration.kernel_launch_s.value, 3.0e-6);
  EXPECT_EQ(a.calibration.kernel_launch_s.source, "own launch");
  const int bf16 = static_cast<int>(Dtype::kBf16);
  const AcceleratorSpec b200 = load_accelerator("b200", PROJECTOR_DEFAULT_DATA_DIR);
  EXPECT_DOUBLE_EQ(a.calibration.gemm_peak_fraction[bf16],
                   b200.calibration.gemm_peak_fraction[bf16]);
  EXPECT_EQ(a.calibration.gemm_peak_fraction_source[bf16].rfind("borrowed from b200", 0), 0u);
}

void expect_error(const std::string& body, const std::string& key, const std::string& at_line,
                  const std::string& message_part, bool with_base = true) {
  Scratch s;
  if (with_base) s.write_base();
  const std::string path = s.dir.write("b300.yaml", body);
  try {
    load_accelerator_file(path);
    ADD_FAILURE() << "expected InputError for " << key;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path) << e.what();
    EXPECT_EQ(e.key(), key) << e.what();
    EXPECT_EQ(e.where().line, line_of(body, at_line)) << e.what();
    EXPECT_NE(e.message().find(message_part), std::string::npos) << e.what();
  }
}

TEST(Derived, MissingBaseIsAnError) {
  expect_error(b300_text(), "derived_from", "derived_from:", "no accelerator file 'b200.yaml'",
               false);
}

TEST(Derived, SelfDerivationIsACycle) {
  expect_error(replaced(b300_text(), "derived_from: {value: b200", "derived_from: {value: b300"),
               "derived_from", "derived_from:", "derivation cycle");
}

TEST(Derived, ADtypeTheBaseCannotCoverMustBeGiven) {
  // A part with an fp64-style extra dtype is fine, but a model dtype the base lacks is not:
  // give the b300 copy a derived_from on h100_sxm (no fp4 fraction) while it keeps its fp4 peak.
  Scratch s;
  s.dir.write("h100_sxm.yaml", read_text(data_dir() + "/hardware/accelerators/h100_sxm.yaml"));
  const std::string body =
      replaced(b300_text(), "derived_from: {value: b200", "derived_from: {value: h100_sxm");
  const std::string path = s.dir.write("b300.yaml", body);
  try {
    load_accelerator_file(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    // b300 has mxfp8 and fp4 peaks; Hopper has fractions for neither.
    EXPECT_EQ(e.key().rfind("calibration.gemm_peak_fraction.", 0), 0u) << e.what();
    EXPECT_NE(e.message().find("h100_sxm"), std::string::npos) << e.what();
  }
}

TEST(Derived, WithoutDerivedFromTheCalibrationIsRequired) {
  const std::string no_derivation =
      replaced(b300_text(),
               b300_text().substr(b300_text().find("derived_from:"),
                                  b300_text().find('\n', b300_text().find("derived_from:")) -
                                      b300_text().find("derived_from:") + 1),
               "");
  Scratch s;
  try {
    load_accelerator_file(s.dir.write("b300.yaml", no_derivation));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "calibration") << e.what();
  }
}

}  // namespace
}  // namespace projector
