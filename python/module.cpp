// `import projector`: the library from Python. Every function returns the JSON document the CLI
// writes with --json (docs/json-schema.md) as plain dicts and lists, converted from the JSON the
// report module renders, so a notebook and the CLI never disagree. Bad input raises
// projector.InputError (a ValueError) carrying the file, line, column and key.
#include <fmt/format.h>
#include <pybind11/pybind11.h>

#include <atomic>

#include "job_loading.h"
#include "projector/hardware/catalog.h"
#include "projector/interval/interval.h"
#include "projector/interval/training_plan.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/report/job_report.h"
#include "projector/report/memory_report.h"
#include "projector/report/perf_report.h"
#include "projector/sweep/sweep.h"
#include "projector/util/error.h"
#include "projector/validate/validate.h"
#include "to_python.h"

namespace py = pybind11;

namespace projector::python {
namespace {

// The loaded job (opaque; `to_dict()` gives `projector config --json`).
struct Job {
  JobSpec spec;
  std::string data_dir;  // the catalogue it was loaded with ("": the bundled one)
};

std::string describe(const Job& job) {
  const JobSpec& j = job.spec;
  const ParallelSpec& p = j.parallel;
  return fmt::format(
      "<projector.Job {} on {} x {} {}: TP {} PP {} VPP {} CP {} EP {} DP {}, MBS {} GBS {} seq "
      "{}>",
      j.model.name.empty() ? "(inline model)" : j.model.name, j.cluster.nodes,
      j.cluster.gpus_per_node, j.cluster.accelerator.name, p.tp, p.pp, p.vpp, p.cp, p.ep, p.dp,
      j.runtime.micro_batch_size, j.runtime.global_batch_size, j.runtime.seq_length);
}

ResidualTable residuals_of(const Job& job) {
  return load_residuals(job.data_dir.empty() ? default_data_dir() : job.data_dir);
}

py::object memory(const Job& job) {
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    MemoryReport rep = project_memory(job.spec);
    attach_memory_range(residuals_of(job), job.spec, rep);  // as `projector memory`
    doc = memory_json(job.spec, rep);
  }
  return document_to_python(doc);
}

// train_tokens: a count or text ("15T"); gpu_hour_cost in USD (needs train_tokens).
PlanInputs plan_inputs(const py::object& train_tokens, double gpu_hour_cost) {
  return make_plan_inputs(train_tokens.is_none() ? "" : std::string(py::str(train_tokens)),
                          gpu_hour_cost);
}

py::object performance(const Job& job, const py::object& train_tokens, double gpu_hour_cost) {
  const PlanInputs plan = plan_inputs(train_tokens, gpu_hour_cost);
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    PerfOptions po;
    po.routing_skew_bracket = true;  // as `projector performance` (the same document)
    PerfReport rep = project_performance(job.spec, po);
    // The calibrated 80 % ranges and the plan, as the CLI attaches them (docs/validation.md).
    const ResidualTable residuals = residuals_of(job);
    if (rep.has_memory) attach_memory_range(residuals, job.spec, rep.memory);
    rep.range = calibrated_range(residuals, job.spec, rep);
    if (plan.train_tokens > 0.0) rep.plan = plan_training(job.spec, rep, plan);
    doc = perf_json(job.spec, rep);
  }
  return document_to_python(doc);
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
                         const std::string& objective, double memory_limit, int threads,
                         bool include_vshape, bool allow_uneven_layers, bool prune_upper_bound,
                         const py::object& train_tokens, double gpu_hour_cost) {
  if (memory_limit <= 0.0 || memory_limit > 1.5) {
    throw InputError({}, "memory_limit",
                     fmt::format("{} is not a fraction of HBM in (0, 1.5]", memory_limit));
  }
  const sweep::Grid g = sweep::parse_grid(grid_text(grid));
  sweep::SpaceOptions space;
  space.nodes = nodes.is_none() ? job.spec.cluster.nodes : nodes.cast<int>();
  space.include_vshape = include_vshape;
  space.allow_uneven_layers = allow_uneven_layers;
  sweep::Options opts;
  opts.objective = sweep::parse_objective(objective);
  opts.plan = plan_inputs(train_tokens, gpu_hour_cost);
  if (opts.objective == sweep::Objective::kCost && opts.plan.train_tokens == 0.0) {
    throw InputError({}, "objective", "cost needs train_tokens");
  }
  opts.memory_limit = memory_limit;
  opts.prune_on_upper_bound = prune_upper_bound;
  opts.threads = threads;
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

// A str or any os.PathLike (pathlib.Path) as a path string.
std::string path_text(const py::object& path) {
  return py::str(py::module_::import("os").attr("fspath")(path));
}

py::object validate_runs(const py::object& runs_path, const py::object& data_dir_path) {
  const std::string path = path_text(runs_path);
  const std::string data_dir = data_dir_path.is_none() ? "" : path_text(data_dir_path);
  std::string doc;
  {
    py::gil_scoped_release unlocked;
    const std::vector<RunEntry> runs = load_runs(path);
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
        const py::dict o = overrides.is_none() ? py::dict() : overrides.cast<py::dict>();
        std::string data_dir = o.contains("data_dir") ? std::string(py::str(o["data_dir"])) : "";
        return Job{python::load(path_text(path), o), std::move(data_dir)};
      },
      py::arg("path"), py::arg("overrides") = py::none(),
      "Loads a Primus / Megatron experiment YAML. overrides: {'tp': 2, 'nodes': 4, "
      "'hardware': 'h100', 'recompute_granularity': 'full', ...}: the CLI's layout flags by "
      "name, any other key a Megatron argument (as --set).");
  m.def("memory", &memory, py::arg("job"), "`projector memory --json` as a dict.");
  m.def("performance", &performance, py::arg("job"), py::kw_only(),
        py::arg("train_tokens") = py::none(), py::arg("gpu_hour_cost") = 0.0,
        "`projector performance --json` as a dict; train_tokens (e.g. '15T' or 1.5e13) and "
        "gpu_hour_cost (USD) add results['time_to_train'] as --train-tokens / --gpu-hour-cost.");
  m.def("sweep", &sweep_layouts, py::arg("job"), py::kw_only(), py::arg("nodes") = py::none(),
        py::arg("grid") = py::none(), py::arg("objective") = "tokens_per_s_per_gpu",
        py::arg("memory_limit") = 0.9, py::arg("threads") = 0, py::arg("include_vshape") = false,
        py::arg("allow_uneven_layers") = false, py::arg("prune_upper_bound") = false,
        py::arg("train_tokens") = py::none(), py::arg("gpu_hour_cost") = 0.0,
        "`projector sweep --json` as a dict: every legal layout of the job's model on `nodes` "
        "nodes (default: the job's), restricted by `grid` ({'tp': [1, 2], 'pp': [1, 2]} or "
        "'tp=1,2; pp=1,2').");
  m.def("validate", &validate_runs, py::arg("path"), py::arg("data_dir") = py::none(),
        "`projector validate PATH --json` as a dict.");
}
