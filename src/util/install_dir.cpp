// Locating the files an installed build ships, relative to the binary that holds this code.
#include "projector/util/install_dir.h"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <system_error>

namespace projector {

namespace fs = std::filesystem;

std::string code_dir() {
  Dl_info info{};
  link_map* map = nullptr;
  // Any function of this library names the object it was linked into.
  if (dladdr1(reinterpret_cast<const void*>(&code_dir), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) == 0 ||
      map == nullptr) {
    return {};
  }
  std::error_code ec;
  // The main program's link map has an empty name: the executable itself.
  const bool in_executable = map->l_name == nullptr || map->l_name[0] == '\0';
  const fs::path file = in_executable ? fs::read_symlink("/proc/self/exe", ec)
                                      : fs::canonical(fs::path(map->l_name), ec);
  if (ec || file.empty()) return {};
  return file.parent_path().string();
}

std::string find_beside(const std::string& dir, std::string_view name) {
  const fs::path here = fs::path(dir) / name;
  const fs::path up = fs::path(dir).parent_path() / name;
  std::error_code ec;
  if (!fs::is_directory(here, ec) && fs::is_directory(up, ec)) return up.string();
  return here.string();
}

std::string installed_dir(std::string_view name) {
  return find_beside(code_dir(), name);
}

}  // namespace projector
