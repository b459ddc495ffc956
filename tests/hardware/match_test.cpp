// Name, alias and free-text look-ups, including every accelerator string of the 64 published
// validation runs (data/validation/calibration_runs.yaml).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>

#include "hardware/hw_test_util.h"
#include "projector/hardware/catalog.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

using testing::data_dir;

// One index for the whole file: building it reads every catalogue file.
const AcceleratorIndex& index() {
  static const AcceleratorIndex idx(data_dir());
  return idx;
}

std::string match(const std::string& text) {
  return index().match(text).value_or("<none>");
}

TEST(Match, AliasesAreCaseAndSeparatorInsensitive) {
  EXPECT_EQ(match("gfx942"), "mi300x");
  EXPECT_EQ(match("GFX950"), "mi355x");
  EXPECT_EQ(match("Mi300X"), "mi300x");
  EXPECT_EQ(match("mi325x"), "mi325x");
  EXPECT_EQ(match("h100"), "h100_sxm");
  EXPECT_EQ(match("H100-SXM"), "h100_sxm");
  EXPECT_EQ(match("sm90"), "h100_sxm");
  EXPECT_EQ(match("H100 80GB"), "h100_sxm");
  EXPECT_EQ(match("a100"), "a100_80gb");  // a bare A100 is the 80 GB SXM part
  EXPECT_EQ(match("A100 40GB"), "a100_40gb");
  EXPECT_EQ(match("A100-SXM4-40GB"), "a100_40gb");
  EXPECT_EQ(match("B200"), "b200");  // not gb200: words must match whole
  EXPECT_EQ(match("GB200 NVL72"), "gb200");
  EXPECT_EQ(match("Trillium"), "tpu_v6e");
  EXPECT_EQ(match("v5litepod"), "tpu_v5e");
  EXPECT_EQ(match("tpu_v5p"), "tpu_v5p");
}

TEST(Match, FreeTextPicksTheLongestMatchingName) {
  EXPECT_EQ(match("NVIDIA A100 SXM4 80GB"), "a100_80gb");
  EXPECT_EQ(match("AMD Instinct MI300X"), "mi300x");
  EXPECT_EQ(match("8x NVIDIA H200 SXM (Azure ND H200 v5)"), "h200");
  EXPECT_EQ(match("NVIDIA A100-SXM4-40GB on DGX"), "a100_40gb");
}

TEST(Match, FreeFunctionAgreesWithIndex) {
  EXPECT_EQ(match_accelerator_name("AMD Instinct MI355X (288GB HBM3E)", data_dir()), "mi355x");
  EXPECT_EQ(index().load("Google TPU v4").name, "tpu_v4");
}

TEST(Match, AmbiguousOrUnknownTextMatchesNothing) {
  EXPECT_FALSE(match_accelerator_name("MI300X or H100", data_dir()).has_value());
  EXPECT_FALSE(match_accelerator_name("quantum annealer", data_dir()).has_value());
  EXPECT_FALSE(match_accelerator_name("", data_dir()).has_value());
}

// The 12 distinct `hardware.accelerator` strings of the 64 validation runs and their counts
// (3+3+4+3+1+10+16+3+1+11+4+5 = 64), each with the entry it must map to.
TEST(Match, AllValidationAcceleratorStringsMap) {
  struct Case {
    const char* text;
    const char* expected;
    int runs;
  };
  const Case cases[] = {
      {"AMD Instinct MI300X (192GB HBM3)", "mi300x", 3},
      {"AMD Instinct MI325X (256GB HBM3E)", "mi325x", 3},
      {"AMD Instinct MI355X (288GB HBM3E)", "mi355x", 4},
      {"Google TPU v4", "tpu_v4", 3},
      {"NVIDIA A100 (80GB assumed, Selene)", "a100_80gb", 1},
      {"NVIDIA A100 (memory size not stated)", "a100_80gb", 10},
      {"NVIDIA A100 SXM4 80GB", "a100_80gb", 16},
      {"NVIDIA H100 80GB (inferred from script name train_llama3_8b_h100_fp8.sh)", "h100_sxm", 3},
      {"NVIDIA H100 80GB HBM3", "h100_sxm", 1},
      {"NVIDIA H100 SXM 80GB", "h100_sxm", 11},
      {"NVIDIA H100 SXM 80GB (DGX-H100)", "h100_sxm", 4},
      {"NVIDIA H100 SXM 96GB HBM2e, 500W power limit (Grand Teton)", "h100_sxm_96gb_500w", 5},
  };
  int total = 0;
  for (const auto& c : cases) {
    EXPECT_EQ(match(c.text), c.expected) << c.text;
    total += c.runs;
  }
  EXPECT_EQ(total, 64);
}

