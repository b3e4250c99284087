// Python codegen: a graph as the source of a plain Python module defining
//
//   def forward(self, x, y):
//       add = torch.ops.aten.add.Tensor(x, y, alpha=2)
//       return (add,)
//
// one statement per node, in graph order, calling the exact overload
// (`torch.ops.aten.<op>.<overload>`); get_attr reads `self.<name>`, getitem
// indexes. It runs under /usr/bin/python3.11 with torch and nothing else
// from tracejit: this is `GraphModule.code` and what repro scripts embed.
#pragma once

#include <string>

#include "graph/graph.h"

namespace tj::graph {

std::string python_code(const Graph& graph);

}  // namespace tj::graph
