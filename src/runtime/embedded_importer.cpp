// A meta-path importer for the embedded tracejit package (launcher only).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "runtime/embedded_python.h"

namespace tj::runtime {

namespace {
constexpr const char* kImporterSource = R"PY(
import sys, importlib.util

class TracejitEmbeddedImporter:
    """Serves tracejit's Python modules compiled into the launcher."""

    def __init__(self, sources):
        self.sources = sources  # name -> (filename, is_package, source)

    def find_spec(self, name, path=None, target=None):
        entry = self.sources.get(name)
        if entry is None:
            return None
        return importlib.util.spec_from_loader(name, self, origin=entry[0], is_package=entry[1])

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        filename, is_package, source = self.sources[module.__name__]
        module.__file__ = filename
        exec(compile(source, filename, "exec"), module.__dict__)

sys.meta_path.insert(0, TracejitEmbeddedImporter(_sources))
)PY";
}  // namespace

int install_embedded_importer() {
  PyObject* sources = PyDict_New();
  if (!sources) return -1;
  for (const auto& m : embedded_modules()) {
    PyObject* entry = Py_BuildValue("(sOs)", m.filename, m.is_package ? Py_True : Py_False, m.source);
    if (!entry || PyDict_SetItemString(sources, m.name, entry) < 0) {
      Py_XDECREF(entry);
      Py_DECREF(sources);
      return -1;
    }
    Py_DECREF(entry);
  }
  PyObject* globals = PyDict_New();
  if (!globals || PyDict_SetItemString(globals, "_sources", sources) < 0 ||
      PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0) {
    Py_XDECREF(globals);
    Py_DECREF(sources);
    return -1;
  }
  Py_DECREF(sources);
  PyObject* r = PyRun_String(kImporterSource, Py_file_input, globals, globals);
  Py_DECREF(globals);
  if (!r) return -1;
  Py_DECREF(r);
  return 0;
}

}  // namespace tj::runtime
