// Interpreter: op-by-op execution through the boxed dispatcher.
#include "graph/interpreter.h"

#include <unordered_map>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>

#include "graph/boxing.h"
#include "graph/op_registry.h"

namespace tj::graph {

namespace {
thread_local const Node* t_failed_node = nullptr;
}  // namespace

const Node* last_failed_node() { return t_failed_node; }

Expected<c10::IValue> interpret(const Graph& graph, const std::vector<c10::IValue>& inputs) {
  t_failed_node = nullptr;
  std::vector<Node*> nodes = graph.nodes();
  // Position of each node's last use, to drop values early.
  std::unordered_map<const Node*, size_t> last_use;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (Node* in : nodes[i]->inputs()) last_use[in] = i;

  std::unordered_map<const Node*, c10::IValue> env;
  detail::ValueOf value_of = [&](const Node* n) -> const c10::IValue& {
    auto it = env.find(n);
    assert(it != env.end() && "interpreter: a node used before it ran (run lint)");
    return it->second;
  };

  size_t next_input = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* node = nodes[i];
    switch (node->kind()) {
      case NodeKind::placeholder:
        if (next_input >= inputs.size())
          return Error{"graph takes more inputs than the " + std::to_string(inputs.size()) + " given"};
        env[node] = inputs[next_input++];
        break;
      case NodeKind::get_attr: {
        const at::Tensor* t = graph.attr(node->target());
        if (!t) return Error{node->name() + ": no attribute '" + node->target() + "'"};
        env[node] = *t;
        break;
      }
      case NodeKind::call_function: {
        if (node->op()->is_getitem) {
          auto v = detail::run_getitem(*node, value_of);
          if (!v) return v.error();
          env[node] = std::move(*v);
          break;
        }
        auto stack = detail::box_arguments(*node, value_of);
        if (!stack) return stack.error();
        // An op that fails throws what ATen threw (see interpreter.h). A
        // node traced inside `with torch.no_grad():` (or enable_grad)
        // carries the grad mode it runs under.
        const auto& tags = node->meta().tags;
        auto mode = tags.empty() ? tags.end() : tags.find("grad_enabled");
        try {
          if (mode != tags.end()) {
            c10::AutoGradMode grad_mode(mode->second == "1");
            node->op()->handle().callBoxed(*stack);
          } else {
            node->op()->handle().callBoxed(*stack);
          }
        } catch (...) {
          t_failed_node = node;
          throw;
        }
        env[node] = detail::unbox_returns(*node, *stack);
        break;
      }
      case NodeKind::output:
        if (next_input != inputs.size())
          return Error{"graph takes " + std::to_string(next_input) + " inputs, " + std::to_string(inputs.size()) +
                       " given"};
        return detail::arg_to_ivalue(node->args().at(0), value_of);
    }
    for (Node* in : node->inputs())
      if (last_use[in] == i) env.erase(in);
  }
  return Error{"graph has no output node"};
}

static void flatten_into(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten_into(e, out);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) flatten_into(e, out);
  }
}

std::vector<at::Tensor> flatten_tensors(const c10::IValue& value) {
  std::vector<at::Tensor> out;
  flatten_into(value, out);
  return out;
}

Expected<std::vector<at::Tensor>> interpret_tensors(const Graph& graph, const std::vector<at::Tensor>& inputs) {
  std::vector<c10::IValue> in(inputs.begin(), inputs.end());
  auto result = interpret(graph, in);
  if (!result) return result.error();
  return flatten_tensors(*result);
}

}  // namespace tj::graph
