#include "to_python.h"

namespace projector::python {

namespace py = pybind11;

py::object to_python(const nlohmann::ordered_json& value) {
  using Type = nlohmann::ordered_json::value_t;
  switch (value.type()) {
    case Type::null:
    case Type::discarded:
      return py::none();
    case Type::boolean:
      return py::bool_(value.get<bool>());
    case Type::number_integer:
      return py::int_(value.get<std::int64_t>());
    case Type::number_unsigned:
      return py::int_(value.get<std::uint64_t>());
    case Type::number_float:
      return py::float_(value.get<double>());
    case Type::string:
      return py::str(value.get_ref<const std::string&>());
    case Type::array: {
      py::list out(value.size());
      for (std::size_t i = 0; i < value.size(); ++i) out[i] = to_python(value[i]);
      return out;
    }
    case Type::object: {
      py::dict out;
      for (const auto& [key, item] : value.items()) out[py::str(key)] = to_python(item);
      return out;
    }
    case Type::binary:
      break;
  }
  throw std::runtime_error("projector: a JSON value of an unexpected type");
}

py::object document_to_python(const std::string& json_text) {
  return to_python(nlohmann::ordered_json::parse(json_text));
}

}  // namespace projector::python
