// `loss.backward()` and `torch.autograd.backward(loss)` traced into the
// graph (issue 42, item 3): a training step's forward, backward, clipping
// and optimizer update become one graph.
//
// The leaves are the graph's inputs that require grad and that the loss
// reaches (a walk from the loss through the nodes that require grad). One
// `tracejit::autograd_grad` node (graph/autograd_grad.h) computes their
// gradients with LibTorch's engine; then each leaf's `.grad` is written as
// eager's AccumulateGrad writes it, after the leaf's hooks (registered
// before the frame: guarded, traced on the gradient): None -> the gradient (a side effect
// replayed after the graph; later reads in the trace see it), a tensor ->
// `grad.add_(g)` under no_grad. `retain_graph=True` keeps the nodes for a
// later backward through them (the node's retain_graph; a write in place
// between the two is refused, as eager's version check could raise).
// Whatever could make eager do otherwise is a graph break before the call,
// with its reason: create_graph, inputs=, a leaf with autograd history from before the
// frame (or a view), a custom autograd.Function or an op under no_grad on
// the path, sparse gradients, a `.grad` that requires grad or is sparse, a
// second backward through the same nodes, and (checked when the graph is
// finished: `note_backward_escapes`) a tensor requiring grad that outlives
// the graph, whose grad_fn would be eager's freed graph: the trace is then
// made again with the break at the backward.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

#include "graph/autograd_grad.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "support/py_gil.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/attr_writes.h"
#include "tracer/backward.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

