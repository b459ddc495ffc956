// `import projector`: the library from Python. Every function returns the JSON document the CLI
// writes with --json (docs/json-schema.md) as plain dicts and lists, converted from the JSON the
// report module renders, so a notebook and the CLI never disagree. Bad input raises
// projector.InputError (a ValueError) carrying the file, line, column and key.
#include <fmt/format.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "job_loading.h"
#include "projector/commands/catalog.h"
#include "projector/commands/projection.h"
#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/interval/interval.h"
#include "projector/interval/training_plan.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/profile/benchmark.h"
#include "projector/report/job_report.h"
#include "projector/report/memory_report.h"
#include "projector/report/perf_report.h"
#include "projector/sweep/sweep.h"
#include "projector/util/bounds.h"
#include "projector/util/error.h"
#include "projector/validate/validate.h"
#include "to_python.h"

namespace py = pybind11;

namespace projector::python {
namespace {

// The loaded job (opaque; `to_dict()` gives `projector config --json`).
struct Job {
  JobSpec spec;
  LoadRequest request;   // how it was loaded (a scan or a profile reloads it with one change)
  std::string data_dir;  // the catalogue it was loaded with ("": the bundled one)
};

std::string describe(const Job& job) {
  const JobSpec& j = job.spec;
  const ParallelSpec& p = j.parallel;
  return fmt::format(
      "<projector.Job {} on {} x {} {}: TP {} PP {} VPP {} CP {} EP {} DP {}, MBS {} GBS {} seq "
      "{}>",
      j.model.name.empty() ? "(inline model)" : j.model.name, j.cluster.nodes,
      j.cluster.gpus_per_node, j.cluster.accelerator.name, p.tp, p.pp, p.vpp, p.cp, p.ep, j.dp(),
      j.runtime.micro_batch_size, j.runtime.global_batch_size, j.runtime.seq_length);
}

ResidualTable residuals_of(const Job& job) {
  return load_residuals(job.data_dir.empty() ? default_data_dir() : job.data_dir);
}

// train_tokens: a count or text ("15T"); gpu_hour_cost in USD (needs train_tokens).
PlanInputs plan_inputs(const py::object& train_tokens, const py::object& gpu_hour_cost) {
  std::string tokens;
  if (py::isinstance<py::str>(train_tokens)) {
    tokens = str_argument("train_tokens", train_tokens);
  } else if (!train_tokens.is_none()) {
    // A count (an int or a float), as the CLI would read its text.
    number_argument("train_tokens", train_tokens, 0.0, 1e300);
    tokens = py::str(train_tokens);
  }
  return make_plan_inputs(tokens, number_argument("gpu_hour_cost", gpu_hour_cost, 0.0, 1e9));
}

// One of `allowed` (a str): InputError naming `key` otherwise.
std::string choice(const std::string& key, const py::object& v,
                   const std::vector<std::string>& allowed) {
  const std::string text = str_argument(key, v);
  std::string list;
  for (const std::string& a : allowed) {
    if (a == text) return text;
    list += (list.empty() ? "" : ", ") + a;
  }
  throw InputError({}, key, fmt::format("'{}' is not one of {}", text, list));
}

// `projector memory [--memory-mode benchmark --profile P] --json -`: the projection with its
// calibrated range, or its anchor on a measured profile's allocator peak.
py::object memory(const Job& job, const py::object& memory_mode, const py::object& profile_path) {
  const std::string mode = choice("memory_mode", memory_mode, {"simulate", "benchmark"});
  const std::string path = profile_path.is_none() ? "" : path_argument("profile", profile_path);
  if (mode == "benchmark" && path.empty()) {
    throw InputError({}, "profile", "memory_mode 'benchmark' needs a measured profile");
  }
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    MemoryReport rep = project_memory(job.spec);
    attach_memory_range(residuals_of(job), job.spec, rep);  // as `projector memory`
    if (mode == "benchmark") {
      const profile::MeasuredProfile prof = profile::read_profile(path);
      doc = profile::memory_anchor_json(profile::anchor_memory(prof, rep), prof);
    } else {
      doc = memory_json(job.spec, rep);
    }
  }
  return document_to_python(doc);
}

// scan_nodes: [1, 2, 4] or "1,2,4", as --scan-nodes.
std::vector<int> node_list(const py::object& v) {
  if (v.is_none()) return {};
  if (py::isinstance<py::str>(v))
    return parse_node_list(str_argument("scan_nodes", v), "scan_nodes");
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) {
    throw InputError({}, "scan_nodes", "expected a list of node counts or a string '1,2,4'");
  }
  std::vector<int> out;
  for (const py::handle n : v) {
    if (out.size() >= 64) {
      throw InputError({}, "scan_nodes", "more than 64 node counts; scan fewer sizes");
    }
    out.push_back(static_cast<int>(int_argument("scan_nodes", n, 1, kMaxCount)));
  }
  return out;
}

