// `CustomFunc.apply(*args)` with grad: forward inlined, backward outlined.
//
// Forward is traced inline under no_grad, as without grad: its ops are
// ordinary nodes. Then, at the call, backward is traced on stand-ins for
// the grads (`aten::empty_strided` nodes shaped like the outputs) with grad
// mode off, in a sandbox that refuses any effect outside it; the nodes it
// made are outlined into a body graph whose inputs are the tensors it read
// (saved...) and the grads. One node
//
//   %af = autograd_function("body", (tensor args...), (raw outputs...), (saved...))
//
// then gives the outputs their grad_fn (graph/autograd_function.h), and a
// getitem per output stands for them from then on. Whatever cannot be
// modelled is unsupported: the graph breaks at the call and apply runs in
// CPython with eager's semantics. Reasons start with "X.apply with grad: "
// or "backward of X: ".
#include <algorithm>
#include <set>

#include "graph/autograd_function.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/outline.h"
#include "tracer/autograd_function_ctx.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/torch_ops.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// Marks the values born before it: writes to them while it is pushed count
// as outside writes (TraceShared::GeneratorRun). Popped on every exit.
struct EffectMark {
  std::vector<TraceShared::GeneratorRun>& runs;
  size_t index;
  explicit EffectMark(std::vector<TraceShared::GeneratorRun>& r) : runs(r), index(r.size()) {
    runs.push_back({Value::next_birth(), 0});
  }
  size_t outside_writes() const { return runs[index].outside_writes; }
  ~EffectMark() { runs.resize(index); }
};

// Grad mode, and the mode nodes are tagged against, for the backward trace.
struct BackwardModes {
  bool& entry;
  bool old_entry;
  bool old_grad;
  explicit BackwardModes(bool& e) : entry(e), old_entry(e), old_grad(grad_mode_enabled()) {
    entry = false;
    set_grad_mode_enabled(false);
  }
  ~BackwardModes() {
    entry = old_entry;
    set_grad_mode_enabled(old_grad);
  }
};

// The items of a tuple value or of a constant tuple; nullopt otherwise.
std::optional<std::vector<ValuePtr>> tuple_items(const ValuePtr& v) {
  if (!v) return std::nullopt;
  if (v->kind == ValueKind::tuple) return v->items;
  if (v->is_constant() && PyTuple_Check(v->obj.get())) {
    std::vector<ValuePtr> out;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v->obj.get()); ++i)
      out.push_back(Value::constant(PyTuple_GET_ITEM(v->obj.get(), i)));
    return out;
  }
  return std::nullopt;
}

bool is_none(const ValuePtr& v) { return v && v->is_constant() && v->obj.get() == Py_None; }

// The wrapper once_differentiable puts around backward, so the function
// it wraps can be traced instead (its no_grad/DelayedError only matter for
// double backward, which is not promised).
// Borrowed (a reference kept for the process), or null.
PyObject* once_differentiable_code() {
  static PyObject* code = [] {
    PyObject* r = PyRun_String(
        "__import__('torch.autograd.function', fromlist=['once_differentiable'])"
        ".once_differentiable(lambda ctx: None).__code__",
        Py_eval_input, PyEval_GetBuiltins(), nullptr);
    PyErr_Clear();  // once per process, best effort: without it no backward is unwrapped
    return r;
  }();
  return code;
}

// `backward` itself, or the function once_differentiable wraps, or null
// (all borrowed: the class and the wrapper keep them alive).
PyObject* unwrap_once_differentiable(PyObject* backward) {
  PyObject* code = PyFunction_GET_CODE(backward);
  if (!once_differentiable_code() || code != once_differentiable_code()) return backward;
  // functools.wraps keeps it on the wrapper: alive after `wrapped` goes
  PyRef wrapped = PyRef::steal(PyObject_GetAttrString(backward, "__wrapped__"));
  clear_expected_error({PyExc_AttributeError});  // not wrapped
  return wrapped && PyFunction_Check(wrapped.get()) ? wrapped.get() : nullptr;
}

// Whether a node of the forward (the nodes from `fw_start` on) writes a
// tensor made before the call, an input in place.
bool forward_writes_older_tensor(const graph::Graph& g, size_t fw_start) {
  std::vector<graph::Node*> nodes = g.nodes();
  std::set<int64_t> older;
  for (size_t i = 0; i < fw_start; ++i)
    if (const graph::TensorMeta* m = nodes[i]->meta().tensor(); m && m->storage_id >= 0) older.insert(m->storage_id);
  for (size_t i = fw_start; i < nodes.size(); ++i) {
    const graph::Node* n = nodes[i];
    if (n->kind() == graph::NodeKind::placeholder) {
      if (const graph::TensorMeta* m = n->meta().tensor(); m && m->storage_id >= 0) older.insert(m->storage_id);
      continue;
    }
    if (!n->op() || !n->op()->traits.mutates || n->args().empty() || !n->args()[0].is_node()) continue;
    const graph::TensorMeta* target = n->args()[0].node()->meta().tensor();
    if (!target || target->storage_id < 0 || older.count(target->storage_id)) return true;
  }
  return false;
}

