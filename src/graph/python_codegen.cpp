// Graph -> Python source; see python_codegen.h.
#include "graph/python_codegen.h"

#include <sstream>

#include "graph/autograd_function.h"
#include "graph/op_registry.h"
#include "graph/printer.h"

namespace tj::graph {

namespace {

std::string autograd_function_class(const std::string& body_name) { return "_tj_" + body_name; }

// `def <name>(self, <placeholders>):` and one statement per node.
std::string python_function(const Graph& graph, const std::string& name) {
  std::ostringstream body;
  std::string params = "self";
  // Nodes tagged grad_enabled (traced inside `with torch.no_grad():` and
  // the like) run under that grad mode; the caller's is restored at return.
  std::optional<bool> grad_mode;  // the tag in force; unset = the caller's mode
  auto switch_grad_mode = [&](std::optional<bool> tag) {
    if (tag == grad_mode) return;
    if (!grad_mode) body << "    _grad_enabled = torch.is_grad_enabled()\n";
    body << "    torch._C._set_grad_enabled(" << (!tag ? "_grad_enabled" : *tag ? "True" : "False") << ")\n";
    grad_mode = tag;
  };
  for (const Node* n : graph.nodes()) {
    switch (n->kind()) {
      case NodeKind::placeholder: params += ", " + n->name(); break;
      case NodeKind::get_attr: body << "    " << n->name() << " = self." << n->target() << "\n"; break;
      case NodeKind::output:
        switch_grad_mode(std::nullopt);
        body << "    return " << format_arg(n->args().at(0), ArgStyle::python) << "\n";
        break;
      case NodeKind::call_function: {
        switch_grad_mode(n->meta().tags.grad_enabled);
        body << "    " << n->name() << " = ";
        if (n->op()->is_getitem) {
          body << format_arg(n->args().at(0), ArgStyle::python) << "[" << format_arg(n->args().at(1), ArgStyle::python)
               << "]\n";
          break;
        }
        if (n->op()->is_autograd_function) {
          body << autograd_function_class(n->args().at(0).as<std::string>()) << ".apply(";
          bool first = true;
          for (size_t i = 1; i < 4; ++i)
            for (const Arg& a : n->args().at(i).items()) {
              body << (first ? "" : ", ") << format_arg(a, ArgStyle::python);
              first = false;
            }
          body << ")\n";
          break;
        }
        if (n->op()->sym == SymOp::size) {
          body << format_arg(n->args().at(0), ArgStyle::python) << ".size(" << format_arg(n->args().at(1), ArgStyle::python)
               << ")\n";
          break;
        }
        if (n->op()->sym == SymOp::item) {  // a 0-d tensor's int, read when the graph runs
          body << "int(" << format_arg(n->args().at(0), ArgStyle::python) << ".item())\n";
          break;
        }
        if (n->op()->sym != SymOp::none) {
          // indexed by SymOp: none, size and item have no operator
          static const char* const python_ops[] = {"", "", "", "+", "-", "*", "//", "%", "**", "==", "!=", "<", "<=", ">", ">="};
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
  return "def " + name + "(" + params + "):\n" + body.str();
}

// A custom Function whose forward returns the outputs it is given (the
// graph computed them) and whose backward runs the body's function.
std::string python_autograd_function(const std::string& name, const AutogradFunctionBody& body) {
  std::string cls = autograd_function_class(name);
  std::ostringstream out;
  out << python_function(*body.backward, cls + "_backward") << "\n\n";
  out << "class " << cls << "(torch.autograd.Function):  # " << body.class_name << "\n";
  out << "    @staticmethod\n    def forward(ctx, *args):\n";
  out << "        outputs = args[" << body.num_inputs << ":" << body.num_inputs + body.num_outputs << "]\n";
  out << "        ctx.save_for_backward(*args[" << body.num_inputs + body.num_outputs << ":])\n";
  std::string non_diff;
  for (size_t j = 0; j < body.non_differentiable.size(); ++j)
    if (body.non_differentiable[j]) non_diff += "outputs[" + std::to_string(j) + "], ";
  if (!non_diff.empty()) out << "        ctx.mark_non_differentiable(" << non_diff << ")\n";
  out << "        return tuple(outputs)\n\n";
  out << "    @staticmethod\n    def backward(ctx, *grads):\n";
  out << "        result = " << cls << "_backward(None, *ctx.saved_tensors, *grads)\n";
  out << "        return (";
  for (int k : body.grad_of_input) out << (k < 0 ? "None" : "result[" + std::to_string(k) + "]") << ", ";
  out << ") + (None,) * " << body.num_outputs + body.num_saved << "\n";
  return out.str();
}

}  // namespace

std::string python_code(const Graph& graph) {
  std::ostringstream out;
  out << "import torch\n\n\n";
  for (const std::string& name : graph.autograd_function_names())
    out << python_autograd_function(name, *graph.autograd_function(name)) << "\n\n";
  out << python_function(graph, "forward");
  return out.str();
}

}  // namespace tj::graph
