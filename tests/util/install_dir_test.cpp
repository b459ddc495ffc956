// Where a relocatable build (the pip package) finds data/ and web/: beside its binary, or one up.
#include "projector/util/install_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace projector {
namespace {

namespace fs = std::filesystem;

TEST(InstallDir, TheCodeLivesInThisTestBinary) {
  // Linked statically into the test executable: the folder of /proc/self/exe.
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  EXPECT_EQ(code_dir(), exe.parent_path().string());
}

TEST(InstallDir, PrefersTheFolderBesideTheBinary) {
  const testing::TempDir tmp;
  tmp.write("pkg/data/hardware/a.yaml", "");
  tmp.write("pkg/bin/data/hardware/a.yaml", "");
  EXPECT_EQ(find_beside(tmp.path() + "/pkg/bin", "data"), tmp.path() + "/pkg/bin/data");
  // The Python extension sits in pkg/ itself.
  EXPECT_EQ(find_beside(tmp.path() + "/pkg", "data"), tmp.path() + "/pkg/data");
}

TEST(InstallDir, FallsBackToTheParentFolder) {
  const testing::TempDir tmp;
  tmp.write("pkg/web/report.js", "");
  tmp.write("pkg/bin/projector", "");
  // The CLI sits in pkg/bin/; web/ is in pkg/.
  EXPECT_EQ(find_beside(tmp.path() + "/pkg/bin", "web"), tmp.path() + "/pkg/web");
}

TEST(InstallDir, NamesTheFolderBesideWhenNeitherExists) {
  const testing::TempDir tmp;
  EXPECT_EQ(find_beside(tmp.path(), "data"), tmp.path() + "/data");
}

}  // namespace
}  // namespace projector