// `performance` and `both`: the keyword arguments are the CLI's flags of the same names.
py::object projection(const Job& job, bool both, const py::object& train_tokens,
                      const py::object& gpu_hour_cost, const py::object& gpu_clock_mhz,
                      const py::object& profiling_mode, const py::object& memory_mode,
                      const py::object& profile_path, const py::object& benchmark_gpus,
                      const py::object& scan_nodes) {
  ProjectionSettings s;
  s.keys = {"profiling_mode", "memory_mode", "profile", "benchmark_gpus", "="};
  s.both = both;
  s.plan = plan_inputs(train_tokens, gpu_hour_cost);
  s.profiling_mode = choice("profiling_mode", profiling_mode, {"simulate", "benchmark", "both"});
  s.memory_mode = choice("memory_mode", memory_mode, {"simulate", "benchmark"});
  s.profile_path = profile_path.is_none() ? "" : path_argument("profile", profile_path);
  s.benchmark_gpus = int_argument("benchmark_gpus", benchmark_gpus, 0, kMaxCount);
  s.data_dir = job.data_dir;
  s.scan_nodes = node_list(scan_nodes);
  check_projection_settings(s);
  const double clock =
      gpu_clock_mhz.is_none() ? 0.0 : number_argument("gpu_clock_mhz", gpu_clock_mhz, 1e-9, 1e5);
  JobSpec spec = job.spec;
  apply_compute_clock(spec, clock, "gpu_clock_mhz");
  const LoadRequest request = job.request;
  s.job_at_nodes = [&request, clock](int nodes) {
    LoadRequest r = request;
    r.cli.nodes = nodes;
    JobSpec at = load_job(r);
    apply_compute_clock(at, clock, "gpu_clock_mhz");
    return at;
  };
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    doc = projection_json(spec, s, run_projection(spec, s));
  }
  return document_to_python(doc);
}

py::object workload(const Job& job) {
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    doc = perf_json(job.spec, project_workload(job.spec));
  }
  return document_to_python(doc);
}

py::object config(const Job& job) {
  return document_to_python(job_json(job.spec));
}

py::object measured_profile(const Job& job, const py::object& trace, const py::object& pp_rank,
                            const py::object& benchmark_gpus, const py::object& launch_gap_us) {
  ProfileSettings s;
  s.trace = path_argument("trace", trace);
  s.pp_rank = static_cast<int>(int_argument("pp_rank", pp_rank, 0, kMaxCount));
  s.benchmark_gpus = static_cast<int>(int_argument("benchmark_gpus", benchmark_gpus, 0, kMaxCount));
  s.launch_gap_us = number_argument("launch_gap_us", launch_gap_us, 0.0, 1e12);
  s.data_dir = job.data_dir;
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    // As `projector profile`: with no hardware named, the accelerator the trace was recorded on.
    const profile::MeasuredProfile p =
        measure_profile(s, [&job](const std::optional<std::string>& trace_hardware) {
          if (!job.request.hardware.empty() || !trace_hardware) return job.spec;
          LoadRequest r = job.request;
          r.hardware = *trace_hardware;
          return load_job(r);
        });
    doc = profile::profile_json(p);
  }
  return document_to_python(doc);
}

std::string catalogue(const py::object& data_dir) {
  return data_dir.is_none() ? default_data_dir() : path_argument("data_dir", data_dir);
}