// What forward returned: one tensor, or a flat tuple of tensors and other values.
struct ForwardOutputs {
  bool single = false;               // one tensor, not a tuple
  std::vector<ValuePtr> items;       // the tuple's items (the tensor alone when single)
  std::vector<size_t> tensor_items;  // positions in `items` of the tensor outputs
};

// Reads forward's result; the refusal ("" when it is one apply can return).
std::string forward_outputs(const ValuePtr& result, ForwardOutputs& out) {
  out.single = result->is_tensor();
  if (out.single) {
    out.items = {result};
  } else if (result->kind == ValueKind::tuple) {
    out.items = result->items;
  } else if (result->kind == ValueKind::list) {
    return "forward returns a list (eager treats it as a non-tensor)";
  } else {
    return "forward returns no tensor";
  }
  for (size_t i = 0; i < out.items.size(); ++i) {
    if (out.items[i]->is_tensor()) {
      out.tensor_items.push_back(i);
    } else if (out.items[i]->is_sequence() || out.items[i]->kind == ValueKind::dict) {
      return "forward returns a nested container";
    }
  }
  if (out.tensor_items.empty()) return "forward returns no tensor";
  for (size_t a = 0; a < out.tensor_items.size(); ++a)
    for (size_t b = 0; b < a; ++b)
      if (out.items[out.tensor_items[a]]->node == out.items[out.tensor_items[b]]->node)
        return "forward returns one tensor twice";
  return "";
}

// backward's arguments after ctx: a gradient stand-in (an empty_strided
// node like the output, appended to `stand_ins`) per tensor output, None
// for any other output (as eager passes).
void grad_stand_ins(graph::Graph& g, const ForwardOutputs& outputs, const std::vector<graph::Node*>& raw_outputs,
                    std::vector<graph::Node*>& stand_ins, std::vector<ValuePtr>& bw_args) {
  const std::vector<ValuePtr>& items = outputs.items;
  const std::vector<size_t>& tensor_items = outputs.tensor_items;
  static const graph::OpInfo* empty_strided = *graph::OpRegistry::instance().get("aten::empty_strided");
  size_t k = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (k >= tensor_items.size() || tensor_items[k] != i) {
      bw_args.push_back(Value::constant(Py_None));  // eager passes None for a non-tensor output
      continue;
    }
    graph::TensorMeta m = *raw_outputs[k]->meta().tensor();
    m.requires_grad = false;
    m.storage_id = g.new_storage_id();
    graph::Node* s = g.call(*empty_strided, {graph::Arg::ints(m.sizes), graph::Arg::ints(m.strides)},
                            {{"dtype", graph::Arg(m.dtype)}, {"device", graph::Arg(m.device)}}, "grad");
    s->meta().set_tensor(m);
    stand_ins.push_back(s);
    bw_args.push_back(Value::tensor(s));
    ++k;
  }
}

// backward's gradients, per input of apply.
struct BackwardGrads {
  std::vector<graph::Node*> inputs;   // the tensor arguments
  std::vector<graph::Node*> results;  // the body's outputs
  std::vector<int> grad_of_input;     // per tensor argument: its result's index, or -1 (None)
};

// Matches backward's gradients to apply's arguments; the refusal ("" when they match).
std::string match_grads(const std::vector<ValuePtr>& args, const std::vector<ValuePtr>& grad_items, BackwardGrads& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const ValuePtr& gi = grad_items[i];
    if (!args[i]->is_tensor()) {
      if (!is_none(gi)) return "it returns a gradient for a non-tensor input (eager raises)";
      continue;
    }
    out.inputs.push_back(args[i]->node);
    if (is_none(gi)) {
      out.grad_of_input.push_back(-1);
    } else if (gi->is_tensor()) {
      out.grad_of_input.push_back(static_cast<int>(out.results.size()));
      out.results.push_back(gi->node);
    } else {
      return "it returns a gradient that is neither a tensor nor None (eager raises)";
    }
  }
  return "";
}

