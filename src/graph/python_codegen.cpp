// Graph -> Python source; see python_codegen.h.
#include "graph/python_codegen.h"

#include <sstream>

#include "graph/op_registry.h"
#include "graph/printer.h"

namespace tj::graph {

std::string python_code(const Graph& graph) {
  std::ostringstream body;
  std::string params = "self";
  // Nodes tagged grad_enabled (traced inside `with torch.no_grad():` and
  // the like) run under that grad mode; the caller's is restored at return.
  std::string grad_mode;  // the tag in force; "" = the caller's mode
  auto switch_grad_mode = [&](const std::string& tag) {
    if (tag == grad_mode) return;
    if (grad_mode.empty()) body << "    _grad_enabled = torch.is_grad_enabled()\n";
    body << "    torch._C._set_grad_enabled(" << (tag.empty() ? "_grad_enabled" : tag == "1" ? "True" : "False") << ")\n";
    grad_mode = tag;
  };
  for (const Node* n : graph.nodes()) {
    switch (n->kind()) {
      case NodeKind::placeholder: params += ", " + n->name(); break;
      case NodeKind::get_attr: body << "    " << n->name() << " = self." << n->target() << "\n"; break;
      case NodeKind::output:
        switch_grad_mode("");
        body << "    return " << format_arg(n->args().at(0), ArgStyle::python) << "\n";
        break;
      case NodeKind::call_function: {
        auto tag = n->meta().tags.find("grad_enabled");
        switch_grad_mode(tag == n->meta().tags.end() ? "" : tag->second);
        body << "    " << n->name() << " = ";
        if (n->op()->is_getitem) {
          body << format_arg(n->args().at(0), ArgStyle::python) << "[" << format_arg(n->args().at(1), ArgStyle::python)
               << "]\n";
          break;
        }
        if (n->op()->sym == SymOp::size) {
          body << format_arg(n->args().at(0), ArgStyle::python) << ".size(" << format_arg(n->args().at(1), ArgStyle::python)
               << ")\n";
          break;
        }
        if (n->op()->sym != SymOp::none) {
          static const char* const python_ops[] = {"", "", "+", "-", "*", "//", "%", "==", "!=", "<", "<=", ">", ">="};
          body << "int(" << format_arg(n->args().at(0), ArgStyle::python) << " "
               << python_ops[static_cast<size_t>(n->op()->sym)] << " " << format_arg(n->args().at(1), ArgStyle::python)
               << ")\n";
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
