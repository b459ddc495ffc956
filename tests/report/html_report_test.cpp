// The HTML writer: assets inlined in order, the documents embedded unchanged and unable to end
// their script element early, no network reachable from the page, a clear error without the
// installed Vega bundles, and a very large sweep trimmed to its best candidates and Pareto front.
#include "projector/report/html_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "projector/util/error.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

// A web/ folder with stand-in bundles that say which file they are.
std::string fake_web_dir(const testing::TempDir& tmp) {
  tmp.write("web/node_modules/vega/build/vega.min.js", "/*vega*/\n//# sourceMappingURL=vega.map");
  tmp.write("web/node_modules/vega-lite/build/vega-lite.min.js", "/*vega-lite*/");
  tmp.write("web/node_modules/vega-embed/build/vega-embed.min.js", "var s='</script>';/*embed*/");
  tmp.write("web/report.js", "/*report*/");
  tmp.write("web/report.css", "body{}");
  return tmp.path() + "/web";
}

// The data island between its script tags.
nlohmann::json island(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"projector-data\">";
  const std::size_t start = html.find(open);
  EXPECT_NE(start, std::string::npos);
  const std::size_t end = html.find("</script>", start);
  return nlohmann::json::parse(html.substr(start + open.size(), end - start - open.size()));
}

TEST(HtmlReport, InlinesAssetsAndDocuments) {
  testing::TempDir tmp;
  HtmlReportInput in;
  in.kind = "memory";
  in.title = "a <title> & more";
  in.command = "projector memory --config x.yaml --html r.html";
  in.input_path = "x.yaml";
  in.input_text = "note: </script><script>alert(1)</script>\n";
  in.memory_json = R"({"schema_version": 1, "kind": "memory", "notes": ["a </SCRIPT> b"]})";
  const std::string html = html_report(in, fake_web_dir(tmp));

  // Bundles in dependency order, then the page script; source maps are not requested.
  const std::size_t vega = html.find("/*vega*/"), lite = html.find("/*vega-lite*/"),
                    embed = html.find("/*embed*/"), page = html.find("/*report*/");
  ASSERT_NE(vega, std::string::npos);
  EXPECT_LT(vega, lite);
  EXPECT_LT(lite, embed);
  EXPECT_LT(embed, page);
  EXPECT_EQ(html.find("sourceMappingURL"), std::string::npos);
  EXPECT_NE(html.find("var s='<\\/script>'"), std::string::npos);
  // Nothing may be fetched: the policy allows inline code only.
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none';"),
            std::string::npos);
  EXPECT_NE(html.find("<title>a &lt;title&gt; &amp; more</title>"), std::string::npos);

  // The documents come back unchanged; only the page's own </script> tags end script elements.
  const nlohmann::json data = island(html);
  EXPECT_EQ(data["kind"], "memory");
  EXPECT_EQ(data["input"]["text"], in.input_text);
  EXPECT_EQ(data["documents"]["memory"], nlohmann::json::parse(in.memory_json));
  EXPECT_FALSE(data["documents"].contains("performance"));
  std::size_t closes = 0;
  for (std::size_t p = html.find("</script>"); p != std::string::npos;
       p = html.find("</script>", p + 1)) {
    ++closes;
  }
  EXPECT_EQ(closes, 5u);  // the data island, three bundles, the page script
}

TEST(HtmlReport, MissingBundleNamesTheFileAndTheFix) {
  testing::TempDir tmp;
  tmp.write("web/report.js", "");
  try {
    html_report(HtmlReportInput{}, tmp.path() + "/web");
    FAIL() << "no error without the Vega bundles";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "--html");
    EXPECT_NE(e.where().file.find("node_modules/vega/build/vega.min.js"), std::string::npos);
    EXPECT_NE(e.message().find("scripts/bootstrap.sh"), std::string::npos);
  }
}

TEST(HtmlReport, RejectsADocumentThatIsNotJson) {
  testing::TempDir tmp;
  HtmlReportInput in;
  in.sweep_json = "{\"candidates\": [";
  EXPECT_THROW(html_report(in, fake_web_dir(tmp)), InputError);
}

// A sweep over the page limit keeps its best candidates and every Pareto layout after them.
TEST(HtmlReport, TrimsAVeryLargeSweep) {
  testing::TempDir tmp;
  nlohmann::json sweep;
  nlohmann::json rows = nlohmann::json::array();
  const int total = kHtmlMaxSweepCandidates + 50;
  for (int i = 1; i <= total; ++i) {
    rows.push_back({{"rank", i}, {"pareto", i == 1 || i == total - 3}});
  }
  sweep["candidates"] = rows;
  HtmlReportInput in;
  in.sweep_json = sweep.dump();
  const nlohmann::json page = island(html_report(in, fake_web_dir(tmp)))["documents"]["sweep"];
  EXPECT_EQ(page["candidates"].size(), static_cast<std::size_t>(kHtmlMaxSweepCandidates) + 1);
  EXPECT_EQ(page["candidates"].back()["rank"], total - 3);
  EXPECT_EQ(page["html_candidates_total"], total);
  EXPECT_EQ(page["html_candidates_shown"], kHtmlMaxSweepCandidates + 1);
}

// End to end with the installed bundles: the page embeds the very document --json writes.
TEST(HtmlReportCli, EmbedsTheJsonDocument) {
  testing::TempDir tmp;
  const std::string example = testing::repo_root() + "/examples/llama3.1_8B-BF16-pretrain.yaml";
  const auto r = testing::run_cli("both -c " + example + " --allow-tp-beyond-node --html " +
                                  tmp.path() + "/r.html --json " + tmp.path() + "/r.json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream html_in(tmp.path() + "/r.html"), json_in(tmp.path() + "/r.json");
  const std::string html((std::istreambuf_iterator<char>(html_in)), {});
  const nlohmann::json data = island(html);
  EXPECT_EQ(data["kind"], "both");
  EXPECT_EQ(data["documents"]["performance"], nlohmann::json::parse(json_in));
  EXPECT_TRUE(data["documents"]["trace"].contains("traceEvents"));
  EXPECT_EQ(data["documents"]["job"]["model"]["name"], "llama3.1_8B");
  // The command as given, long option names, flags without a value.
  const std::string command = data["command"];
  EXPECT_EQ(command.rfind("projector both --config " + example, 0), 0u) << command;
  EXPECT_NE(command.find(" --allow-tp-beyond-node"), std::string::npos) << command;
  EXPECT_EQ(command.find("true"), std::string::npos) << command;
}

}  // namespace
}  // namespace projector