namespace {

bool is_none_value(const ValuePtr& v) { return !v || (v->is_constant() && v->obj.get() == Py_None); }
bool is_false_value(const ValuePtr& v) {
  return is_none_value(v) || (v->is_constant() && v->obj.get() == Py_False);
}

// Binds `args`/`kwargs` to `names` (positional after any already bound);
// false when an argument is unknown or given twice.
bool bind(const std::vector<std::string>& names, const std::vector<ValuePtr>& args, const Kwargs& kwargs,
          std::vector<ValuePtr>& out, std::string& why) {
  out.assign(names.size(), nullptr);
  if (args.size() > names.size()) return why = "too many arguments", false;
  for (size_t i = 0; i < args.size(); ++i) out[i] = args[i];
  for (const auto& [k, v] : kwargs) {
    auto it = std::find(names.begin(), names.end(), k);
    if (it == names.end() || out[static_cast<size_t>(it - names.begin())])
      return why = "argument '" + k + "'", false;
    out[static_cast<size_t>(it - names.begin())] = v;
  }
  return true;
}

// The engine releases the GIL around its work; the interpreter may hold it.
void install_gil_release() {
  static bool installed = [] {
    graph::set_autograd_grad_gil_release([](const std::function<void()>& body) {
      if (!PyGILState_Check()) return body();
      ReleasedGil released;
      body();
    });
    return true;
  }();
  (void)installed;
}

bool arg_is_true(const graph::Node& n, const char* name, size_t position) {
  if (const graph::Arg* a = n.kwarg(name)) return a->is<bool>() && a->as<bool>();
  return n.args().size() > position && n.args()[position].is<bool>() && n.args()[position].as<bool>();
}

// Why a node on the backward's path keeps the trace from promising eager's
// gradients, or "".
std::string path_refusal(const graph::Node& n) {
  if (n.kind() == graph::NodeKind::get_attr) return "an attribute tensor requiring grad (" + n.target() + ")";
  if (n.kind() != graph::NodeKind::call_function || !n.op()) return "";
  const graph::OpInfo& op = *n.op();
  if (op.is_autograd_function)
    return "a custom autograd.Function (which gradients its backward leaves None is known only when it runs)";
  if (op.traits.backward) return "";  // its results require no grad: never on a path
  if (n.meta().tags.grad_enabled == false)
    return n.target() + " made under no_grad on a tensor that requires grad";
  const std::string base = op.base_name();
  if (base == "embedding" && arg_is_true(n, "sparse", 4)) return "embedding(sparse=True) (a sparse gradient)";
  if ((base == "embedding_bag" || base == "_embedding_bag") && arg_is_true(n, "sparse", 5))
    return "embedding_bag(sparse=True) (a sparse gradient)";
  return "";
}

// The input a chain of in-place ops made under no_grad updated (an
// optimizer's step before a second forward: the leaf is still the
// parameter, at a new version), or null.
graph::Node* updated_input(graph::Node* n) {
  for (int depth = 0; depth < 10000; ++depth) {
    if (n->kind() == graph::NodeKind::placeholder) return n;
    if (n->kind() != graph::NodeKind::call_function || !n->op() || !n->op()->traits.inplace || n->args().empty() ||
        !n->args()[0].is_node())
      return nullptr;
    if (n->meta().tags.grad_enabled != false) return nullptr;
    n = n->args()[0].node();
  }
  return nullptr;
}

bool requires_grad(const graph::Node* n) {
  for (const graph::TensorMeta& m : n->meta().fake)
    if (m.requires_grad) return true;
  return false;
}

// Why the tensor a leaf's hook returned cannot become its gradient as
// eager's AccumulateGrad would take it, or "": it must be a tensor of the
// gradient's size, dtype and strides (the layout contract, which eager
// would otherwise meet with a copy) computed in the graph, not a view and
// not (through in-place ops) an input or attribute tensor (eager would
// copy what something else holds; storing it would alias).
std::string hooked_gradient_refusal(const ValuePtr& hooked, const ValuePtr& grad) {
  if (!hooked->is_tensor() || is_python_number(hooked) || !hooked->node) return "something other than a tensor";
  const graph::TensorMeta& h = hooked->meta();
  const graph::TensorMeta& g = grad->meta();
  if (h.sizes != g.sizes || h.dtype != g.dtype || h.device != g.device)
    return "a tensor of another size, dtype or device (eager raises)";
  if (h.strides != g.strides || h.requires_grad) return "a tensor laid out otherwise or requiring grad";
  graph::Node* n = hooked->node;
  for (int depth = 0; depth < 10000 && n->kind() == graph::NodeKind::call_function && n->op() &&
                      n->op()->traits.inplace && !n->args().empty() && n->args()[0].is_node();
       ++depth)
    n = n->args()[0].node();
  if (n->kind() != graph::NodeKind::call_function || !n->op() || n->op()->traits.view)
    return "a view, or a tensor something else holds (eager would copy it)";
  return "";
}

// A backward through nodes an earlier backward(retain_graph=True) kept:
// eager raises when a tensor its nodes saved was written in place since
// (the version check), which the functional graph would not see. Any
// in-place op after the first retaining backward, other than the `.grad`
// accumulations, is refused; "" when there is none.
std::string retained_graph_written(const graph::Graph& g, const TraceShared& shared) {
  bool after = false;
  for (const graph::Node* n : g.nodes()) {
    after |= n == shared.first_retaining;
    if (!after || n->kind() != graph::NodeKind::call_function || !n->op() || !n->op()->traits.inplace ||
        shared.grad_accumulations.count(n))
      continue;
    return "a backward through a retained graph after an in-place write (" + n->target() +
           ") since the retaining backward (eager raises if it wrote a tensor the graph saved)";
  }
  return "";
}

}  // namespace

