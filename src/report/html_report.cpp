// The offline HTML report: the JSON documents, the page script and the chart bundles, inlined.
#include "projector/report/html_report.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "projector/util/error.h"
#include "projector/util/install_dir.h"

#ifndef PROJECTOR_DEFAULT_WEB_DIR
#define PROJECTOR_DEFAULT_WEB_DIR "web"
#endif

namespace projector {
namespace {

using Json = nlohmann::ordered_json;

// Inlined in this order: Vega-Lite needs Vega, vega-embed needs both; report.js comes last.
constexpr const char* kBundles[] = {"node_modules/vega/build/vega.min.js",
                                    "node_modules/vega-lite/build/vega-lite.min.js",
                                    "node_modules/vega-embed/build/vega-embed.min.js"};

// No request can leave the page: scripts and styles only inline, images only from data/blob URLs.
// Vega compiles its expressions with Function(), hence 'unsafe-eval'.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:";

std::string read_asset(const std::string& web_dir, const std::string& name) {
  const std::string path = web_dir + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError({path, 0, 0}, "--html",
                     "missing HTML report asset; run scripts/bootstrap.sh (npm ci in web/) to "
                     "install the pinned Vega bundles");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos)) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// A script body that cannot end its <script> element early and asks for no source map.
std::string inline_script(std::string js) {
  replace_all(js, "</script", "<\\/script");
  replace_all(js, "</SCRIPT", "<\\/SCRIPT");
  const std::size_t map = js.rfind("//# sourceMappingURL=");
  if (map != std::string::npos) js.erase(map);
  return js;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Json parse_document(const std::string& name, const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError({}, "--html", fmt::format("the {} document is not JSON: {}", name, e.what()));
  }
}

// A very large sweep keeps its best candidates and the whole Pareto front.
void trim_sweep(Json& sweep) {
  Json& rows = sweep["candidates"];
  const std::size_t total = rows.size();
  if (total <= static_cast<std::size_t>(kHtmlMaxSweepCandidates)) return;
  Json kept = Json::array();
  for (Json& row : rows) {
    if (kept.size() < static_cast<std::size_t>(kHtmlMaxSweepCandidates) ||
        row.value("pareto", false)) {
      kept.push_back(std::move(row));
    }
  }
  const std::size_t shown = kept.size();
  rows = std::move(kept);
  // After the last use of `rows`: a new key may move the object's elements.
  sweep["html_candidates_shown"] = shown;
  sweep["html_candidates_total"] = total;
}

// The data island the page script reads: every document plus what made them.
std::string data_island(const HtmlReportInput& in) {
  Json j;
  j["kind"] = in.kind;
  j["title"] = in.title;
  j["command"] = in.command;
  j["input"] = {{"path", in.input_path}, {"text", in.input_text}};
  j["top_k"] = in.top_k;
  Json docs = Json::object();
  const std::pair<const char*, const std::string*> named[] = {
      {"job", &in.job_json},     {"memory", &in.memory_json}, {"performance", &in.performance_json},
      {"trace", &in.trace_json}, {"sweep", &in.sweep_json},   {"validate", &in.validate_json}};
  for (const auto& [name, text] : named) {
    if (!text->empty()) docs[name] = parse_document(name, *text);
  }
  if (docs.contains("sweep")) trim_sweep(docs["sweep"]);
  j["documents"] = std::move(docs);
  // Compact, invalid UTF-8 in the input text replaced; '<' escaped so no "</script" can occur
  // ('<' only ever appears inside JSON strings, where \u003c means the same).
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  replace_all(text, "<", "\\u003c");
  return text;
}

}  // namespace

std::string default_web_dir() {
#ifdef PROJECTOR_RELOCATABLE
  static const std::string dir = installed_dir("web");  // beside the binary (util/install_dir.h)
  return dir;
#else
  return PROJECTOR_DEFAULT_WEB_DIR;
#endif
}

std::string html_report(const HtmlReportInput& input, const std::string& web_dir) {
  std::string scripts;
  for (const char* bundle : kBundles) {
    scripts += "<script>" + inline_script(read_asset(web_dir, bundle)) + "</script>\n";
  }
  scripts += "<script>" + inline_script(read_asset(web_dir, "report.js")) + "</script>\n";
  const std::string css = read_asset(web_dir, "report.css");

  std::string out;
  out.reserve(scripts.size() + css.size() + (1 << 16));
  out += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += fmt::format("<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n",
                     kContentSecurityPolicy);
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"projector\">\n";
  out += fmt::format("<title>{}</title>\n<style>\n{}</style>\n</head>\n", html_escape(input.title),
                     css);
  out += "<body data-state=\"loading\">\n<main id=\"app\"></main>\n";
  out += "<script type=\"application/json\" id=\"projector-data\">" + data_island(input) +
         "</script>\n";
  out += scripts;
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace projector
