// compare_accelerators() on every pair of the catalogue: the rows exist for both sides, ratios
// are the second value over the first, and estimates are marked.
#include "projector/hardware/compare.h"

#include <gtest/gtest.h>

#include <string>

#include "hardware/hw_test_util.h"
#include "projector/hardware/catalog.h"

namespace projector {
namespace {

using testing::data_dir;

const ComparedFact* find(const std::vector<ComparedFact>& rows, const std::string& field) {
  for (const auto& r : rows) {
    if (r.field == field) return &r;
  }
  return nullptr;
}

TEST(Compare, EveryPairOfTheCatalogue) {
  const auto all = load_accelerator_catalog(data_dir());
  int pairs = 0;
  for (const auto& a : all) {
    for (const auto& b : all) {
      SCOPED_TRACE(a.name + " vs " + b.name);
      const auto rows = compare_accelerators(a, b);
      ++pairs;
      for (Dtype d : kAllDtypes) {
        const ComparedFact* r = find(rows, "peak_tflops." + std::string(to_string(d)));
        ASSERT_NE(r, nullptr);
        const double pa = a.peak_tflops[static_cast<int>(d)];
        const double pb = b.peak_tflops[static_cast<int>(d)];
        if (pa > 0.0 && pb > 0.0) {
          EXPECT_DOUBLE_EQ(r->ratio, pb / pa);
        } else {
          EXPECT_EQ(r->ratio, 0.0);
        }
        if (pa <= 0.0) {
          EXPECT_EQ(r->a, "-");
        }
      }
      const ComparedFact* hbm = find(rows, "hbm_capacity");
      ASSERT_NE(hbm, nullptr);
      EXPECT_DOUBLE_EQ(hbm->ratio, b.hbm_bytes / a.hbm_bytes);
      const ComparedFact* eff = find(rows, "derived_from");
      ASSERT_NE(eff, nullptr);
      EXPECT_EQ(eff->a, calibration_origin(a));
      EXPECT_EQ(eff->b, calibration_origin(b));
    }
  }
  EXPECT_EQ(pairs, 24 * 24);
}

TEST(Compare, EstimatesAreMarkedAndExtraFormatsAreUnioned) {
  const AcceleratorSpec rubin = load_accelerator("rubin", data_dir());
  const AcceleratorSpec mi300a = load_accelerator("mi300a", data_dir());
  const auto rows = compare_accelerators(mi300a, rubin);
  EXPECT_EQ(find(rows, "peak_tflops.bf16")->b, "~8333");  // estimate: fp8 / 2
  EXPECT_EQ(find(rows, "peak_tflops.bf16")->a, "980.6");
  EXPECT_EQ(find(rows, "peak_tflops.fp8")->b, "16667");       // NVIDIA's rack figure / 72
  const ComparedFact* fp64 = find(rows, "peak_tflops.fp64");  // MI300A only
  ASSERT_NE(fp64, nullptr);
  EXPECT_EQ(fp64->b, "-");
  EXPECT_NE(find(rows, "peak_tflops.nvfp4"), nullptr);  // Rubin only
  EXPECT_EQ(find(rows, "status")->b, "announced");
  EXPECT_EQ(find(rows, "derived_from")->b, "borrowed from gb200");
}

}  // namespace
}  // namespace projector
