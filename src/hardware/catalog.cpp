// The catalogue: finding accelerator and network files by name, alias, free text or path.
#include "projector/hardware/catalog.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include "hardware/yaml_read.h"
#include "projector/util/install_dir.h"

// The developer build compiles in the source tree's data/; a relocatable build (the pip package)
// looks beside its own binary at run time (projector/util/install_dir.h).
#if !defined(PROJECTOR_RELOCATABLE) && !defined(PROJECTOR_DEFAULT_DATA_DIR)
#error "PROJECTOR_DEFAULT_DATA_DIR (or PROJECTOR_RELOCATABLE) must be defined by the build"
#endif

namespace projector {

namespace fs = std::filesystem;
namespace hw = hw_detail;

namespace {

std::string accelerators_dir(const std::string& data_dir) {
  return (fs::path(data_dir) / "hardware" / "accelerators").string();
}
std::string networks_dir(const std::string& data_dir) {
  return (fs::path(data_dir) / "hardware" / "networks").string();
}

std::vector<std::string> yaml_stems(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const fs::path p = entry.path();
    if (p.extension() == ".yaml" || p.extension() == ".yml") out.push_back(p.stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string file_for(const std::string& dir, const std::string& stem) {
  for (const char* ext : {".yaml", ".yml"}) {
    const fs::path p = fs::path(dir) / (stem + ext);
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

// A name/path argument is a path when it names a YAML file or contains a directory separator.
bool looks_like_path(const std::string& s) {
  if (s.find('/') != std::string::npos) return true;
  const fs::path p(s);
  return p.extension() == ".yaml" || p.extension() == ".yml";
}

// Lower-case words: runs of letters and digits ("NVIDIA A100-SXM4 80GB" -> nvidia a100 sxm4 80gb).
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) {
      cur.push_back(static_cast<char>(std::tolower(c)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// The identity used for exact matches: words joined by '_' ("H100 SXM" == "h100-sxm" ==
// "h100_sxm").
std::string canonical(const std::string& text) {
  std::string out;
  for (const auto& w : words(text)) {
    if (!out.empty()) out.push_back('_');
    out += w;
  }
  return out;
}

// Names an entry answers to: its key, display name and aliases (read without loading the rest,
// so a broken calibration block in one file does not stop look-ups of the others).
using CatalogNames = AcceleratorIndex::Entry;

std::vector<CatalogNames> read_catalog_names(const std::string& data_dir) {
  std::vector<CatalogNames> out;
  const std::string dir = accelerators_dir(data_dir);
  for (const auto& stem : yaml_stems(dir)) {
    const std::string path = file_for(dir, stem);
    const hw::YamlContext ctx{path};
    const YAML::Node root = hw::load_yaml_file(path);
    CatalogNames names;
    names.name = stem;
    names.phrases.push_back(stem);
    if (root.IsMap()) {
      if (root["display_name"].IsScalar()) names.phrases.push_back(root["display_name"].Scalar());
      const YAML::Node aliases = root["aliases"];
      if (aliases.IsSequence()) {
        for (const auto& a : aliases) {
          if (a.IsScalar()) names.phrases.push_back(a.Scalar());
        }
      }
    }
    out.push_back(std::move(names));
  }
  return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1);
  std::vector<std::size_t> cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Up to three catalogue names closest to `query` (by edit distance to any name or alias).
std::string nearest_names(const std::string& query, const std::vector<CatalogNames>& entries) {
  const std::string q = canonical(query);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& e : entries) {
    std::size_t best = std::string::npos;
    for (const auto& p : e.phrases) best = std::min(best, edit_distance(q, canonical(p)));
    scored.emplace_back(best, e.name);
  }
  std::sort(scored.begin(), scored.end());
  std::string out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) {
    if (!out.empty()) out += ", ";
    out += scored[i].second;
  }
  return out;
}

std::string nearest_stems(const std::string& query, const std::vector<std::string>& stems) {
  std::vector<CatalogNames> entries;
  for (const auto& s : stems) entries.push_back({s, {s}});
  return nearest_names(query, entries);
}

// Is `needle` a run of consecutive words inside `hay`?
bool contains_run(const std::vector<std::string>& hay, const std::vector<std::string>& needle) {
  if (needle.empty() || needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (std::equal(needle.begin(), needle.end(), hay.begin() + static_cast<std::ptrdiff_t>(i))) {
      return true;
    }
  }
  return false;
}

bool all_digits(const std::string& w) {
  return std::all_of(w.begin(), w.end(), [](char c) { return std::isdigit(c) != 0; });
}

// How many words of `hay` a name covers: its words in a row, or the same letters and digits with
// the separators dropped ("TPU 7x" = "TPU7x", "MI 355X" = "MI355X", "TPUv5p" = "TPU v5p"). A
// separator-free match may not start right after a bare number: in "96 GB 300 W" the "GB" is a
// unit, not a model prefix. 0 when the name does not occur.
std::size_t match_length(const std::vector<std::string>& hay,
                         const std::vector<std::string>& needle) {
  if (contains_run(hay, needle)) return needle.size();
  std::string joined;
  for (const auto& w : needle) joined += w;
  std::size_t best = 0;
  for (std::size_t i = 0; i < hay.size(); ++i) {
    if (i > 0 && all_digits(hay[i - 1])) continue;
    std::string run;
    for (std::size_t j = i; j < hay.size() && run.size() < joined.size(); ++j) {
      run += hay[j];
      if (run == joined) best = std::max(best, j - i + 1);
    }
  }
  return best;
}

std::optional<std::string> match_words(const std::string& text,
                                       const std::vector<CatalogNames>& entries) {
  const std::vector<std::string> hay = words(text);
  // Score: the longest run of words matched by any of an entry's names. The best entry must be
  // strictly better than every other entry, otherwise the text is ambiguous ("MI300X or H100").
  std::size_t best = 0;
  std::size_t second = 0;
  std::string best_name;
  for (const auto& e : entries) {
    std::size_t score = 0;
    for (const auto& p : e.phrases) score = std::max(score, match_length(hay, words(p)));
    if (score > best) {
      second = best;
      best = score;
      best_name = e.name;
    } else if (score > second) {
      second = score;
    }
  }
  if (best == 0 || best == second) return std::nullopt;
  return best_name;
}

// Exact identity first, then the longest run of words.
std::optional<std::string> match_name(const std::string& text,
                                      const std::vector<CatalogNames>& entries) {
  // Exact identity first (so "h100" is never ambiguous with a longer alias elsewhere).
  const std::string key = canonical(text);
  if (key.empty()) return std::nullopt;
  for (const auto& e : entries) {
    for (const auto& p : e.phrases) {
      if (canonical(p) == key) return e.name;
    }
  }
  return match_words(text, entries);
}

}  // namespace

std::string default_data_dir() {
#ifdef PROJECTOR_RELOCATABLE
  static const std::string dir = installed_dir("data");
  return dir;
#else
  return PROJECTOR_DEFAULT_DATA_DIR;
#endif
}

std::vector<std::string> list_accelerators(const std::string& data_dir) {
  return yaml_stems(accelerators_dir(data_dir));
}

std::vector<std::string> list_networks(const std::string& data_dir) {
  return yaml_stems(networks_dir(data_dir));
}

AcceleratorIndex::AcceleratorIndex(const std::string& data_dir)
    : data_dir_(data_dir), entries_(read_catalog_names(data_dir)) {}

std::optional<std::string> AcceleratorIndex::match(const std::string& text) const {
  return match_name(text, entries_);
}

AcceleratorSpec AcceleratorIndex::load(const std::string& name_or_path) const {
  if (looks_like_path(name_or_path)) return load_accelerator_file(name_or_path);
  if (entries_.empty()) {
    throw InputError(SourceLocation{}, "accelerator",
                     fmt::format("no accelerator catalogue in '{}'", accelerators_dir(data_dir_)));
  }
  const std::optional<std::string> name = match_name(name_or_path, entries_);
  if (!name) {
    throw InputError(SourceLocation{}, "accelerator",
                     fmt::format("unknown accelerator '{}'; nearest: {} (see `projector hardware "
                                 "list`)",
                                 name_or_path, nearest_names(name_or_path, entries_)));
  }
  AcceleratorSpec acc = load_accelerator_file(file_for(accelerators_dir(data_dir_), *name));
  if (acc.name != *name) {
    throw InputError(SourceLocation{acc.file, 0, 0}, "name",
                     fmt::format("'{}' does not match the file name '{}'", acc.name, *name));
  }
  return acc;
}

std::optional<std::string> match_accelerator_name(const std::string& text,
                                                  const std::string& data_dir) {
  return AcceleratorIndex(data_dir).match(text);
}

AcceleratorSpec load_accelerator(const std::string& name_or_path, const std::string& data_dir) {
  if (looks_like_path(name_or_path)) return load_accelerator_file(name_or_path);
  // A catalogue key names its file: load that one alone instead of reading every entry's names
  // (most of a process's start-up). No alias equals another entry's key (catalog_test), so the
  // index would pick the same file.
  const std::string key = canonical(name_or_path);
  if (!key.empty()) {
    if (const std::string path = file_for(accelerators_dir(data_dir), key); !path.empty()) {
      AcceleratorSpec acc = load_accelerator_file(path);
      if (acc.name == key) return acc;
    }
  }
  return AcceleratorIndex(data_dir).load(name_or_path);
}

NetworkSpec load_network(const std::string& name_or_path, const std::string& data_dir) {
  if (looks_like_path(name_or_path)) return load_network_file(name_or_path);
  const std::string dir = networks_dir(data_dir);
  const std::vector<std::string> stems = yaml_stems(dir);
  const std::string key = canonical(name_or_path);
  for (const auto& s : stems) {
    if (canonical(s) == key) return load_network_file(file_for(dir, s));
  }
  throw InputError(SourceLocation{}, "network",
                   fmt::format("unknown network '{}'; nearest: {} (files in '{}')", name_or_path,
                               nearest_stems(name_or_path, stems), dir));
}

NetworkSpec default_network_for(const AcceleratorSpec& accelerator, const std::string& data_dir) {
  if (accelerator.default_network.empty()) {
    throw InputError(
        SourceLocation{accelerator.file, 0, 0}, "default_network",
        fmt::format("accelerator '{}' names no default network; pass one", accelerator.name));
  }
  try {
    return load_network(accelerator.default_network, data_dir);
  } catch (const InputError& e) {
    if (!e.where().file.empty()) throw;  // the network file itself is broken: keep its location
    throw InputError(SourceLocation{accelerator.file, 0, 0}, "default_network", e.message());
  }
}

std::vector<AcceleratorSpec> load_accelerator_catalog(const std::string& data_dir) {
  std::vector<AcceleratorSpec> out;
  const std::string dir = accelerators_dir(data_dir);
  for (const auto& stem : yaml_stems(dir))
    out.push_back(load_accelerator_file(file_for(dir, stem)));
  return out;
}

}  // namespace projector

namespace projector {

AcceleratorSpec device_share(const AcceleratorSpec& chip) {
  const int n = chip.devices_per_chip;
  if (n <= 1) return chip;
  AcceleratorSpec d = chip;
  for (double& p : d.peak_tflops) p /= n;
  for (AcceleratorSpec::ExtraPeak& e : d.extra_peak_tflops) e.tflops /= n;
  d.compute_units = std::max(1, chip.compute_units / n);
  d.dies = std::max(1, chip.dies / n);
  d.board_power_w /= n;
  d.idle_power_w /= n;
  d.hbm_bytes /= n;
  d.hbm_bw_bytes_per_s /= n;
  d.scaleup_bw_bytes_per_s /= n;
  d.scaleout_bw_bytes_per_s /= n;
  d.host_bw_bytes_per_s /= n;
  d.default_gpus_per_node = chip.default_gpus_per_node * n;
  return d;
}

}  // namespace projector
