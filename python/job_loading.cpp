#include "job_loading.h"

#include <fmt/format.h>

#include <optional>

#include "projector/frontend/loader.h"
#include "projector/util/error.h"

namespace projector::python {
namespace {

namespace py = pybind11;

// A Python value as the text `--set key=value` takes (YAML scalars and flow lists).
std::string setting_text(const std::string& key, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) return py::str(v);
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::string out = "[";
    for (const py::handle item : v) out += (out.size() > 1 ? ", " : "") + setting_text(key, item);
    return out + "]";
  }
  throw InputError({"overrides", 0, 0}, key,
                   fmt::format("a {} cannot be a setting (use a bool, number, string or list)",
                               std::string(py::str(v.get_type().attr("__name__")))));
}

int positive_int(const std::string& key, const py::handle& v) {
  if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v) || v.cast<long long>() <= 0) {
    throw InputError({"overrides", 0, 0}, key,
                     fmt::format("expected a positive integer, got {}", std::string(py::repr(v))));
  }
  return v.cast<int>();
}

// Applies one first-class key; false when `key` is not one (then it is a Megatron argument).
bool apply_flag(LoadRequest& r, const std::string& key, const py::handle& v) {
  const auto set_int = [&](std::optional<int>& field) { field = positive_int(key, v); };
  const auto text = [&] { return setting_text(key, v); };
  if (key == "tp")
    set_int(r.cli.tp);
  else if (key == "pp")
    set_int(r.cli.pp);
  else if (key == "vpp")
    set_int(r.cli.vpp);
  else if (key == "cp")
    set_int(r.cli.cp);
  else if (key == "ep")
    set_int(r.cli.ep);
  else if (key == "etp")
    set_int(r.cli.etp);
  else if (key == "nodes")
    set_int(r.cli.nodes);
  else if (key == "gpus_per_node")
    set_int(r.cli.gpus_per_node);
  else if (key == "mbs")
    set_int(r.cli.micro_batch_size);
  else if (key == "gbs")
    set_int(r.cli.global_batch_size);
  else if (key == "seq")
    set_int(r.cli.seq_length);
  else if (key == "sync_free_stage")
    r.cli.sync_free_stage = v.cast<int>();
  else if (key == "enable_zero_bubble")
    r.cli.enable_zero_bubble = v.cast<bool>();
  else if (key == "enable_deepep")
    r.cli.enable_deepep = v.cast<bool>();
  else if (key == "pipeline_schedule")
    r.cli.pipeline_schedule = text();
  else if (key == "allow_tp_beyond_node")
    r.allow_tp_beyond_node = v.cast<bool>();
  else if (key == "hardware")
    r.hardware = text();
  else if (key == "hardware_config")
    r.hardware_config = text();
  else if (key == "data_dir")
    r.data_dir = text();
  else if (key == "primus_path")
    r.primus_path = text();
  else
    return false;
  return true;
}

}  // namespace

JobSpec load(const std::string& path, const py::dict& overrides) {
  LoadRequest request;
  request.config_path = path;
  for (const auto& [k, v] : overrides) {
    const std::string key = py::str(k);
    if (!apply_flag(request, key, v))
      request.set_overrides.push_back(key + "=" + setting_text(key, v));
  }
  return projector::load_job(request);
}

}  // namespace projector::python
