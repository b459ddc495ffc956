// The user's path of a published run: its framework config and command-line options, read from
// the runs file or from a configs index, and made into the request the CLI would make.
#include "validate/run_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "projector/util/error.h"
#include "projector/util/input_file.h"

namespace projector {
namespace validate_detail {
namespace {

namespace fs = std::filesystem;

int line_of(const YAML::Node& n) {
  return n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
}

// The options a run's config may carry: those of `projector performance` that describe the job.
// A checkout path (--primus-path, --backend-path) is not one: a validation reads bundled data.
const std::vector<std::string>& known_args() {
  static const std::vector<std::string> keys = {"hardware",
                                                "hardware-config",
                                                "nodes",
                                                "gpus-per-node",
                                                "tp",
                                                "pp",
                                                "vpp",
                                                "cp",
                                                "ep",
                                                "etp",
                                                "mbs",
                                                "gbs",
                                                "seq",
                                                "schedule",
                                                "set",
                                                "framework-version",
                                                "enable-deepep",
                                                "enable-zero-bubble",
                                                "sync-free-stage",
                                                "moe-expert-load-cv",
                                                "allow-tp-beyond-node",
                                                "strict"};
  return keys;
}

std::string resolve_path(const std::string& path, const std::string& file) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(file).parent_path() / path).lexically_normal().string();
}

std::vector<std::string> arg_values(const YAML::Node& v, const std::string& key,
                                    const std::string& file) {
  if (v.IsScalar()) return {v.Scalar()};
  if (key == "set" && v.IsSequence()) {
    std::vector<std::string> out;
    for (const YAML::Node& item : v) {
      if (!item.IsScalar())
        throw InputError({file, line_of(item), 0}, "args.set", "expected key=value");
      out.push_back(item.Scalar());
    }
    return out;
  }
  throw InputError({file, line_of(v), 0}, "args." + key,
                   key == "set" ? "expected key=value or a list of them" : "expected one value");
}

}  // namespace

RunConfig read_run_config(const YAML::Node& config, const YAML::Node& args,
                          const std::string& file) {
  RunConfig rc;
  rc.named_in = file;
  rc.line = line_of(config);
  if (!config.IsScalar() || config.Scalar().empty()) {
    throw InputError({file, rc.line, 0}, "config", "expected the path of a config file");
  }
  rc.path = resolve_path(config.Scalar(), file);
  std::error_code ec;
  if (!fs::is_regular_file(rc.path, ec)) {
    throw InputError({file, rc.line, 0}, "config", "no such file: " + rc.path);
  }
  if (!args.IsDefined() || args.IsNull()) return rc;
  if (!args.IsMap()) throw InputError({file, line_of(args), 0}, "args", "expected a mapping");
  std::set<std::string> seen;
  for (const auto& kv : args) {
    const std::string key = kv.first.Scalar();
    const int line = line_of(kv.first);
    const auto& known = known_args();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string near = nearest_misspelling(key, known);
      throw InputError({file, line, 0}, "args." + key,
                       "not an option of a run's config" +
                           (near.empty() ? fmt::format(" (known: {})", fmt::join(known, ", "))
                                         : " (did you mean '" + near + "'?)"));
    }
    if (!seen.insert(key).second) throw InputError({file, line, 0}, "args." + key, "given twice");
    rc.args.push_back({key, arg_values(kv.second, key, file), line});
  }
  return rc;
}

namespace {

int count_arg(const RunConfigArg& a, const std::string& file) {
  const std::string& s = a.values.front();
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 1 || v > 1'000'000) {
    throw InputError({file, a.line, 0}, "args." + a.key,
                     "expected a whole number from 1 to 1000000, got '" + s + "'");
  }
  return v;
}

bool bool_arg(const RunConfigArg& a, const std::string& file) {
  const std::string& s = a.values.front();
  if (s == "true") return true;
  if (s == "false") return false;
  throw InputError({file, a.line, 0}, "args." + a.key, "expected true or false, got '" + s + "'");
}

double number_arg(const RunConfigArg& a, const std::string& file) {
  const std::string& s = a.values.front();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0.0) || v > 1e6) {
    throw InputError({file, a.line, 0}, "args." + a.key,
                     "expected a number from 0 to 1e6, got '" + s + "'");
  }
  return v;
}

}  // namespace

