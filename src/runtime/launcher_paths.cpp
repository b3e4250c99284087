// The launcher's own path and the finder of its Python package; see
// launcher_paths.h.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "runtime/launcher_paths.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string_view>

#include "tracejit_build_config.h"

namespace tj::runtime {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFinderSource = R"PY(
import sys, importlib.machinery

class TracejitPackageFinder:
    """Finds the tracejit package next to the launcher, before sys.path."""

    def __init__(self, dirs):
        self.dirs = dirs

    def find_spec(self, name, path=None, target=None):
        if name != "tracejit":
            return None
        return importlib.machinery.PathFinder.find_spec(name, self.dirs)

sys.meta_path.insert(0, TracejitPackageFinder(_dirs))
)PY";

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string launcher_path(const char* argv0) {
  std::string_view a = argv0 ? argv0 : "";
  std::error_code ec;
  if (a.find('/') != std::string_view::npos) {
    fs::path p = fs::absolute(fs::path(a), ec).lexically_normal();
    if (!ec && is_executable_file(p)) return p.string();
  } else if (!a.empty()) {
    const char* path = std::getenv("PATH");
    std::string_view rest = path ? path : "";
    while (true) {
      size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      fs::path p = fs::absolute(fs::path(dir.empty() ? "." : dir) / a, ec).lexically_normal();
      if (!ec && is_executable_file(p)) return p.string();
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return self_exe();
}

std::vector<std::string> package_search_dirs(const std::string& launcher) {
  std::vector<std::string> bases;
  if (!launcher.empty()) bases.push_back(fs::path(launcher).parent_path().string());
  if (std::string real = self_exe(); !real.empty()) {
    std::string dir = fs::path(real).parent_path().string();
    if (bases.empty() || bases[0] != dir) bases.push_back(dir);
  }
  std::vector<std::string> dirs;
  for (const std::string& base : bases) {
    std::string_view rels = TRACEJIT_LAUNCHER_PACKAGE_DIRS;
    while (!rels.empty()) {
      size_t colon = rels.find(':');
      std::string_view rel = rels.substr(0, colon);
      dirs.push_back((fs::path(base) / rel).lexically_normal().string());
      rels = colon == std::string_view::npos ? std::string_view{} : rels.substr(colon + 1);
    }
  }
  return dirs;
}

int install_package_finder(const std::vector<std::string>& dirs) {
  PyObject* list = PyList_New(0);
  if (!list) return -1;
  std::error_code ec;
  for (const std::string& d : dirs) {
    if (!fs::is_regular_file(fs::path(d) / "tracejit" / "__init__.py", ec)) continue;
    PyObject* s = PyUnicode_DecodeFSDefault(d.c_str());
    if (!s || PyList_Append(list, s) < 0) {
      Py_XDECREF(s);
      Py_DECREF(list);
      return -1;
    }
    Py_DECREF(s);
    break;  // the nearest one only: never a mix of two installs
  }
  if (PyList_GET_SIZE(list) == 0) {
    Py_DECREF(list);
    return 0;  // sys.path decides
  }
  PyObject* globals = PyDict_New();
  if (!globals || PyDict_SetItemString(globals, "_dirs", list) < 0 ||
      PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0) {
    Py_XDECREF(globals);
    Py_DECREF(list);
    return -1;
  }
  Py_DECREF(list);
  PyObject* r = PyRun_String(kFinderSource, Py_file_input, globals, globals);
  Py_DECREF(globals);
  if (!r) return -1;
  Py_DECREF(r);
  return 0;
}

}  // namespace tj::runtime
