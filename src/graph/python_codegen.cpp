// Graph -> Python source; see python_codegen.h.
#include "graph/python_codegen.h"

#include <sstream>

#include "graph/op_registry.h"
#include "graph/printer.h"

namespace tj::graph {

std::string python_code(const Graph& graph) {
  std::ostringstream body;
  std::string params = "self";
  for (const Node* n : graph.nodes()) {
    switch (n->kind()) {
      case NodeKind::placeholder: params += ", " + n->name(); break;
      case NodeKind::get_attr: body << "    " << n->name() << " = self." << n->target() << "\n"; break;
      case NodeKind::output: body << "    return " << format_arg(n->args().at(0), ArgStyle::python) << "\n"; break;
      case NodeKind::call_function: {
        body << "    " << n->name() << " = ";
        if (n->op()->is_getitem) {
          body << format_arg(n->args().at(0), ArgStyle::python) << "[" << format_arg(n->args().at(1), ArgStyle::python)
               << "]\n";
          break;
        }
        body << "torch.ops." << n->target() << "(";
        bool first = true;
        for (const Arg& a : n->args()) {
          body << (first ? "" : ", ") << format_arg(a, ArgStyle::python);
          first = false;
        }
        for (const Kwarg& kw : n->kwargs()) {
          body << (first ? "" : ", ") << kw.first << "=" << format_arg(kw.second, ArgStyle::python);
          first = false;
        }
        body << ")\n";
        break;
      }
    }
  }
  std::ostringstream out;
  out << "import torch\n\n\ndef forward(" << params << "):\n" << body.str();
  return out.str();
}

}  // namespace tj::graph
