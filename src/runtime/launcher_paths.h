// Where the launcher is, and how it finds its Python package from there.
//
// An installed launcher (`meson install`, `pip install .`) and the one in
// the build tree find the `tracejit` package relative to their own path
// (build/python/, <prefix>/<python install dir>/, or a venv's
// site-packages); no source or build path is compiled in. sys.executable is
// the launcher itself, so `spawn` children and `subprocess` calls of
// sys.executable start the launcher again.
#pragma once

#include <string>
#include <vector>

namespace tj::runtime {

// The launcher's absolute path as it was invoked (argv[0] made absolute, or
// found on PATH, symlinks kept so a venv's bin/ stays recognisable); falls
// back to /proc/self/exe.
std::string launcher_path(const char* argv0);

// Directories that may hold the `tracejit` package, nearest first: each
// relative directory of TRACEJIT_LAUNCHER_PACKAGE_DIRS, taken from the
// launcher's directory and from the directory of its resolved path.
std::vector<std::string> package_search_dirs(const std::string& launcher);

// Puts a finder first on sys.meta_path that looks for the top-level
// `tracejit` package in the first of `dirs` that holds one (its submodules
// then follow the package's __path__). sys.path is left alone. When no
// directory holds it, `import tracejit` searches sys.path as usual.
// 0, or -1 with a Python error set.
int install_package_finder(const std::vector<std::string>& dirs);

}  // namespace tj::runtime
