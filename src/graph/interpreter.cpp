// Interpreter: op-by-op execution through the boxed dispatcher, prepared
// once per graph (see interpreter.h).
#include "graph/interpreter.h"

#include <stdexcept>
#include <unordered_map>

#include <ATen/ScalarOps.h>
#include <ATen/ops/zeros.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>

#include "graph/autograd_function.h"
#include "graph/boxing.h"
#include "graph/op_registry.h"
#include "graph/sym_ints.h"

namespace tj::graph {

namespace {
thread_local const Node* t_failed_node = nullptr;
}  // namespace

const Node* last_failed_node() { return t_failed_node; }

struct PreparedGraph::Step {
  enum class Kind { input, attr, call, getitem, sym, autograd_function, output };
  Kind kind = Kind::call;
  const Node* node = nullptr;
  size_t slot = 0;  // where the result goes (the node's position)
  // input: which input; getitem: the sequence's slot and the index.
  size_t input_index = 0;
  size_t source_slot = 0;
  int64_t index = 0;
  at::Tensor attr;
  // call: the argument stack with every constant already boxed; `patches`
  // put node values at their positions; `rewrap` rebuilds wrapped-number
  // tensors so no run sees another run's tensor. A node inside a list
  // argument (`cat([a, b])`) is boxed on every run instead (`box_per_run`).
  std::vector<c10::IValue> stack;
  std::vector<std::pair<size_t, size_t>> patches;  // (stack index, slot)
  std::vector<std::pair<size_t, c10::Scalar>> rewrap;
  bool box_per_run = false;
  std::optional<bool> grad_mode;  // a node traced under no_grad/enable_grad
  size_t num_returns = 1;
  // output: the slots of a flat tuple/list of nodes, else the generic path.
  std::optional<std::vector<size_t>> flat_output;
  // autograd_function: the body, its backward prepared once, and the
  // slots of the inputs, raw outputs and saved tensors.
  std::shared_ptr<const AutogradFunctionBody> body;
  std::shared_ptr<const PreparedGraph> backward;
  std::vector<size_t> input_slots, output_slots, saved_slots;
  // Slots whose value is dead once this step ran.
  std::vector<size_t> frees;
};

namespace {

using Step = PreparedGraph::Step;

bool has_nested_node(const Arg& arg) {
  if (!arg.is_list()) return false;
  bool found = false;
  arg.for_each_node([&](Node*) { found = true; });
  return found;
}

// Fills the call step's template stack and patches, or marks it boxed per run.
Status prepare_call(const Node& node, const std::unordered_map<const Node*, size_t>& slot_of, Step& step) {
  const auto& params = node.op()->schema().arguments();
  for (const Arg& a : node.args()) step.box_per_run |= has_nested_node(a);
  for (const auto& kw : node.kwargs()) step.box_per_run |= has_nested_node(kw.second);
  step.num_returns = node.op()->schema().returns().size();
  if (auto mode = node.meta().tags.grad_enabled) step.grad_mode = *mode;
  if (step.box_per_run) return ok_status();
  static const c10::IValue placeholder;
  auto stack = detail::box_arguments(node, [](const Node*) -> const c10::IValue& { return placeholder; });
  if (!stack) return stack.error();
  step.stack = std::move(*stack);
  for (size_t i = 0; i < params.size() && i < step.stack.size(); ++i) {
    const Arg* arg = i < node.args().size() ? &node.args()[i] : node.kwarg(params[i].name());
    if (arg && arg->is_node()) {
      step.patches.emplace_back(i, slot_of.at(arg->node()));
    } else if (step.stack[i].isTensor()) {
      step.rewrap.emplace_back(i, step.stack[i].toTensor().item());
    }
  }
  return ok_status();
}

std::optional<std::vector<size_t>> flat_slots(const Arg& arg, const std::unordered_map<const Node*, size_t>& slot_of) {
  std::vector<size_t> slots;
  if (arg.is_node()) return std::vector<size_t>{slot_of.at(arg.node())};
  if (!arg.is_list()) return std::nullopt;
  for (const Arg& item : arg.items()) {
    if (!item.is_node()) return std::nullopt;
    slots.push_back(slot_of.at(item.node()));
  }
  return slots;
}

at::Tensor wrapped_number(const c10::Scalar& s) {
  at::Tensor t = c10::scalar_to_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

void call(const Step& step, std::vector<c10::IValue>& stack) {
  const c10::OperatorHandle& handle = step.node->op()->handle();
  try {
    if (step.grad_mode) {
      c10::AutoGradMode grad_mode(*step.grad_mode);
      handle.callBoxed(stack);
    } else {
      handle.callBoxed(stack);
    }
  } catch (...) {
    t_failed_node = step.node;
    throw;
  }
}

c10::IValue returns_of(const Step& step, std::vector<c10::IValue>& stack) {
  if (step.num_returns == 1) return std::move(stack.at(0));
  std::vector<c10::IValue> items(std::make_move_iterator(stack.begin()), std::make_move_iterator(stack.end()));
  return c10::IValue(c10::ivalue::Tuple::create(std::move(items)));
}

Status prepare_autograd_function(const Graph& graph, const Node& node,
                                 const std::unordered_map<const Node*, size_t>& slot_of, Step& step) {
  if (auto st = check_autograd_function(graph, node); !st) return st;
  step.body = graph.autograd_function(node.args()[0].as<std::string>());
  auto backward = PreparedGraph::prepare(*step.body->backward);
  if (!backward) return Error{node.name() + ": backward of " + step.body->class_name + ": " + backward.error().message};
  step.backward = std::make_shared<const PreparedGraph>(std::move(*backward));
  AutogradFunctionArgs parts = autograd_function_args(node);
  for (const Node* n : parts.inputs) step.input_slots.push_back(slot_of.at(n));
  for (const Node* n : parts.outputs) step.output_slots.push_back(slot_of.at(n));
  for (const Node* n : parts.saved) step.saved_slots.push_back(slot_of.at(n));
  if (auto mode = node.meta().tags.grad_enabled) step.grad_mode = *mode;
  return ok_status();
}

// Attaches the custom Function's autograd node to the raw outputs; its
// backward runs the prepared body (the closure keeps the body alive).
c10::IValue run_autograd_function(const Step& step, const std::vector<c10::IValue>& slots) {
  auto tensors = [&](const std::vector<size_t>& at) {
    std::vector<at::Tensor> out;
    for (size_t slot : at) out.push_back(slots[slot].toTensor());
    return out;
  };
  BackwardRunner run = [backward = step.backward](const AutogradFunctionBody& body, std::vector<at::Tensor> in) {
    auto result = backward->run_tensors(in);
    if (!result) throw std::runtime_error("backward of " + body.class_name + ": " + result.error().message);
    return std::move(*result);
  };
  ZerosMaker zeros = [](const TensorMeta& m) {
    return at::zeros(m.sizes, at::TensorOptions().dtype(m.dtype).device(m.device));
  };
  std::optional<c10::AutoGradMode> mode;
  if (step.grad_mode) mode.emplace(*step.grad_mode);
  std::vector<at::Tensor> wrapped;
  try {
    wrapped = apply_autograd_function(step.body, tensors(step.input_slots), tensors(step.output_slots),
                                      tensors(step.saved_slots), std::move(run), std::move(zeros));
  } catch (...) {
    t_failed_node = step.node;
    throw;
  }
  std::vector<c10::IValue> items(wrapped.begin(), wrapped.end());
  return c10::IValue(c10::ivalue::Tuple::create(std::move(items)));
}

c10::IValue as_ivalue(const c10::IValue& v) { return v; }
c10::IValue as_ivalue(const at::Tensor& t) { return c10::IValue(t); }

}  // namespace

Expected<PreparedGraph> PreparedGraph::prepare(const Graph& graph) {
  std::vector<Node*> nodes = graph.nodes();
  std::unordered_map<const Node*, size_t> slot_of;
  std::unordered_map<const Node*, size_t> last_use;
  for (size_t i = 0; i < nodes.size(); ++i) {
    slot_of[nodes[i]] = i;
    for (Node* in : nodes[i]->inputs()) last_use[in] = i;
  }
  auto steps = std::make_shared<std::vector<Step>>(nodes.size());
  PreparedGraph prepared;
  prepared.graph_ = &graph;
  prepared.num_slots_ = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* node = nodes[i];
    Step& step = (*steps)[i];
    step.node = node;
    step.slot = i;
    switch (node->kind()) {
      case NodeKind::placeholder:
        step.kind = Step::Kind::input;
        step.input_index = prepared.num_inputs_++;
        break;
      case NodeKind::get_attr: {
        step.kind = Step::Kind::attr;
        const at::Tensor* t = graph.attr(node->target());
        if (!t) return Error{node->name() + ": no attribute '" + node->target() + "'"};
        step.attr = *t;
        break;
      }
      case NodeKind::call_function:
        if (is_sym(*node)) {
          step.kind = Step::Kind::sym;
        } else if (node->op()->is_autograd_function) {
          step.kind = Step::Kind::autograd_function;
          if (auto ok = prepare_autograd_function(graph, *node, slot_of, step); !ok) return ok.error();
        } else if (node->op()->is_getitem) {
          step.kind = Step::Kind::getitem;
          if (node->args().size() != 2 || !node->args()[0].is_node() || !node->args()[1].is<int64_t>())
            return Error{node->name() + ": getitem takes (node, int)"};
          step.source_slot = slot_of.at(node->args()[0].node());
          step.index = node->args()[1].as<int64_t>();
        } else {
          step.kind = Step::Kind::call;
          if (auto ok = prepare_call(*node, slot_of, step); !ok) return ok.error();
        }
        break;
      case NodeKind::output:
        step.kind = Step::Kind::output;
        step.flat_output = flat_slots(node->args().at(0), slot_of);
        break;
    }
    for (Node* in : node->inputs())
      if (last_use[in] == i && node->kind() != NodeKind::output) step.frees.push_back(slot_of.at(in));
  }
  prepared.steps_ = std::move(steps);
  return prepared;
}

template <class Input>
Expected<c10::IValue> PreparedGraph::run_impl(c10::ArrayRef<Input> inputs, std::vector<at::Tensor>* flat) const {
  t_failed_node = nullptr;
  if (inputs.size() != num_inputs_)
    return Error{"graph takes " + std::to_string(num_inputs_) + " inputs, " + std::to_string(inputs.size()) + " given"};
  std::vector<c10::IValue> slots(num_slots_);
  auto slot_map = [&]() {
    std::unordered_map<const Node*, size_t> m;
    for (const Step& s : *steps_) m[s.node] = s.slot;
    return m;
  };
  std::optional<std::unordered_map<const Node*, size_t>> slot_of;  // built only when needed
  auto value_of = [&](const Node* n) -> const c10::IValue& {
    if (!slot_of) slot_of = slot_map();
    return slots[slot_of->at(n)];
  };
  for (const Step& step : *steps_) {
    switch (step.kind) {
      case Step::Kind::input: slots[step.slot] = as_ivalue(inputs[step.input_index]); break;
      case Step::Kind::attr: slots[step.slot] = step.attr; break;
      case Step::Kind::getitem: {
        auto v = detail::run_getitem(*step.node, value_of);
        if (!v) return v.error();
        slots[step.slot] = std::move(*v);
        break;
      }
      case Step::Kind::sym: {
        SizeOf size_of = [&](const Node& t, int64_t dim) -> std::optional<int64_t> {
          const c10::IValue& v = value_of(&t);
          if (!v.isTensor() || dim < -v.toTensor().dim() || dim >= v.toTensor().dim()) return std::nullopt;
          return v.toTensor().size(dim);
        };
        IntOf int_of = [&](const Node& n) -> std::optional<int64_t> {
          const c10::IValue& v = value_of(&n);
          return v.isInt() ? std::optional<int64_t>(v.toInt()) : std::nullopt;
        };
        ItemOf item_of = [&](const Node& t) -> std::optional<int64_t> {
          const c10::IValue& v = value_of(&t);
          if (!v.isTensor() || v.toTensor().numel() != 1) return std::nullopt;
          return v.toTensor().item<int64_t>();
        };
        auto v = eval_sym(*step.node, size_of, int_of, item_of);
        if (!v) return v.error();
        slots[step.slot] = c10::IValue(*v);
        break;
      }
      case Step::Kind::autograd_function:
        slots[step.slot] = run_autograd_function(step, slots);
        break;
      case Step::Kind::call: {
        std::vector<c10::IValue> stack;
        if (step.box_per_run) {
          auto boxed = detail::box_arguments(*step.node, value_of);
          if (!boxed) return boxed.error();
          stack = std::move(*boxed);
        } else {
          stack = step.stack;
          for (const auto& [at, slot] : step.patches) stack[at] = slots[slot];
          for (const auto& [at, scalar] : step.rewrap) stack[at] = wrapped_number(scalar);
        }
        call(step, stack);
        slots[step.slot] = returns_of(step, stack);
        break;
      }
      case Step::Kind::output:
        if (flat && step.flat_output) {
          bool all_tensors = true;
          for (size_t slot : *step.flat_output) all_tensors &= slots[slot].isTensor();
          if (all_tensors) {
            flat->reserve(step.flat_output->size());
            for (size_t slot : *step.flat_output) flat->push_back(slots[slot].toTensor());
            return c10::IValue();
          }
        }
        return detail::arg_to_ivalue(step.node->args().at(0), value_of);
    }
    for (size_t slot : step.frees) slots[slot] = c10::IValue();
  }
  return Error{"graph has no output node"};
}

Expected<c10::IValue> PreparedGraph::run(const std::vector<c10::IValue>& inputs) const {
  return run_impl<c10::IValue>(inputs, nullptr);
}

Expected<std::vector<at::Tensor>> PreparedGraph::run_tensors(c10::ArrayRef<at::Tensor> inputs) const {
  std::vector<at::Tensor> flat;
  auto result = run_impl<at::Tensor>(inputs, &flat);
  if (!result) return result.error();
  if (!flat.empty() || (result->isNone() && !steps_->empty() && steps_->back().flat_output)) return flat;
  return flatten_tensors(*result);
}

Expected<c10::IValue> interpret(const Graph& graph, const std::vector<c10::IValue>& inputs) {
  t_failed_node = nullptr;
  auto prepared = PreparedGraph::prepare(graph);
  if (!prepared) return prepared.error();
  return prepared->run(inputs);
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
  auto prepared = PreparedGraph::prepare(graph);
  if (!prepared) return prepared.error();
  return prepared->run_tensors(inputs);
}

std::vector<at::Tensor> interpret_or_throw(const Graph& graph, c10::ArrayRef<at::Tensor> inputs) {
  auto result = interpret_tensors(graph, inputs.vec());
  if (!result.ok()) throw std::runtime_error(result.error().message);
  return std::move(*result);
}

}  // namespace tj::graph
