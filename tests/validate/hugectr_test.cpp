// A HugeCTR run maps through the TorchRec DLRM family with the differences stated (issue 29 §3):
// the hugectr profile (data/frameworks/hugectr.yaml) extends torchrec, so the job is the one the
// same entry read as TorchRec gives (cross-module invariant), and every run lists the three
// readings where HugeCTR differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "projector/job/profile.h"
#include "projector/perf/perf.h"
#include "projector/validate/validate.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;

// The DLRM-DCNv2 run of the shipped recommendation runs (TorchRec's README, 8 x A100).
RunEntry dcn_run() {
  const std::vector<RunEntry> runs = load_runs(kData + "/validation/recsys_runs.yaml");
  const auto it = std::find_if(runs.begin(), runs.end(), [](const RunEntry& r) {
    return r.id.find("dcn") != std::string::npos;
  });
  EXPECT_NE(it, runs.end());
  return *it;
}

std::size_t notes_of(const MappedRun& m, const std::string& profile) {
  return static_cast<std::size_t>(
      std::count_if(m.assumptions.begin(), m.assumptions.end(),
                    [&](const std::string& a) { return a.starts_with(profile + ": "); }));
}

TEST(HugeCtr, MapsThroughTorchRecWithTheDifferencesStated) {
  const RunEntry torchrec = dcn_run();
  RunEntry hugectr = torchrec;
  hugectr.framework = "NVIDIA HugeCTR 23.08 (Merlin), MLPerf DLRM-DCNv2 reference";
  MappingCatalogue catalogue(kData);
  const MappedRun t = map_run(torchrec, catalogue);
  const MappedRun h = map_run(hugectr, catalogue);
  ASSERT_TRUE(t.mapped) << t.reason;
  ASSERT_TRUE(h.mapped) << h.reason;
  EXPECT_EQ(t.framework, "torchrec");
  EXPECT_EQ(h.framework, "hugectr");
  EXPECT_EQ(h.backend, t.backend);
  // The three differences of hugectr.yaml, on this run and only on it.
  const FrameworkProfile* profile = catalogue.profiles().find("hugectr");
  ASSERT_NE(profile, nullptr);
  EXPECT_EQ(profile->notes.size(), 3u);
  EXPECT_EQ(notes_of(h, "hugectr"), profile->notes.size());
  EXPECT_EQ(notes_of(t, "hugectr"), 0u);
  for (const char* what :
       {"hugectr: embedding placement", "hugectr: host time", "hugectr: dense part"}) {
    EXPECT_TRUE(std::any_of(h.assumptions.begin(), h.assumptions.end(), [&](const std::string& a) {
      return a.starts_with(what);
    })) << what;
  }
  // The same job: tables, plan, batch, and so the same projected step.
  EXPECT_EQ(h.job.model.recommendation.tables.size(), 26u);
  EXPECT_EQ(h.job.runtime.global_batch_size, t.job.runtime.global_batch_size);
  EXPECT_EQ(h.job.parallel.embedding_plan.tables.size(),
            t.job.parallel.embedding_plan.tables.size());
  const PerfReport ph = project_performance(h.job);
  const PerfReport pt = project_performance(t.job);
  ASSERT_GT(pt.iteration_s, 0.0);
  EXPECT_DOUBLE_EQ(ph.iteration_s, pt.iteration_s);
}

// Notes are the profile's own: a profile that extends hugectr does not inherit them (it may read
// the framework differently), and torchrec, its parent, has none.
TEST(HugeCtr, NotesAreNotInherited) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "projector_hugectr_notes_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "frameworks");
  for (const char* f : {"torchrec.yaml", "hugectr.yaml"}) {
    fs::copy_file(fs::path(kData) / "frameworks" / f, dir / "frameworks" / f);
  }
  {
    std::ofstream child(dir / "frameworks" / "child.yaml");
    child << "name: child\ntitle: a HugeCTR fork\nbackend: torchrec_dlrm\nextends: hugectr\n";
  }
  const ProfileCatalog profiles = load_framework_profiles(dir.string());
  ASSERT_NE(profiles.find("child"), nullptr);
  EXPECT_TRUE(profiles.find("child")->notes.empty());
  EXPECT_EQ(profiles.find("hugectr")->notes.size(), 3u);
  EXPECT_TRUE(profiles.find("torchrec")->notes.empty());
  // "HugeCTR" before "DLRM" in free text names HugeCTR (the profile named first wins).
  const FrameworkProfile* m = profiles.match("HugeCTR DLRM-DCNv2");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name, "hugectr");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace projector
