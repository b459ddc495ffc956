// nlohmann JSON -> Python objects (dict, list, str, int, float, bool, None), so the module returns
// exactly the documents the CLI writes with --json. Only python/ includes this header.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>

namespace projector::python {

pybind11::object to_python(const nlohmann::ordered_json& value);
// Parses a JSON document the report module rendered and converts it.
pybind11::object document_to_python(const std::string& json_text);

}  // namespace projector::python