namespace {

// The arguments of Tensor.backward / torch.autograd.backward.
struct BackwardArgs {
  ValuePtr loss, gradient, retain_graph, create_graph, inputs;
};

// Binds a backward call's arguments; the refusal ("" when bound).
std::string bind_backward(bool tensor_method, const std::vector<ValuePtr>& args, const Kwargs& kwargs, BackwardArgs& out) {
  std::vector<ValuePtr> bound;
  std::string why;
  if (tensor_method) {
    if (!bind({"self", "gradient", "retain_graph", "create_graph", "inputs"}, args, kwargs, bound, why))
      return "cannot bind " + why;
    out = {bound[0], bound[1], bound[2], bound[3], bound[4]};
    return "";
  }
  if (!bind({"tensors", "grad_tensors", "retain_graph", "create_graph", "grad_variables", "inputs"}, args, kwargs, bound,
            why))
    return "cannot bind " + why;
  out = {bound[0], bound[1], bound[2], bound[3], bound[5]};
  if (!is_none_value(bound[4])) return "grad_variables= (deprecated) is not traced";
  // One tensor, or a sequence of one tensor (and of one gradient).
  auto single = [](ValuePtr& v) {
    if (v && v->is_sequence() && v->items.size() == 1) v = v->items[0];
  };
  single(out.loss);
  single(out.gradient);
  return "";
}

// The nodes between a backward's root and its leaves.
struct BackwardPath {
  std::vector<graph::Node*> path;    // the nodes the gradient flows through
  std::vector<graph::Node*> leaves;  // the placeholders it reaches, in input order
};

// How a walk names what it starts from in its refusals: `root` ("loss",
// "output"), what follows the name of a tensor made to require grad in
// the frame, and whether reaching no input is a refusal of the walk's own.
struct WalkWords {
  const char* root;
  const char* made_leaf;
  bool needs_a_leaf;
};
constexpr WalkWords kBackwardWalk{"loss", ", a leaf whose .grad the graph does not keep", true};
constexpr WalkWords kGradWalk{"output", "", false};

// Walks from `root` to the leaves, as backward walks it: placeholders
// requiring grad (or their updates in place under no_grad) that `root`
// reaches through nodes requiring grad. The refusal ("" when fine).
std::string walk_to_leaves(graph::Node* root, const graph::Graph& g, const TraceShared& shared, const WalkWords& words,
                           BackwardPath& out) {
  std::vector<graph::Node*>& path = out.path;
  std::vector<graph::Node*>& leaves = out.leaves;
  std::set<graph::Node*> seen{root};
  std::vector<graph::Node*> todo{root};
  bool through_retained = false;
  while (!todo.empty()) {
    graph::Node* n = todo.back();
    todo.pop_back();
    if (graph::Node* input = updated_input(n)) {
      if (std::find(leaves.begin(), leaves.end(), input) == leaves.end()) leaves.push_back(input);
      continue;
    }
    if (std::string r = path_refusal(*n); !r.empty())
      return std::string("the ") + words.root + " is computed through " + r;
    // A tensor made to require grad in the frame (`requires_grad=True`,
    // `requires_grad_()`) is a leaf of eager's graph whose .grad the graph
    // does not keep.
    const std::vector<graph::Node*> node_inputs = n->inputs();
    if (std::none_of(node_inputs.begin(), node_inputs.end(), requires_grad))
      return std::string("the ") + words.root + " reaches a tensor made to require grad in the frame (" + n->target() +
             ")" + words.made_leaf;
    if (shared.backwarded.count(n))
      return "a second backward through nodes an earlier backward of the frame freed (eager raises unless "
             "their saved tensors are none)";
    through_retained |= shared.retained.count(n) > 0;
    path.push_back(n);
    for (graph::Node* in : n->inputs())
      if (requires_grad(in) && seen.insert(in).second) todo.push_back(in);
  }
  if (words.needs_a_leaf) {
    std::sort(leaves.begin(), leaves.end(), [&](graph::Node* a, graph::Node* b) {
      return shared.placeholder_index.at(a) < shared.placeholder_index.at(b);
    });
    if (leaves.empty()) return std::string("the ") + words.root + " reaches no input that requires grad";
  }
  if (through_retained) {
    if (std::string why_not = retained_graph_written(g, shared); !why_not.empty()) return why_not;
  }
  return "";
}

// Each leaf of a backward: a leaf tensor of the frame's inputs, with its
// hooks; its `.grad` as the trace sees it now.
struct LeafState {
  std::vector<ValuePtr> values, grads_before;
  std::vector<std::vector<ValuePtr>> hooks;
};

// Reads and guards the leaves' autograd state. False when the trace cannot
// go on: with `refusal` set for the caller to refuse, or the failure set.
bool read_leaves(TraceContext t, const TraceShared& shared, const std::vector<graph::Node*>& leaves,
                 LeafState& out, std::string& refusal) {
  for (graph::Node* ph : leaves) {
    const SourcePtr& source = shared.input_sources.at(static_cast<size_t>(shared.placeholder_index.at(ph)));
    auto it = source ? shared.wrapped.find(source->to_string()) : shared.wrapped.end();
    ValuePtr value = it == shared.wrapped.end() ? nullptr : it->second;
    PyObject* real = value ? t.input_tensor_object(value) : nullptr;
    if (!real) return refusal = "the loss reaches an input requiring grad that is not a tensor read from the frame", false;
    const std::string name = source->to_string();
    if (leaf_requires_grad_toggled(value))  // eager's AccumulateGrad skips it; the graph's autograd does not
      return refusal = name + ".requires_grad was set False in the frame after the loss read it (its gradient "
                              "is not accumulated: not modelled)", false;
    PyRef grad_fn = PyRef::steal(PyObject_GetAttrString(real, "grad_fn"));
    PyRef hooks = PyRef::steal(PyObject_GetAttrString(real, "_backward_hooks"));
    PyRef layout = PyRef::steal(PyObject_GetAttrString(real, "layout"));
    if (!grad_fn || !hooks || !layout) return refusal = "cannot read the autograd state of " + name, false;
    if (grad_fn.get() != Py_None)
      return refusal = name + " has autograd history from before the frame (a non-leaf or a view): the gradient "
                           "would flow past the graph", false;
    if (layout.get() != cached_module_attr("torch", "strided")) return refusal = name + " is not a strided tensor", false;
    t.add_guard(Guard{GuardKind::const_eq, Source::attr(source, "grad_fn"), PyRef::borrow(Py_None)});
    // Its hooks (register_hook before the frame): the table's keys and each
    // hook guarded (read_module_hooks reads any object's table); each is
    // traced on the gradient before it is accumulated, as AccumulateGrad's
    // pre-hooks run in eager.
    std::vector<ValuePtr> hooks_of_leaf;
    if (hooks.get() == Py_None)
      t.add_guard(Guard{GuardKind::const_eq, Source::attr(source, "_backward_hooks"), PyRef::borrow(Py_None)});
    else if (!PyDict_Check(hooks.get()))
      return refusal = name + "._backward_hooks is not a dict", false;
    else if (!t.read_module_hooks(real, source, "_backward_hooks", &hooks_of_leaf))
      return false;
    out.hooks.push_back(std::move(hooks_of_leaf));
    ValuePtr grad = t.tensor_attribute(value, "grad");
    if (!grad) return false;
    if (!is_none_value(grad)) {
      if (!grad->is_tensor() || is_python_number(grad)) return refusal = name + ".grad is not a tensor", false;
      if (grad->meta().requires_grad) return refusal = name + ".grad requires grad", false;
      if (grad->obj || grad->source) {
        PyObject* real_grad = t.input_tensor_object(grad);
        PyRef grad_layout = PyRef::steal(real_grad ? PyObject_GetAttrString(real_grad, "layout") : nullptr);
        if (!grad_layout || grad_layout.get() != cached_module_attr("torch", "strided"))
          return refusal = name + ".grad is not a strided tensor", false;
      }
    }
    out.values.push_back(value);
    out.grads_before.push_back(grad);
  }
  return true;
}

// AccumulateGrad, per leaf, with grad mode off as in the engine: gradient
// `i` (item i of `node`) through leaf i's hooks, then its `.grad` written
// (None before) or added to in place (`accumulations`: those add_ nodes).
// False as read_leaves.
bool accumulate_grads(TraceContext t, graph::Node* node, const LeafState& leaves,
                      std::vector<const graph::Node*>& accumulations, std::string& refusal) {
  graph::Graph& g = t.graph();
  const bool saved_mode = grad_mode_enabled();
  set_grad_mode_enabled(false);
  bool ok = true;
  for (size_t i = 0; i < leaves.values.size() && ok; ++i) {
    graph::Node* item = g.call(graph::OpRegistry::instance().getitem(), {graph::Arg(node), graph::Arg(static_cast<int64_t>(i))});
    item->meta().set_tensor(node->meta().fake[i]);
    item->meta().loc = node->meta().loc;
    ValuePtr grad = Value::tensor(item);
    for (const ValuePtr& hook : leaves.hooks[i]) {
      ValuePtr hooked = t.call_value(hook, {grad}, {});
      if (!hooked) {
        ok = false;
        break;
      }
      if (is_none_value(hooked)) continue;
      if (std::string why_not = hooked_gradient_refusal(hooked, grad); !why_not.empty()) {
        set_grad_mode_enabled(saved_mode);
        return refusal = "a hook of a leaf returned " + why_not, false;
      }
      grad = hooked;
    }
    if (!ok) break;
    if (is_none_value(leaves.grads_before[i])) ok = store_tensor_attr(t, leaves.values[i], "grad", grad);
    else if (ValuePtr sum = t.call_aten("aten::add_", {leaves.grads_before[i], grad}); !sum) ok = false;
    else if (sum->node) accumulations.push_back(sum->node);
  }
  set_grad_mode_enabled(saved_mode);
  return ok;
}

// How backward and autograd.grad name what backward_root reads.
struct RootWords {
  const char* scalar_sizes;    // note_sizes_read: an implicit gradient needs a one-element output
  const char* gradient_sizes;  // note_sizes_read: a given gradient's sizes must match
  const char* gradient;        // the argument's name in refusals
};

// The graph node a backward starts from (`loss`) and its incoming gradient
// node (null: implicit, ones), checked as eager checks them; the refusal,
// "" when both are fine.
std::string backward_root(TraceContext t, const ValuePtr& loss, const ValuePtr& gradient,
                          const RootWords& words, graph::Node*& root, graph::Node*& grad_output) {
  const graph::TensorMeta& lm = loss->meta();
  if (!lm.requires_grad) return "of a tensor that does not require grad (eager raises)";
  root = loss->node;
  if (!root || root->kind() != graph::NodeKind::call_function)
    return "of a tensor made before the frame (its autograd graph is not the graph's)";
  grad_output = nullptr;
  if (is_none_value(gradient)) {
    if (!lm.sizes.empty()) t.note_sizes_read(words.scalar_sizes);
    int64_t numel = 1;
    for (int64_t s : lm.sizes) numel *= s;
    if (numel != 1) return "grad can be implicitly created only for scalar outputs (eager raises)";
    return "";
  }
  if (!gradient->is_tensor() || is_python_number(gradient)) return std::string("a ") + words.gradient + " that is not a tensor";
  const graph::TensorMeta& gm = gradient->meta();
  t.note_sizes_read(words.gradient_sizes);
  if (gm.sizes != lm.sizes || gm.dtype != lm.dtype || gm.device != lm.device || gm.requires_grad)
    return std::string("a ") + words.gradient + " of another size, dtype or device, or one that requires grad";
  grad_output = gradient->node;
  return "";
}

// The autograd_grad node of a traced backward or autograd.grad: `root`'s
// gradients for `leaves` (given `grad_output`), its metas inferred and one
// per leaf (`leaves_are` names them in a refusal). None, with `why`, when the operator or the metas fail (the node
// is then erased again).
graph::Node* autograd_grad_node(graph::Graph& g, graph::SourceLoc loc, graph::Node* root,
                                std::vector<graph::Arg> leaves, graph::Node* grad_output, bool retain,
                                const char* leaves_are, std::string& why) {
  graph::register_autograd_grad_op();
  install_gil_release();
  auto op = graph::OpRegistry::instance().get(graph::kAutogradGradOp);
  if (!op) return why = "the tracejit::autograd_grad operator is not registered: " + op.error().message, nullptr;
  std::vector<graph::Kwarg> node_kwargs;
  if (retain) node_kwargs.emplace_back("retain_graph", graph::Arg(true));
  const size_t count = leaves.size();
  graph::Node* node = g.call(**op,
                             {graph::Arg(root), graph::Arg::list(std::move(leaves)),
                              grad_output ? graph::Arg(grad_output) : graph::Arg()},
                             std::move(node_kwargs), "autograd_grad");
  node->meta().loc = std::move(loc);
  if (auto st = graph::infer_meta(g, *node); !st.ok()) {
    g.erase(node);
    return why = "the gradients' metas: " + st.error().message, nullptr;
  }
  if (node->meta().fake.size() != count) {
    g.erase(node);
    return why = std::string("the gradients' metas do not match the ") + leaves_are, nullptr;
  }
  return node;
}

// create_graph=True: gradients with autograd history. A compiled graph's
// backward is not differentiable, so neither a graph break before the call
// (its loss would be the compiled graph's output) nor a graph keeps eager's
// result: the whole frame runs unchanged.
ValuePtr refuse_in_whole_frame(TraceContext cx, const std::string& who) {
  cx.shared().run_unchanged = true;
  return cx.unsupported(who + ": create_graph=True (a differentiable backward: gradients with autograd history) "
                              "is not traced: the frame runs unchanged"),
         nullptr;
}

// What a traced backward (or autograd.grad) through `path`, ending at
// `node`, leaves for later ones: the nodes it freed or retained.
void note_backward_ran(TraceContext cx, const std::vector<graph::Node*>& path, graph::Node* node, bool retain) {
  TraceShared& shared = cx.shared();
  if (retain) {
    shared.retained.insert(path.begin(), path.end());
    if (!shared.first_retaining) shared.first_retaining = node;
  } else {
    shared.backwarded.insert(path.begin(), path.end());
  }
  if (shared.backward_root_ip < 0) shared.backward_root_ip = static_cast<int>(cx.root_instruction_index());
}

// autograd.grad's inputs: a tensor, a sequence of them, or an iterator
// (model.parameters(), consumed); nullopt with the refusal set.
std::optional<std::vector<ValuePtr>> grad_inputs(TraceContext cx, const ValuePtr& inputs, std::string& refusal) {
  std::vector<ValuePtr> wanted;
  if (inputs && inputs->is_tensor()) {
    wanted.push_back(inputs);
  } else if (inputs && inputs->is_sequence()) {
    wanted = inputs->items;
  } else if (inputs && inputs->kind == ValueKind::iterator) {  // model.parameters()
    wanted.assign(inputs->items.begin() + static_cast<long>(inputs->position), inputs->items.end());
    cx.consume(inputs, wanted.size());
  } else {
    return refusal = "inputs that are not a tensor or a sequence of tensors", std::nullopt;
  }
  if (wanted.empty()) return refusal = "no inputs (eager raises)", std::nullopt;
  return wanted;
}

// autograd.grad's leaves: each wanted input a strided tensor the frame was
// given (or its update in place under no_grad), reached by the output and
// without hooks (guarded). False with the refusal set.
bool grad_leaf_args(TraceContext cx, const std::vector<ValuePtr>& wanted, const std::set<graph::Node*>& reached,
                    std::vector<graph::Arg>& leaf_args, std::string& refusal) {
  TraceShared& shared = cx.shared();
  for (const ValuePtr& v : wanted) {
    if (!v->is_tensor() || is_python_number(v) || !v->node) return refusal = "an input that is not a tensor", false;
    graph::Node* ph = updated_input(v->node);
    if (!ph) {
      // After a break it would be an output of the graph, off the path
      // from the compiled output to the inputs: eager's frame only.
      shared.run_unchanged = true;
      return refusal = "an input computed in the frame (an intermediate tensor) is not traced: the frame runs unchanged",
             false;
    }
    if (!reached.count(ph))
      return refusal = "an input the output does not reach (eager raises, or gives None with allow_unused=True)", false;
    const SourcePtr& source = shared.input_sources.at(static_cast<size_t>(shared.placeholder_index.at(ph)));
    PyObject* real = cx.input_tensor_object(v);
    if (!real || !source) return refusal = "an input that is not a tensor read from the frame", false;
    PyRef hooks = PyRef::steal(PyObject_GetAttrString(real, "_backward_hooks"));
    PyRef layout = PyRef::steal(PyObject_GetAttrString(real, "layout"));
    if (!hooks || !layout) return refusal = "cannot read the autograd state of " + source->to_string(), false;
    if (hooks.get() != Py_None)
      return refusal = source->to_string() + " has hooks (register_hook) that eager would run", false;
    if (layout.get() != cached_module_attr("torch", "strided"))
      return refusal = source->to_string() + " is not strided", false;
    cx.add_guard(Guard{GuardKind::const_eq, Source::attr(source, "_backward_hooks"), PyRef::borrow(Py_None)});
    leaf_args.emplace_back(v->node);
  }
  return true;
}

// The `count` gradients of an autograd_grad node, as tensor values.
std::vector<ValuePtr> grad_results(graph::Graph& g, graph::Node* node, size_t count) {
  std::vector<ValuePtr> grads;
  for (size_t i = 0; i < count; ++i) {
    graph::Node* item = g.call(graph::OpRegistry::instance().getitem(), {graph::Arg(node), graph::Arg(static_cast<int64_t>(i))});
    item->meta().set_tensor(node->meta().fake[i]);
    item->meta().loc = node->meta().loc;
    grads.push_back(Value::tensor(item));
  }
  return grads;
}

}  // namespace

