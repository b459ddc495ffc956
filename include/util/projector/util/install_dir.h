// Where a relocatable build (the pip package: cmake -DPROJECTOR_RELOCATABLE=ON) finds the files it
// ships, at run time: data/ and web/ beside the executable or Python extension that holds the
// running code, or one folder up (projector/bin/projector finds projector/data). The developer
// build compiles in this source tree's data/ and web/ instead (hardware/catalog.h, html_report.h).
#pragma once

#include <string>
#include <string_view>

namespace projector {

// The folder of the file that holds this code: the executable (/proc/self/exe) or the shared
// object (the Python extension) it is linked into. Empty when it cannot be told.
std::string code_dir();

// `dir/name` when it exists, else `dir/../name` when that exists, else `dir/name`.
std::string find_beside(const std::string& dir, std::string_view name);

// find_beside(code_dir(), name).
std::string installed_dir(std::string_view name);

}  // namespace projector
