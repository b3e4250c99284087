// Python bindings of the bytecode toolkit (placeholder until the toolkit lands).
#include "runtime/module_parts.h"

namespace tj::runtime {
int register_bytecode(PyObject*) { return 0; }
}  // namespace tj::runtime