ValuePtr trace_backward(TraceContext cx, std::vector<ValuePtr> args, Kwargs kwargs, bool tensor_method) {
  const std::string who = tensor_method ? "Tensor.backward()" : "torch.autograd.backward()";
  auto refuse = [&](const std::string& why) { return cx.unsupported(who + ": " + why), nullptr; };
  BackwardArgs a;
  if (std::string why = bind_backward(tensor_method, args, kwargs, a); !why.empty()) return refuse(why);
  ValuePtr loss = a.loss, gradient = a.gradient, retain_graph = a.retain_graph, create_graph = a.create_graph,
           inputs = a.inputs;
  if (!loss || !loss->is_tensor() || is_python_number(loss))
    return refuse("of something other than one tensor of the graph");
  if (!is_false_value(create_graph)) return refuse_in_whole_frame(cx, who);
  // retain_graph: a constant (None: create_graph's value, False here)
  if (retain_graph && !retain_graph->is_constant())
    return refuse("retain_graph given by a value the trace does not know");
  const bool retain = !is_false_value(retain_graph) && PyObject_IsTrue(retain_graph->obj.get()) == 1;
  if (!is_none_value(inputs)) return refuse("inputs= is not traced");
  graph::Node *root = nullptr, *grad_output = nullptr;
  if (std::string why = backward_root(cx, loss, gradient, {"Tensor.backward() (a scalar loss)",
                                                           "Tensor.backward(gradient) (sizes must match)", "gradient"},
                                      root, grad_output);
      !why.empty())
    return refuse(why);

  BackwardPath walk;
  if (std::string why = walk_to_leaves(root, cx.graph(), cx.shared(), kBackwardWalk, walk); !why.empty())
    return refuse(why);
  const std::vector<graph::Node*>& path = walk.path;
  const std::vector<graph::Node*>& leaves = walk.leaves;

  LeafState state;
  std::string refusal;
  if (!read_leaves(cx, cx.shared(), leaves, state, refusal)) return refusal.empty() ? nullptr : refuse(refusal);

  // The node and its results: each leaf as its current value (after
  // in-place updates under no_grad).
  std::vector<graph::Arg> leaf_args;
  for (const ValuePtr& v : state.values) leaf_args.emplace_back(v->node);
  graph::Node* node =
      autograd_grad_node(cx.graph(), cx.current_loc(), root, std::move(leaf_args), grad_output, retain, "leaves",
                         refusal);
  if (!node) return refuse(refusal);

  std::vector<const graph::Node*> accumulations;
  if (!accumulate_grads(cx, node, state, accumulations, refusal)) return refusal.empty() ? nullptr : refuse(refusal);
  // The trace keeps the backward (a refusal above rolls the graph back to
  // the instruction's checkpoint, and this state with it).
  cx.shared().grad_accumulations.insert(accumulations.begin(), accumulations.end());
  note_backward_ran(cx, path, node, retain);
  return Value::constant(Py_None);
}

