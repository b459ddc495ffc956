// The offline HTML report (`--html FILE`): one self-contained file holding the JSON documents of
// docs/json-schema.md, the page script that draws them (web/report.js, web/report.css) and the
// Vega, Vega-Lite and vega-embed bundles (web/node_modules, installed by scripts/bootstrap.sh).
// Everything is inlined at write time, so the file opens without a network, and since the charts
// are drawn from the very documents `--json` writes, the two never disagree.
#pragma once

#include <string>

namespace projector {

struct HtmlReportInput {
  std::string kind;        // memory, performance, both, sweep, validate
  std::string title;       // page title
  std::string command;     // the command line that made the report
  std::string input_path;  // the experiment config or runs file
  std::string input_text;  // its text as read (empty: not included)
  // JSON documents (docs/json-schema.md); empty when not part of this kind of report.
  std::string job_json;          // `config --json`: the resolved job and every default
  std::string memory_json;       // `memory --json`
  std::string performance_json;  // `performance --json` or `both --json`
  std::string trace_json;        // `--trace`: the simulated timeline
  std::string sweep_json;        // `sweep --json`
  std::string validate_json;     // `validate --json`
  int top_k = 10;                // sweep: rows of the sortable top-K table
};

// A sweep keeps at most this many candidates in the page (the best ones and the whole Pareto
// front); `--json` and `--csv` keep all.
inline constexpr int kHtmlMaxSweepCandidates = 20000;

// The bundled web/ directory (report.js, report.css, node_modules/): this source tree's, or in a
// relocatable build (the pip package) the web/ installed beside the binary.
std::string default_web_dir();

// The page. Throws InputError (key "--html") naming the missing file when the assets are not
// installed, and when a document is not valid JSON.
std::string html_report(const HtmlReportInput& input, const std::string& web_dir);
inline std::string html_report(const HtmlReportInput& input) {
  return html_report(input, default_web_dir());
}

}  // namespace projector