// `hardware list`, `hardware show NAME`, `hardware compare A B [config=...]`.
py::object hardware(const py::object& command, const py::args& names, const py::object& config,
                    const py::object& nodes, const py::object& gpus_per_node,
                    const py::object& data_dir) {
  const std::string cmd = choice("command", command, {"list", "show", "compare"});
  const std::size_t wanted = cmd == "list" ? 0 : cmd == "show" ? 1 : 2;
  if (names.size() != wanted) {
    throw InputError(
        {}, "names",
        fmt::format("`hardware {}` takes {} name(s), got {}", cmd, wanted, names.size()));
  }
  if (cmd != "compare" && !(config.is_none() && nodes.is_none() && gpus_per_node.is_none())) {
    throw InputError({}, "config",
                     fmt::format("config, nodes and gpus_per_node are options of "
                                 "`hardware compare`, not of `hardware {}`",
                                 cmd));
  }
  std::vector<std::string> n;
  for (const py::handle name : names) n.push_back(path_argument("names", name));
  const std::string dir = catalogue(data_dir);
  if (cmd == "list") return document_to_python(hardware_list_json(dir));
  if (cmd == "show") return document_to_python(hardware_show_json(n[0], dir));
  LoadRequest base;
  base.config_path = config.is_none() ? "" : path_argument("config", config);
  base.data_dir = data_dir.is_none() ? "" : dir;
  if (!nodes.is_none())
    base.cli.nodes = static_cast<int>(int_argument("nodes", nodes, 1, kMaxCount));
  if (!gpus_per_node.is_none()) {
    base.cli.gpus_per_node =
        static_cast<int>(int_argument("gpus_per_node", gpus_per_node, 1, kMaxCount));
  }
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    doc = hardware_compare_json(
        compare_hardware(n[0], n[1], dir, base.config_path, [&base](const AcceleratorSpec& acc) {
          LoadRequest r = base;
          r.hardware = acc.file;
          return load_job(r);
        }));
  }
  return document_to_python(doc);
}

py::object models(const py::object& data_dir) {
  return document_to_python(models_list_json(catalogue(data_dir)));
}

// A grid as `sweep --grid` text: a string as is, a dict {"tp": [1, 2], "recompute": "full"}.
std::string grid_text(const py::object& grid) {
  if (grid.is_none()) return "";
  if (py::isinstance<py::str>(grid)) return grid.cast<std::string>();
  if (!py::isinstance<py::dict>(grid)) {
    throw InputError({"grid", 0, 0}, "grid", "expected a dict of axis -> values or a string");
  }
  std::string out;
  for (const auto& [axis, values] : grid.cast<py::dict>()) {
    std::string list;
    if (py::isinstance<py::list>(values) || py::isinstance<py::tuple>(values)) {
      for (const py::handle v : values) list += (list.empty() ? "" : ",") + std::string(py::str(v));
    } else {
      list = py::str(values);
    }
    out += (out.empty() ? "" : "; ") + std::string(py::str(axis)) + "=" + list;
  }
  return out;
}

py::object sweep_layouts(const Job& job, const py::object& nodes, const py::object& grid,
                         const py::object& objective, const py::object& memory_limit_arg,
                         const py::object& threads, const py::object& include_vshape,
                         const py::object& allow_uneven_layers, const py::object& prune_upper_bound,
                         const py::object& train_tokens, const py::object& gpu_hour_cost) {
  const double memory_limit = number_argument("memory_limit", memory_limit_arg, 0.0, 1e300);
  if (memory_limit <= 0.0 || memory_limit > 1.5) {
    throw InputError({}, "memory_limit",
                     fmt::format("{} is not a fraction of HBM in (0, 1.5]", memory_limit));
  }
  const sweep::Grid g = sweep::parse_grid(grid_text(grid));
  sweep::SpaceOptions space;
  space.nodes = nodes.is_none() ? job.spec.cluster.nodes
                                : static_cast<int>(int_argument("nodes", nodes, 1, kMaxCount));
  space.include_vshape = bool_argument("include_vshape", include_vshape);
  space.allow_uneven_layers = bool_argument("allow_uneven_layers", allow_uneven_layers);
  sweep::Options opts;
  opts.objective = sweep::parse_objective(str_argument("objective", objective));
  opts.plan = plan_inputs(train_tokens, gpu_hour_cost);
  if (opts.objective == sweep::Objective::kCost && opts.plan.train_tokens == 0.0) {
    throw InputError({}, "objective", "cost needs train_tokens");
  }
  opts.memory_limit = memory_limit;
  opts.prune_on_upper_bound = bool_argument("prune_upper_bound", prune_upper_bound);
  // As -j / --threads: 0 is every core.
  opts.threads = static_cast<int>(int_argument("threads", threads, 0, 4096));
  // Each layout's calibrated 80 % range, as `projector sweep` gives it.
  const ResidualTable residuals =
      load_residuals(job.data_dir.empty() ? default_data_dir() : job.data_dir);
  opts.residuals = &residuals;
  // Ctrl-C in a notebook stops the workers, then raises KeyboardInterrupt.
  std::atomic<bool> stop{false};
  bool interrupted = false;
  opts.stop = &stop;
  opts.progress = [&](const sweep::Progress&) {
    py::gil_scoped_acquire locked;
    if (PyErr_CheckSignals() != 0) {
      interrupted = true;
      stop.store(true);
    }
  };
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    doc = sweep::to_json(sweep::run_sweep(job.spec, g, space, opts), job.spec);
  }
  if (interrupted) throw py::error_already_set();
  return document_to_python(doc);
}

