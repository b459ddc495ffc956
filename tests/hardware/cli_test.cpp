// `projector hardware list|show` end to end through the built binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct CliResult {
  int exit_code;
  std::string out;
};

CliResult run(const std::string& args) {
  const std::string cmd = std::string(PROJECTOR_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) out += buf.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(HardwareCli, ListShowsPeaksHbmAndNetworks) {
  const CliResult r = run("hardware list");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // mi300x row: bf16 1307.4, fp8 2614.9, 192 GiB, 5.30 TB/s, default network mi300x_ib400.
  EXPECT_NE(r.out.find("1307.4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2614.9"), std::string::npos);
  EXPECT_NE(r.out.find("mi300x_ib400"), std::string::npos);
  EXPECT_NE(r.out.find("primus_mi355x"), std::string::npos);
}

TEST(HardwareCli, ShowJsonCarriesValuesAndSources) {
  const CliResult r = run("hardware show h100 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["name"], "h100_sxm");
  EXPECT_DOUBLE_EQ(j["peak_tflops"]["bf16"]["value"].get<double>(), 989.4);
  EXPECT_FALSE(j["peak_tflops"]["bf16"]["source"].get<std::string>().empty());
  EXPECT_DOUBLE_EQ(j["hbm_bw_bytes_per_s"]["value"].get<double>(), 3.35e12);
  EXPECT_NEAR(j["calibration"]["gemm_peak_fraction"]["bf16"]["value"].get<double>(), 794.5 / 989.4,
              1e-3);
}

TEST(HardwareCli, ShowNetworkAndUnknownName) {
  const CliResult net = run("hardware show primus_mi300x --json");
  ASSERT_EQ(net.exit_code, 0) << net.out;
  const auto j = nlohmann::json::parse(net.out);
  EXPECT_DOUBLE_EQ(j["hardware_config"]["node_bw"].get<double>(), 448.0);
  const CliResult bad = run("hardware show not_a_gpu");
  EXPECT_EQ(bad.exit_code, 2);  // InputError
  EXPECT_NE(bad.out.find("unknown accelerator"), std::string::npos) << bad.out;
}

}  // namespace