LoadRequest load_request_of(const RunConfig& config, const std::string& data_dir) {
  LoadRequest req;
  req.config_path = config.path;
  req.data_dir = data_dir;
  const std::string& f = config.named_in;
  CliOverrides& cli = req.cli;
  const std::map<std::string, std::optional<int>*> counts = {
      {"tp", &cli.tp},
      {"pp", &cli.pp},
      {"vpp", &cli.vpp},
      {"cp", &cli.cp},
      {"ep", &cli.ep},
      {"etp", &cli.etp},
      {"nodes", &cli.nodes},
      {"gpus-per-node", &cli.gpus_per_node},
      {"mbs", &cli.micro_batch_size},
      {"gbs", &cli.global_batch_size},
      {"seq", &cli.seq_length},
      {"sync-free-stage", &cli.sync_free_stage}};
  for (const RunConfigArg& a : config.args) {
    if (const auto it = counts.find(a.key); it != counts.end()) {
      *it->second = count_arg(a, f);
    } else if (a.key == "hardware") {
      req.hardware = a.values.front();
    } else if (a.key == "hardware-config") {
      req.hardware_config = resolve_path(a.values.front(), f);
    } else if (a.key == "schedule") {
      cli.pipeline_schedule = a.values.front();
    } else if (a.key == "set") {
      req.set_overrides = a.values;
    } else if (a.key == "framework-version") {
      req.framework_version = a.values.front();
    } else if (a.key == "enable-deepep") {
      cli.enable_deepep = bool_arg(a, f);
    } else if (a.key == "enable-zero-bubble") {
      cli.enable_zero_bubble = bool_arg(a, f);
    } else if (a.key == "moe-expert-load-cv") {
      cli.moe_expert_load_cv = number_arg(a, f);
    } else if (a.key == "allow-tp-beyond-node") {
      req.allow_tp_beyond_node = bool_arg(a, f);
    } else if (a.key == "strict") {
      req.strict_keys = bool_arg(a, f);
    }
  }
  return req;
}

}  // namespace validate_detail

std::string default_configs_index(const std::string& runs_file) {
  const std::filesystem::path p =
      std::filesystem::path(runs_file).parent_path() / "configs" / "index.yaml";
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) ? p.string() : std::string();
}

void attach_run_configs(std::vector<RunEntry>& runs, const std::string& runs_file,
                        const std::string& index_path) {
  YAML::Node root;
  try {
    root = YAML::Load(read_input_file(index_path));
  } catch (const YAML::Exception& ex) {
    throw InputError({index_path, ex.mark.line + 1, ex.mark.column + 1}, "", ex.msg);
  }
  if (root.IsNull()) return;
  if (!root.IsSequence()) {
    throw InputError({index_path, validate_detail::line_of(root), 0}, "",
                     "a configs index is a list of {runs_file, run, config, args}");
  }
  const std::string name = std::filesystem::path(runs_file).filename().string();
  std::map<std::string, RunEntry*> by_id;
  for (RunEntry& e : runs) by_id.emplace(e.id, &e);
  for (const YAML::Node& item : root) {
    const int line = validate_detail::line_of(item);
    if (!item.IsMap()) throw InputError({index_path, line, 0}, "", "expected a mapping");
    for (const char* key : {"runs_file", "run"}) {
      if (!item[key].IsScalar() || item[key].Scalar().empty()) {
        throw InputError({index_path, line, 0}, key, "missing");
      }
    }
    if (item["runs_file"].Scalar() != name) continue;
    const std::string id = item["run"].Scalar();
    const auto it = by_id.find(id);
    if (it == by_id.end()) {
      throw InputError({index_path, validate_detail::line_of(item["run"]), 0}, "run",
                       "no run '" + id + "' in " + name);
    }
    if (it->second->config) {
      throw InputError(
          {index_path, line, 0}, "run",
          "run '" + id + "' already names a config (" + it->second->config->named_in + ")");
    }
    if (!item["config"].IsDefined()) throw InputError({index_path, line, 0}, "config", "missing");
    it->second->config = validate_detail::read_run_config(item["config"], item["args"], index_path);
  }
}

}  // namespace projector
