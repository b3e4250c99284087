// Python type tracejit.GraphModule (placeholder until the Graph IR lands).
#include "runtime/module_parts.h"

namespace tj::runtime {
int register_graph(PyObject*) { return 0; }
}  // namespace tj::runtime