py::object validate_runs(const py::object& runs_path, const py::object& data_dir_path,
                         const py::object& configs_path) {
  const std::string path = path_argument("path", runs_path);
  const std::string data_dir =
      data_dir_path.is_none() ? "" : path_argument("data_dir", data_dir_path);
  // As --configs: the index beside the runs file unless one is named; "none" turns it off.
  const std::string configs = configs_path.is_none() ? "" : path_argument("configs", configs_path);
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    std::vector<RunEntry> runs = load_runs(path);
    const std::string index = configs.empty() ? default_configs_index(path) : configs;
    if (!index.empty() && index != "none") attach_run_configs(runs, path, index);
    const ProjectFn project = make_default_project_fn();
    doc = report_to_json(data_dir.empty() ? validate(runs, project)
                                          : validate(runs, project, data_dir));
  }
  return document_to_python(doc);
}

}  // namespace
}  // namespace projector::python

PYBIND11_MODULE(projector, m) {
  using namespace projector;
  using namespace projector::python;
  m.doc() = "Memory and performance projection for large-model training jobs (projector).";

  // The exception type lives as long as the interpreter (a reference kept on purpose: a static
  // py::object would be destroyed after the interpreter is gone).
  static PyObject* const input_error =
      py::exception<InputError>(m, "InputError", PyExc_ValueError).release().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object err = py::reinterpret_borrow<py::object>(input_error)(py::str(e.what()));
      err.attr("file") = e.where().file;
      err.attr("line") = e.where().line;
      err.attr("column") = e.where().column;
      err.attr("key") = e.key();
      err.attr("message") = e.message();
      PyErr_SetObject(input_error, err.ptr());
    }
  });

  py::class_<Job>(m, "Job", "A loaded training job (see projector.load).")
      .def(
          "to_dict", [](const Job& j) { return document_to_python(job_json(j.spec)); },
          "The resolved job and every default applied (`projector config --json`).")
      .def_property_readonly("source", [](const Job& j) { return j.spec.source; })
      .def_property_readonly("model", [](const Job& j) { return j.spec.model.name; })
      .def_property_readonly("world_size", [](const Job& j) { return j.spec.cluster.world_size(); })
      .def("__repr__", &describe);

  m.def(
      "load",
      [](const py::object& path, const py::object& overrides) {
        LoadRequest request = python::load_request(path_argument("path", path), overrides);
        JobSpec spec = load_job(request);
        std::string data_dir = request.data_dir;
        return Job{std::move(spec), std::move(request), std::move(data_dir)};
      },
      py::arg("path"), py::arg("overrides") = py::none(),
      "Loads a Primus / Megatron experiment YAML. overrides: {'tp': 2, 'nodes': 4, "
      "'hardware': 'h100', 'recompute_granularity': 'full', ...}: the CLI's layout flags by "
      "name, any other key a Megatron argument (as --set).");
  m.def("memory", &memory, py::arg("job"), py::kw_only(), py::arg("memory_mode") = "simulate",
        py::arg("profile") = py::none(),
        "`projector memory --json` as a dict; memory_mode 'benchmark' with a measured `profile` "
        "anchors the peak on its allocator peak (--memory-mode benchmark --profile).");
  // pybind11 keeps a copy of each docstring.
  static const std::string projection_doc =
      "; train_tokens (e.g. '15T' or 1.5e13) and gpu_hour_cost (USD) add "
      "results['time_to_train'], gpu_clock_mhz sets the compute clock, profiling_mode / "
      "memory_mode 'benchmark' anchor on a measured `profile` (benchmark_gpus checks its bench), "
      "scan_nodes ([1, 2, 4]) adds the `scaling` table: the CLI's flags of the same names.";
  // performance and both take the same arguments; both adds the memory document.
  static const std::string performance_doc =
      std::string("`projector performance --json` as a dict") + projection_doc;
  static const std::string both_doc =
      std::string(
          "`projector both --json` as a dict (the performance document with the memory one under "
          "'memory')") +
      projection_doc;
  for (const auto& [name, with_memory, doc] :
       {std::tuple{"performance", false, &performance_doc}, std::tuple{"both", true, &both_doc}}) {
    m.def(
        name,
        [with_memory](const Job& job, const py::object& train_tokens,
                      const py::object& gpu_hour_cost, const py::object& gpu_clock_mhz,
                      const py::object& profiling_mode, const py::object& memory_mode,
                      const py::object& profile, const py::object& benchmark_gpus,
                      const py::object& scan_nodes) {
          return projection(job, with_memory, train_tokens, gpu_hour_cost, gpu_clock_mhz,
                            profiling_mode, memory_mode, profile, benchmark_gpus, scan_nodes);
        },
        py::arg("job"), py::kw_only(), py::arg("train_tokens") = py::none(),
        py::arg("gpu_hour_cost") = 0.0, py::arg("gpu_clock_mhz") = py::none(),
        py::arg("profiling_mode") = "simulate", py::arg("memory_mode") = "simulate",
        py::arg("profile") = py::none(), py::arg("benchmark_gpus") = 0,
        py::arg("scan_nodes") = py::none(), doc->c_str());
  }
  m.def("workload", &workload, py::arg("job"),
        "`projector workload --json` as a dict: the op tables of every rank class.");
  m.def("config", &config, py::arg("job"),
        "`projector config --json` as a dict (the same as job.to_dict()).");
  m.def("profile", &measured_profile, py::arg("job"), py::arg("trace"), py::kw_only(),
        py::arg("pp_rank") = 0, py::arg("benchmark_gpus") = 0, py::arg("launch_gap_us") = 100.0,
        "`projector profile --trace TRACE --config ... --json` as a dict: the measured profile of "
        "a PyTorch profiler trace compared with the cost models on the job (with no 'hardware' "
        "override, on the accelerator the trace was recorded on).");
  m.def("hardware", &hardware, py::arg("command") = "list", py::arg("config") = py::none(),
        py::arg("nodes") = py::none(), py::arg("gpus_per_node") = py::none(),
        py::arg("data_dir") = py::none(),
        "`projector hardware list --json` (hardware() or hardware('list')), `hardware show NAME "
        "--json` (hardware('show', NAME)) or `hardware compare A B [--config X] --json` "
        "(hardware('compare', A, B, config=X, nodes=..., gpus_per_node=...)) as a dict.");
  m.def("models", &models, py::kw_only(), py::arg("data_dir") = py::none(),
        "`projector models list --json` as a dict.");
  m.def("sweep", &sweep_layouts, py::arg("job"), py::kw_only(), py::arg("nodes") = py::none(),
        py::arg("grid") = py::none(), py::arg("objective") = "tokens_per_s_per_gpu",
        py::arg("memory_limit") = 0.9, py::arg("threads") = 0, py::arg("include_vshape") = false,
        py::arg("allow_uneven_layers") = false, py::arg("prune_upper_bound") = false,
        py::arg("train_tokens") = py::none(), py::arg("gpu_hour_cost") = 0.0,
        "`projector sweep --json` as a dict: every legal layout of the job's model on `nodes` "
        "nodes (default: the job's), restricted by `grid` ({'tp': [1, 2], 'pp': [1, 2]} or "
        "'tp=1,2; pp=1,2').");
  m.def("validate", &validate_runs, py::arg("path"), py::arg("data_dir") = py::none(),
        py::arg("configs") = py::none(),
        "`projector validate PATH --json [--configs FILE]` as a dict.");
}