// The same check over the project's copy of the validation file, entry by entry.
TEST(Match, EveryRunInTheValidationFileMaps) {
  const std::string path = data_dir() + "/validation/calibration_runs.yaml";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const YAML::Node runs = YAML::LoadFile(path);
  const YAML::Node list = runs.IsSequence() ? runs : runs["runs"];
  ASSERT_TRUE(list.IsSequence());
  const std::map<std::string, std::string> by_vendor_word = {
      {"MI300X", "mi300x"}, {"MI325X", "mi325x"},  {"MI355X", "mi355x"},
      {"TPU v4", "tpu_v4"}, {"A100", "a100_80gb"}, {"H100", "h100_sxm"}};
  int mapped = 0;
  for (const auto& run : list) {
    const std::string text = run["hardware"]["accelerator"].as<std::string>();
    std::string expected;
    for (const auto& [word, name] : by_vendor_word) {
      if (text.find(word) != std::string::npos) expected = name;
    }
    // The power-capped 96 GB H100 has its own entry.
    if (text.find("H100") != std::string::npos && text.find("96GB") != std::string::npos) {
      expected = "h100_sxm_96gb_500w";
    }
    ASSERT_FALSE(expected.empty()) << "new accelerator string, extend this test: " << text;
    EXPECT_EQ(match(text), expected) << text;
    ++mapped;
  }
  EXPECT_EQ(mapped, 64);
}

TEST(Match, NewerPartsMapFromTheirUsualNames) {
  EXPECT_EQ(match("NVIDIA GB300"), "gb300");
  EXPECT_EQ(match("GB300 NVL72 rack"), "gb300");
  EXPECT_EQ(match("NVIDIA B300"), "b300");  // not gb300: words match whole
  EXPECT_EQ(match("HGX B300 with 8x ConnectX-8"), "b300");
  EXPECT_EQ(match("NVIDIA Blackwell Ultra GPU (B300-SXM-270GB)"), "b300");
  EXPECT_EQ(match("NVIDIA H20"), "h20");  // not h200
  EXPECT_EQ(match("8x NVIDIA H200 SXM"), "h200");
  EXPECT_EQ(match("Vera Rubin NVL72"), "rubin");
  EXPECT_EQ(match("AMD Instinct MI300A"), "mi300a");
  EXPECT_EQ(match("AMD Instinct MI300X"), "mi300x");
  EXPECT_EQ(match("AMD Helios (MI455X)"), "mi455x");
  EXPECT_EQ(match("Google TPU7x (Ironwood)"), "tpu7x");
  EXPECT_EQ(match("Ironwood"), "tpu7x");
  EXPECT_EQ(match("Google TPU v6e (Trillium)"), "tpu_v6e");
  EXPECT_EQ(match("v5p-512"), "tpu_v5p");
  // A bare NVL72 names a rack, not a part: GB200, GB300 and Rubin all come in one.
  EXPECT_FALSE(index().match("NVL72").has_value());
}

TEST(Match, SeparatorsInsideAModelNameAreIgnored) {
  EXPECT_EQ(match("Google TPU 7x"), "tpu7x");
  EXPECT_EQ(match("AMD MI 355X"), "mi355x");
  EXPECT_EQ(match("NVIDIA GB 300"), "gb300");
  EXPECT_EQ(match("TPUv5p"), "tpu_v5p");
  // "GB" right after a number is a unit: this is an H100, not a GB300.
  EXPECT_EQ(match("NVIDIA H100 96 GB 300 W"), "h100_sxm");
}