// The graph nodes of forward's tensor outputs (`raw_outputs`), each
// cloned when it shares storage with anything else (a view, an input
// returned as is): AOT would regenerate a view from its base, and its
// gradient would then bypass the custom backward. (Eager's output is a
// view.) And whether each is marked non-differentiable. False when a clone
// failed (the failure set).
bool forward_output_nodes(TraceContext cx, const graph::Graph& g, size_t fw_start, const ForwardOutputs& outputs,
                          const std::vector<ValuePtr>& non_diff_values, std::vector<graph::Node*>& raw_outputs,
                          std::vector<bool>& non_differentiable) {
  const std::vector<ValuePtr>& items = outputs.items;
  const std::vector<size_t>& tensor_items = outputs.tensor_items;
  std::vector<graph::Node*> nodes = g.nodes();
  for (size_t k = 0; k < tensor_items.size(); ++k) {
    graph::Node* n = items[tensor_items[k]]->node;
    bool made_in_forward = std::find(nodes.begin() + static_cast<long>(fw_start), nodes.end(), n) != nodes.end() &&
                           n->kind() != graph::NodeKind::placeholder;
    int64_t sid = n->meta().tensor() ? n->meta().tensor()->storage_id : -1;
    bool shared = !made_in_forward || sid < 0;
    for (const graph::Node* other : nodes)
      if (other != n && other->meta().tensor() && other->meta().tensor()->storage_id == sid) shared = true;
    if (shared) {
      set_grad_mode_enabled(false);
      ValuePtr copy = cx.call_aten("aten::clone", {items[tensor_items[k]]});
      set_grad_mode_enabled(true);
      if (!copy) return false;
      n = copy->node;
    }
    raw_outputs.push_back(n);
    bool nd = false;
    for (const ValuePtr& v : non_diff_values)
      nd |= v->is_tensor() && v->node == items[tensor_items[k]]->node;
    non_differentiable.push_back(nd);
  }
  return true;
}

// The values apply returns: forward's outputs, each tensor one replaced
// by an item of the autograd_function `node`.
ValuePtr function_results(graph::Graph& g, graph::Node* node, const ForwardOutputs& outputs) {
  std::vector<ValuePtr> out_items = outputs.items;
  for (size_t k = 0; k < outputs.tensor_items.size(); ++k) {
    graph::Node* item = g.call(graph::OpRegistry::instance().getitem(),
                               {graph::Arg(node), graph::Arg(static_cast<int64_t>(k))});
    item->meta().set_tensor(node->meta().fake[k]);
    item->meta().loc = node->meta().loc;
    out_items[outputs.tensor_items[k]] = Value::tensor(item);
  }
  if (outputs.single) return out_items[0];
  return Value::sequence(ValueKind::tuple, std::move(out_items));
}

}  // namespace

