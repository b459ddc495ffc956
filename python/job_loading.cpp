#include "job_loading.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "projector/util/bounds.h"
#include "projector/util/error.h"

namespace projector::python {
namespace {

namespace py = pybind11;

// A value as the error names it: its repr, or its type for what has no short repr.
std::string describe(const py::handle& v) {
  if (py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v)) {
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow != 0) return "an integer beyond 64 bits";
    if (n == -1 && PyErr_Occurred() != nullptr) PyErr_Clear();
    return std::to_string(n);
  }
  const std::string type = py::str(v.get_type().attr("__name__"));
  if (py::isinstance<py::float_>(v)) return fmt::format("{} (a float)", v.cast<double>());
  if (py::isinstance<py::str>(v) || py::isinstance<py::bool_>(v) || v.is_none()) {
    PyObject* r = PyObject_Repr(v.ptr());
    if (r != nullptr) {
      Py_ssize_t size = 0;
      const char* text = PyUnicode_AsUTF8AndSize(r, &size);
      std::string out = text != nullptr ? std::string(text, static_cast<std::size_t>(size)) : "";
      Py_DECREF(r);
      if (text != nullptr && out.size() <= 80) return out;
    }
    PyErr_Clear();
  }
  return "a " + type;
}

[[noreturn]] void refuse(const std::string& key, const std::string& message) {
  throw InputError({}, key, message);
}

// A Python value as the text `--set key=value` takes (YAML scalars and flow lists).
std::string setting_text(const std::string& key, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(v)) {
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow != 0) refuse(key, "an integer beyond 64 bits is not a setting");
    return std::to_string(n);
  }
  if (py::isinstance<py::float_>(v)) {
    const double d = v.cast<double>();
    if (!std::isfinite(d)) refuse(key, fmt::format("{} is not a finite number", d));
    return py::str(v);
  }
  if (py::isinstance<py::str>(v)) return str_argument(key, v);
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::string out = "[";
    for (const py::handle item : v) out += (out.size() > 1 ? ", " : "") + setting_text(key, item);
    return out + "]";
  }
  refuse(key,
         fmt::format("{} cannot be a setting (use a bool, number, string or list)", describe(v)));
}

int count(const std::string& key, const py::handle& v) {
  return static_cast<int>(int_argument(key, v, 1, kMaxCount));
}

// Applies one first-class key; false when `key` is not one (then it is a Megatron argument).
bool apply_flag(LoadRequest& r, const std::string& key, const py::handle& v) {
  const auto text = [&] { return str_argument(key, v); };
  if (key == "tp")
    r.cli.tp = count(key, v);
  else if (key == "pp")
    r.cli.pp = count(key, v);
  else if (key == "vpp")
    r.cli.vpp = count(key, v);
  else if (key == "cp")
    r.cli.cp = count(key, v);
  else if (key == "ep")
    r.cli.ep = count(key, v);
  else if (key == "etp")
    r.cli.etp = count(key, v);
  else if (key == "nodes")
    r.cli.nodes = count(key, v);
  else if (key == "gpus_per_node")
    r.cli.gpus_per_node = count(key, v);
  else if (key == "mbs")
    r.cli.micro_batch_size = count(key, v);
  else if (key == "gbs")
    r.cli.global_batch_size = count(key, v);
  else if (key == "seq")
    r.cli.seq_length = count(key, v);
  else if (key == "sync_free_stage")
    r.cli.sync_free_stage = static_cast<int>(int_argument(key, v, 0, 3));
  else if (key == "moe_expert_load_cv")
    r.cli.moe_expert_load_cv = number_argument(key, v, 0.0, 16.0);
  else if (key == "enable_zero_bubble")
    r.cli.enable_zero_bubble = bool_argument(key, v);
  else if (key == "enable_deepep")
    r.cli.enable_deepep = bool_argument(key, v);
  else if (key == "pipeline_schedule")
    r.cli.pipeline_schedule = text();
  else if (key == "alloc_conf")
    r.cli.alloc_conf = text();
  else if (key == "allow_tp_beyond_node")
    r.allow_tp_beyond_node = bool_argument(key, v);
  else if (key == "strict")
    r.strict_keys = bool_argument(key, v);
  else if (key == "hardware")
    r.hardware = path_argument(key, v);
  else if (key == "hardware_config")
    r.hardware_config = path_argument(key, v);
  else if (key == "data_dir")
    r.data_dir = path_argument(key, v);
  else if (key == "primus_path")
    r.primus_path = path_argument(key, v);
  else if (key == "backend_path")
    r.backend_path = path_argument(key, v);
  else if (key == "framework_version")
    r.framework_version = str_argument(key, v);
  else
    return false;
  return true;
}

}  // namespace

std::int64_t int_argument(const std::string& key, const py::handle& v, std::int64_t lo,
                          std::int64_t hi) {
  const auto bad = [&] {
    refuse(key, fmt::format("expected an integer in {}..{}, got {}", lo, hi, describe(v)));
  };
  if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v)) bad();
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0 || n < lo || n > hi) bad();
  return n;
}

double number_argument(const std::string& key, const py::handle& v, double lo, double hi) {
  const auto bad = [&] {
    refuse(key, fmt::format("expected a number in [{:g}, {:g}], got {}", lo, hi, describe(v)));
  };
  if (py::isinstance<py::bool_>(v) ||
      !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v))) {
    bad();
  }
  const double d = PyFloat_AsDouble(v.ptr());  // an int past a double's range: OverflowError
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    bad();
  }
  if (!std::isfinite(d) || d < lo || d > hi) bad();
  return d;
}

bool bool_argument(const std::string& key, const py::handle& v) {
  if (!py::isinstance<py::bool_>(v)) {
    refuse(key, fmt::format("expected True or False, got {}", describe(v)));
  }
  return v.cast<bool>();
}

std::string str_argument(const std::string& key, const py::handle& v) {
  if (!py::isinstance<py::str>(v)) refuse(key, fmt::format("expected a str, got {}", describe(v)));
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(v.ptr(), &size);
  if (text == nullptr) {  // a lone surrogate ("\ud800") has no UTF-8 form
    PyErr_Clear();
    refuse(key, "the text is not valid Unicode (a lone surrogate)");
  }
  return std::string(text, static_cast<std::size_t>(size));
}

std::string path_argument(const std::string& key, const py::handle& v) {
  if (py::isinstance<py::str>(v)) return str_argument(key, v);
  py::object path;
  try {
    path = py::module_::import("os").attr("fspath")(v);
  } catch (const py::error_already_set&) {
    refuse(key, fmt::format("expected a path (str or os.PathLike), got {}", describe(v)));
  }
  if (!py::isinstance<py::str>(path)) {
    refuse(key, fmt::format("expected a path (str or os.PathLike), got {}", describe(v)));
  }
  return str_argument(key, path);
}

LoadRequest load_request(const std::string& path, const py::handle& overrides) {
  LoadRequest request;
  request.config_path = path;
  if (overrides.is_none()) return request;
  if (!py::isinstance<py::dict>(overrides)) {
    refuse("overrides",
           fmt::format("expected a dict of key -> value, got {}", describe(overrides)));
  }
  try {
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(overrides)) {
      const std::string key = str_argument("overrides", k);
      if (!apply_flag(request, key, v))
        request.set_overrides.push_back(key + "=" + setting_text(key, v));
    }
  } catch (const InputError& e) {
    throw InputError({"overrides", 0, 0}, e.key(), e.message());  // where the value was given
  }
  return request;
}

}  // namespace projector::python
