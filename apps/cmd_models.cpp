// `projector models list [--json]|show NAME`: the bundled model catalogue.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "projector/commands/catalog.h"
#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/model/describe.h"
#include "projector/util/error.h"

namespace projector::cli {
namespace {

struct ModelsOptions {
  std::string data_dir;
  std::string primus_path;
  std::string name;
  bool json = false;
};

std::string data_dir_of(const ModelsOptions& o) {
  return o.data_dir.empty() ? default_data_dir() : o.data_dir;
}

std::string primus_of(const ModelsOptions& o) {
  if (!o.primus_path.empty()) return o.primus_path;
  const EnvLookup env = process_environment();
  if (auto d = env("PRIMUS_PATH"); d) return *d;
  return "";
}

}  // namespace

void add_models_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("models", "The model catalogue (data/models)");
  cmd->require_subcommand(1);
  auto opts = std::make_shared<ModelsOptions>();
  cmd->add_option("--data-dir", opts->data_dir, "catalogue directory");
  cmd->add_option("--primus-path", opts->primus_path, "Primus checkout (also searched by show)");

  auto* list = cmd->add_subcommand("list", "List the bundled model presets");
  list->add_flag("--json", opts->json, "Print JSON");
  list->callback([opts, &exit_code] {
    const std::string dir = data_dir_of(*opts);
    if (opts->json) {
      fmt::print("{}\n", models_list_json(dir));
      exit_code = kExitOk;
      return;
    }
    // The table is the JSON document's rows (one reading of the catalogue).
    const auto doc = nlohmann::json::parse(models_list_json(dir));
    fmt::print("{:<22} {:>7} {:>7} {:>8} {:>12} {:>12}\n", "name", "layers", "hidden", "experts",
               "params (B)", "active (B)");
    for (const auto& m : doc["models"]) {
      fmt::print("{:<22} {:>7} {:>7} {:>8} {:>12.2f} {:>12.2f}\n", m["name"].get<std::string>(),
                 m["layers"].get<int>(), m["hidden_size"].get<std::int64_t>(),
                 m["experts"].get<int>(), m["params"].get<double>() / 1e9,
                 m["active_params"].get<double>() / 1e9);
    }
    exit_code = kExitOk;
  });

  auto* show = cmd->add_subcommand("show", "Show one model preset");
  show->add_option("name", opts->name, "preset name, e.g. llama3.1_70B")->required();
  show->callback([opts, &exit_code] {
    const std::string dir = data_dir_of(*opts);
    std::vector<AppliedDefault> defaults;
    const ModelSpec m = load_model_preset(opts->name, dir, primus_of(*opts), &defaults);
    const ModelParams p = model_params(m);
    fmt::print("model: {}\n", m.name);
    const std::string path = find_model_preset(opts->name, dir, primus_of(*opts));
    fmt::print("file: {}\n", path);
    try {
      const std::string src = model_preset_source(opts->name, dir);
      if (!src.empty()) fmt::print("source: {}\n", src);
    } catch (const InputError&) {
      // only bundled presets carry a source
    }
    fmt::print("layers {}, hidden {}, vocab {}, {} embeddings, MTP {}\n", m.num_layers(),
               m.hidden_size, m.vocab_size, m.tied_embeddings ? "tied" : "untied",
               m.mtp_num_layers);
    fmt::print("parameters: {:.3f} B total ({}), {:.3f} B active per token\n", p.total / 1e9,
               p.total, p.active / 1e9);
    fmt::print("  embedding {:.3f} B, output layer {:.3f} B, decoder {:.3f} B, MTP {:.3f} B\n",
               p.embedding / 1e9, p.output_layer / 1e9, p.decoder / 1e9, p.mtp / 1e9);
    for (const LayerRun& run : layer_runs(m)) {
      const std::string range =
          run.count == 1 ? fmt::format("layer {}", run.first)
                         : fmt::format("layers {}-{}", run.first, run.first + run.count - 1);
      fmt::print("  {} ({}x): {}\n", range, run.count, run.description);
    }
    if (!defaults.empty()) {
      fmt::print("defaults applied:\n");
      for (const AppliedDefault& d : defaults) {
        fmt::print("  {} = {}  ({})\n", d.key, d.value, d.reason);
      }
    }
    exit_code = kExitOk;
  });
}

}  // namespace projector::cli