ValuePtr call_autograd_function_with_grad(TraceContext cx, const ValuePtr& apply_fn, PyObject* function_class,
                                          std::vector<ValuePtr> args) {
  const std::string cls = reinterpret_cast<PyTypeObject*>(function_class)->tp_name;
  const std::string prefix = cls + ".apply with grad: ";
  auto refuse = [&](const std::string& why) { return cx.unsupported(prefix + why), nullptr; };
  PyObject* forward_fn = plain_static_function(function_class, "forward");
  PyObject* backward_fn = plain_static_function(function_class, "backward");
  if (!backward_fn) return refuse(cls + ".backward is not a Python staticmethod");
  if (apply_fn && apply_fn->source)
    cx.add_guard(Guard{GuardKind::id_match, Source::attr(Source::attr(apply_fn->source, "__self__"), "backward"),
                       PyRef::borrow(backward_fn)});
  PyObject* traced_backward = unwrap_once_differentiable(backward_fn);
  if (!traced_backward) return refuse("its once_differentiable backward wraps no Python function");
  graph::Graph& g = cx.graph();

  // ---- forward, inline under no_grad, in a sandbox
  const size_t fw_start = g.size();
  const TraceContext::EffectCounts before = cx.effect_counts();
  ValuePtr ctx;
  ValuePtr result;
  {
    EffectMark forward_mark(cx.generator_runs());
    ctx = make_autograd_ctx(cx, args, /*real_needs_input_grad=*/true);
    if (!ctx) return cx.prefix_failure(prefix), nullptr;
    std::vector<ValuePtr> fw_args = args;
    fw_args.insert(fw_args.begin(), ctx);
    set_grad_mode_enabled(false);
    result = cx.call_value(Value::callable(forward_fn), std::move(fw_args), {});
    set_grad_mode_enabled(true);
    if (!result) return cx.prefix_failure(prefix), nullptr;
    auto dirty = tuple_items(cx.get_attr(ctx, "_tj_dirty"));
    if (!dirty || !dirty->empty()) return refuse("ctx.mark_dirty (an in-place custom Function) is not supported");
    if (forward_mark.outside_writes() > 0 || !cx.effect_counts().same_effects(before))
      return refuse("forward has side effects (it writes state that existed before the call, or an input in place)");
  }
  ValuePtr materialize = cx.get_attr(ctx, "_tj_materialize_grads");
  if (!materialize || !materialize->is_constant() || materialize->obj.get() != Py_True)
    return refuse("set_materialize_grads(False): which grads are None is known only at backward time");
  auto saved = tuple_items(cx.get_attr(ctx, "saved_tensors"));
  if (!saved) return refuse("ctx.saved_tensors is not a tuple the tracer can follow");
  for (const ValuePtr& v : *saved)
    if (!v->is_tensor() && !is_none(v)) return refuse("save_for_backward got a non-tensor (eager raises TypeError)");
  auto non_diff_values = tuple_items(cx.get_attr(ctx, "_tj_non_differentiable"));
  if (!non_diff_values) return refuse("ctx.mark_non_differentiable got values the tracer cannot follow");
  // A forward node that writes a tensor made before the call.
  if (forward_writes_older_tensor(g, fw_start)) return refuse("forward writes its input in place");

  // ---- outputs: a tensor, or a flat tuple of tensors and other values
  ForwardOutputs outputs;
  if (std::string why = forward_outputs(result, outputs); !why.empty()) return refuse(why);
  std::vector<graph::Node*> raw_outputs;
  std::vector<bool> non_differentiable;
  if (!forward_output_nodes(cx, g, fw_start, outputs, *non_diff_values, raw_outputs, non_differentiable))
    return cx.prefix_failure(prefix), nullptr;

  // ---- backward, on grad stand-ins, in a sandbox
  const size_t bw_start = g.size();
  std::vector<graph::Node*> stand_ins;
  std::vector<ValuePtr> bw_args{ctx};
  grad_stand_ins(g, outputs, raw_outputs, stand_ins, bw_args);
  const std::string bw_prefix = "backward of " + cls + ": ";
  ValuePtr grads;
  {
    EffectMark backward_mark(cx.generator_runs());
    BackwardModes modes(cx.entry_grad_enabled());
    grads = cx.call_value(Value::callable(traced_backward), std::move(bw_args), {});
    if (!grads) return cx.prefix_failure(bw_prefix), nullptr;
    if (backward_mark.outside_writes() > 0 || !cx.effect_counts().same_effects(before))
      return cx.unsupported(bw_prefix + "it has side effects (writes ctx or state that existed before it)"), nullptr;
    if (cx.effect_counts().size_facts != before.size_facts) return cx.unsupported(bw_prefix + "it reads dynamic sizes"), nullptr;
  }
  std::vector<ValuePtr> grad_items = grads->kind == ValueKind::tuple ? grads->items : std::vector<ValuePtr>{grads};
  if (auto constant = tuple_items(grads); constant && grads->is_constant()) grad_items = *constant;
  while (grad_items.size() > args.size() && is_none(grad_items.back())) grad_items.pop_back();
  if (grad_items.size() != args.size())
    return cx.unsupported(bw_prefix + "it returns " + std::to_string(grad_items.size()) + " gradients for " +
                       std::to_string(args.size()) + " inputs (eager raises)"),
           nullptr;
  BackwardGrads matched;
  if (std::string why = match_grads(args, grad_items, matched); !why.empty()) return cx.unsupported(bw_prefix + why), nullptr;
  const std::vector<graph::Node*>& inputs = matched.inputs;
  const std::vector<graph::Node*>& results = matched.results;
  const std::vector<int>& grad_of_input = matched.grad_of_input;

  // ---- the body, the node, the outputs
  // Under dynamic shapes a size backward reads from forward (ctx.shape) is
  // a size node, not a tensor: outline_region refuses it.
  auto outlined = graph::outline_region(g, bw_start, stand_ins, results);
  if (!outlined) return cx.unsupported(bw_prefix + outlined.error().message), nullptr;
  cx.forget_sizes_outside_graph();
  auto body = std::make_shared<graph::AutogradFunctionBody>();
  body->class_name = cls.substr(cls.rfind('.') + 1);
  body->backward = outlined->body;
  body->num_inputs = static_cast<int>(inputs.size());
  body->num_outputs = static_cast<int>(raw_outputs.size());
  body->num_saved = static_cast<int>(outlined->externals.size());
  body->non_differentiable = non_differentiable;
  body->grad_of_input = grad_of_input;
  const std::string body_name = g.unique_name("autograd_function");
  g.set_autograd_function(body_name, body);
  auto node_list = [](const std::vector<graph::Node*>& nodes) {
    std::vector<graph::Arg> out;
    for (graph::Node* n : nodes) out.emplace_back(n);
    return graph::Arg::tuple(std::move(out));
  };
  graph::Node* node = g.call(graph::OpRegistry::instance().autograd_function(),
                             {body_name, node_list(inputs), node_list(raw_outputs), node_list(outlined->externals)},
                             {}, body_name);
  node->meta().loc = cx.current_loc();
  if (auto st = graph::infer_meta(g, *node); !st) return cx.unsupported(prefix + st.error().message), nullptr;
  if (!cx.entry_grad_enabled()) node->meta().tags.grad_enabled = true;
  return function_results(g, node, outputs);
}

}  // namespace tj::tracer