// Every `hardware.accelerator` string of every validation file (calibration_runs.yaml,
// calibration_runs_moe_tpu.yaml, recsys_runs.yaml) maps to the entry named here, read off the
// string by hand. A string not in this table fails: add it with the entry it must map to.
TEST(Match, EveryAcceleratorOfEveryValidationFileMaps) {
  const std::map<std::string, std::string> expected = {
      {"AMD Instinct MI300X (192GB HBM3)", "mi300x"},
      {"AMD Instinct MI325X (256GB HBM3E)", "mi325x"},
      {"AMD Instinct MI355X", "mi355x"},
      {"AMD Instinct MI355X (288 GB HBM)", "mi355x"},
      {"AMD Instinct MI355X (288GB HBM3E)", "mi355x"},
      {"Google TPU v4", "tpu_v4"},
      {"Google TPU v5p", "tpu_v5p"},
      {"Google TPU v6e (Trillium)", "tpu_v6e"},
      {"Google TPU7x (Ironwood)", "tpu7x"},
      {"NVIDIA A100 (80GB assumed, Selene)", "a100_80gb"},
      {"NVIDIA A100 (memory size not stated)", "a100_80gb"},
      {"NVIDIA A100 SXM4 40GB (AWS p4d.24xlarge)", "a100_40gb"},
      {"NVIDIA A100 SXM4 80GB", "a100_80gb"},
      {"NVIDIA B200", "b200"},
      {"NVIDIA GB200", "gb200"},
      {"NVIDIA H100 80GB (inferred from script name train_llama3_8b_h100_fp8.sh)", "h100_sxm"},
      {"NVIDIA H100 80GB HBM3", "h100_sxm"},
      {"NVIDIA H100 80GB", "h100_sxm"},
      {"NVIDIA B200 (DGX-B200, 180 GB HBM3e)", "b200"},
      {"NVIDIA B300 / Blackwell Ultra (DGX-B300, 288 GB HBM3e)", "b300"},
      {"NVIDIA GB200 (DGX-GB200 NVL72 rack, 186 GB HBM3e per GPU)", "gb200"},
      {"NVIDIA GB200 (NVL72, 186 GB HBM3e per GPU)", "gb200"},
      {"AMD Instinct MI300X (192 GB HBM3)", "mi300x"},
      {"AMD Instinct MI355X (288 GB HBM3E)", "mi355x"},
      {"NVIDIA H100 SXM 80GB", "h100_sxm"},
      {"NVIDIA H100 SXM 80GB (DGX-H100)", "h100_sxm"},
      {"NVIDIA H100 SXM 96GB HBM2e, 500W power limit (Grand Teton)", "h100_sxm_96gb_500w"},
  };
  std::map<std::string, int> runs_per_file;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir() + "/validation")) {
    if (entry.path().extension() != ".yaml") continue;
    const YAML::Node doc = YAML::LoadFile(entry.path().string());
    const YAML::Node list = doc.IsSequence() ? doc : doc["runs"];
    ASSERT_TRUE(list.IsSequence()) << entry.path();
    const std::string file = entry.path().filename().string();
    for (const auto& run : list) {
      const std::string text = run["hardware"]["accelerator"].as<std::string>();
      const auto it = expected.find(text);
      if (it == expected.end()) {
        ADD_FAILURE() << file << ": new accelerator string, extend this table: " << text;
        continue;
      }
      EXPECT_EQ(match(text), it->second) << file << ": " << text;
      ++runs_per_file[file];
    }
  }
  // 64 + 24 + 4 runs in the three files.
  EXPECT_EQ(runs_per_file["calibration_runs.yaml"], 64);
  EXPECT_EQ(runs_per_file["calibration_runs_moe_tpu.yaml"], 24);
  EXPECT_EQ(runs_per_file["recsys_runs.yaml"], 4);
  EXPECT_EQ(runs_per_file["calibration_runs_4.yaml"], 40);
}

TEST(Match, EveryAliasMapsBackToItsOwnEntry) {
  for (const auto& a : load_accelerator_catalog(data_dir())) {
    EXPECT_EQ(match(a.name), a.name);
    EXPECT_EQ(match(a.display_name), a.name) << a.display_name;
    for (const auto& alias : a.aliases) EXPECT_EQ(match(alias), a.name) << alias;
  }
}

// load_accelerator opens a catalogue key's file directly (start-up speed); the index, which
// reads every entry's names, must agree on the file for every key and alias.
TEST(Match, DirectKeyLoadAgreesWithTheIndex) {
  for (const std::string& name : list_accelerators(data_dir())) {
    const AcceleratorSpec direct = load_accelerator(name, data_dir());
    EXPECT_EQ(direct.file, index().load(name).file) << name;
    EXPECT_EQ(direct.name, name);
    for (const auto& alias : direct.aliases) {
      EXPECT_EQ(load_accelerator(alias, data_dir()).file, direct.file) << alias;
    }
  }
}

// By key, only that file is read: a broken neighbour does not stop it (an alias still needs the
// index, which reads every file and names the broken one).
TEST(Match, DirectKeyLoadReadsOneFile) {
  testing::TempDir dir;
  const std::string accs = dir.path() + "/hardware/accelerators";
  std::filesystem::create_directories(accs);
  std::filesystem::copy_file(data_dir() + "/hardware/accelerators/h200.yaml", accs + "/h200.yaml");
  dir.write("hardware/accelerators/broken.yaml", "name: [unclosed\n");
  EXPECT_EQ(load_accelerator("h200", dir.path()).name, "h200");
  EXPECT_EQ(load_accelerator("H200", dir.path()).name, "h200");
  EXPECT_THROW(load_accelerator("NVIDIA H200 SXM", dir.path()), InputError);
}

TEST(Match, LoadAcceleratorAcceptsAliasFreeTextAndPath) {
  EXPECT_EQ(load_accelerator("GFX942", data_dir()).name, "mi300x");
  EXPECT_EQ(load_accelerator("NVIDIA H100 SXM 80GB (DGX-H100)", data_dir()).name, "h100_sxm");
  const std::string path = data_dir() + "/hardware/accelerators/h200.yaml";
  const AcceleratorSpec h200 = load_accelerator(path, data_dir());
  EXPECT_EQ(h200.name, "h200");
  EXPECT_EQ(h200.file, path);
}

TEST(Match, UnknownNameListsNearestEntries) {
  try {
    load_accelerator("h100x", data_dir());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "accelerator");
    EXPECT_NE(e.message().find("'h100x'"), std::string::npos);
    EXPECT_NE(e.message().find("h100_sxm"), std::string::npos) << e.what();
  }
  try {
    load_network("h100_ib40", data_dir());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "network");
    EXPECT_NE(e.message().find("h100_ib400"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace projector