// `torch.autograd.grad(outputs, inputs, grad_outputs=None,
// retain_graph=None, create_graph=False, only_inputs=True,
// allow_unused=False)`: one autograd_grad node whose leaves are the
// requested inputs, which must be tensors the frame was given (or those
// updated in place under no_grad) that the output reaches, strided and
// without hooks; its results are returned as a tuple and no `.grad` is
// written. The path is checked as for `backward`. Refused with a reason
// (a break before the call): create_graph, is_grads_batched, several
// outputs, an input the output does not reach (eager raises, or gives None
// with allow_unused), an input made in the graph (an intermediate).
ValuePtr trace_autograd_grad(TraceContext cx, std::vector<ValuePtr> args, Kwargs kwargs) {
  auto refuse = [&](const std::string& why) { return cx.unsupported("torch.autograd.grad(): " + why), nullptr; };
  std::vector<ValuePtr> bound;
  std::string why;
  if (!bind({"outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "only_inputs", "allow_unused",
             "is_grads_batched"},
            args, kwargs, bound, why))
    return refuse("cannot bind " + why);
  ValuePtr loss = bound[0], inputs = bound[1], gradient = bound[2], retain_graph = bound[3];
  if (!is_false_value(bound[4])) return refuse_in_whole_frame(cx, "torch.autograd.grad()");
  if (!is_false_value(bound[7])) return refuse("is_grads_batched=True is not traced");
  auto single = [](ValuePtr& v) {
    if (v && v->is_sequence() && v->items.size() == 1) v = v->items[0];
  };
  single(loss);
  single(gradient);
  if (!loss || !loss->is_tensor() || is_python_number(loss)) return refuse("of something other than one tensor output");
  if (retain_graph && !retain_graph->is_constant()) return refuse("retain_graph given by a value the trace does not know");
  const bool retain = !is_false_value(retain_graph) && PyObject_IsTrue(retain_graph->obj.get()) == 1;
  std::string refusal;
  std::optional<std::vector<ValuePtr>> wanted = grad_inputs(cx, inputs, refusal);
  if (!wanted) return refuse(refusal);
  graph::Node *root = nullptr, *grad_output = nullptr;
  if (std::string why = backward_root(cx, loss, gradient, {"torch.autograd.grad() (a scalar output)",
                                                           "torch.autograd.grad(grad_outputs) (sizes must match)",
                                                           "grad_output"},
                                      root, grad_output);
      !why.empty())
    return refuse(why);

  BackwardPath walk;
  if (std::string why = walk_to_leaves(root, cx.graph(), cx.shared(), kGradWalk, walk); !why.empty())
    return refuse(why);
  const std::set<graph::Node*> reached(walk.leaves.begin(), walk.leaves.end());
  std::vector<graph::Arg> leaf_args;
  if (!grad_leaf_args(cx, *wanted, reached, leaf_args, refusal)) return refuse(refusal);

  const size_t count = leaf_args.size();
  std::string failure;
  graph::Node* node =
      autograd_grad_node(cx.graph(), cx.current_loc(), root, std::move(leaf_args), grad_output, retain, "inputs", failure);
  if (!node) return refuse(failure);
  std::vector<ValuePtr> grads = grad_results(cx.graph(), node, count);
  note_backward_ran(cx, walk.path, node, retain);
  return Value::sequence(ValueKind::tuple, std::move(grads));
}

