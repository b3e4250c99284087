// tracejit's Python package, embedded in the launcher at build time
// (scripts/embed_python.py), and the meta-path importer that serves it.
#pragma once

#include <vector>

namespace tj::runtime {

struct EmbeddedModule {
  const char* name;      // "tracejit", "tracejit._config", ...
  bool is_package;
  const char* filename;  // the source path at build time (for tracebacks)
  const char* source;
};

// Generated.
const std::vector<EmbeddedModule>& embedded_modules();

// Puts an importer for the embedded modules first on sys.meta_path.
// 0, or -1 with a Python error set.
int install_embedded_importer();

}  // namespace tj::runtime