std::optional<std::pair<int, std::string>> find_backward_escape(const TraceShared& shared, const graph::Graph& g) {
  if (shared.backward_root_ip < 0) return std::nullopt;
  // Dead: a node a backward went through, or one whose every input that
  // requires grad is dead (`loss_a + loss_b` after both backwards). Eager's
  // tensor for it holds a freed autograd graph; AOT gives the output a
  // grad_fn that raises as a second backward through it raises
  // (aot/joint_step.h). Anything else requiring grad reaches the leaves
  // through live history, which the graph does not keep.
  std::unordered_set<const graph::Node*> dead(shared.backwarded.begin(), shared.backwarded.end());
  for (const graph::Node* n : g.nodes()) {
    if (n->kind() != graph::NodeKind::call_function || dead.count(n) || !requires_grad(n)) continue;
    bool any = false, all = true;
    for (graph::Node* in : n->inputs()) {
      if (!requires_grad(in)) continue;
      any = true;
      all &= dead.count(in) > 0;
    }
    if (any && all) dead.insert(n);
  }
  std::optional<std::pair<int, std::string>> escape;
  for (const graph::Node* n : g.nodes()) {
    if (n->kind() != graph::NodeKind::output) continue;
    bool escapes = false;
    n->args().at(0).for_each_node([&](graph::Node* out) {
      escapes |= out->kind() != graph::NodeKind::placeholder && requires_grad(out) && !dead.count(out);
    });
    if (escapes)
      escape = std::pair{shared.backward_root_ip,
                         std::string("Tensor.backward(): a tensor requiring grad with autograd history "
                                     "the backward did not free outlives the graph")};
  }
  return escape;
}

}  // namespace tj::tracer
