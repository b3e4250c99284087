// AOT capture: functionalization (+ autograd) over proxy tensors; see
// capture.h. This half sets up the functional inputs, runs the graph on
// them (custom Functions, batch norm's running statistics, factories),
// records the backward and drives a capture; capture_outputs.cpp
// classifies inputs and outputs (capture_driver.h holds the driver).
#include <algorithm>

#include <ATen/SavedTensorHooks.h>

#include "compile/aot/capture_driver.h"
#include "compile/aot/engine_sums.h"
#include "compile/aot/inplace_steps.h"
#include <torch/csrc/autograd/function.h>

namespace tj::graph::aot {
namespace capture_impl {

at::functionalization::FunctionalStorageImpl* functional_storage(const at::Tensor& f) {
  return static_cast<at::functionalization::FunctionalStorageImpl*>(
      f.unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl());
}

// The current value (a proxy) of functional tensor `f`.
at::Tensor current_value(const at::Tensor& f) {
  fn::sync(f);
  return fn::from_functional_tensor(f);
}

// The latest value of the whole storage behind functional tensor `f`.
at::Tensor storage_base(const at::Tensor& f) {
  fn::sync(f);
  fn::unsafeGetFunctionalWrapper(f)->apply_updates();  // sync skips it when f itself is current
  return functional_storage(f)->base();
}

Node* node_of(const at::Tensor& proxy, const char* what) {
  Node* n = detail::proxy_node(proxy);
  TORCH_CHECK(n, "tracejit capture: ", what, " is not a recorded value");
  return n;
}

Geometry geometry(const at::Tensor& view, int64_t base_offset) {
  return Geometry{view.sizes().vec(), view.strides().vec(), view.storage_offset() - base_offset};
}

// Same sizes, and the same strides on every dimension longer than 1.
bool same_layout(c10::IntArrayRef sizes, c10::IntArrayRef strides, const at::Tensor& t) {
  if (sizes != t.sizes()) return false;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1 && strides[d] != t.stride(static_cast<int64_t>(d))) return false;
  return true;
}

// Eager's geometry of `view` relative to `base_offset`; the dtype when it
// is not `base_dtype`.
Geometry eager_geometry(const at::Tensor& view, int64_t base_offset, c10::ScalarType base_dtype) {
  Geometry g{view.sizes().vec(), view.strides().vec(), view.storage_offset() - base_offset};
  if (view.scalar_type() != base_dtype) g.dtype = view.scalar_type();
  return g;
}

bool shares_storage(const at::Tensor& a, const at::Tensor& b) {
  return a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage());
}

// The node whose value `n`'s value is a view of (through view ops and
// getitem of their sequences), or `n` itself.
const Node* alias_root(const Node* n) {
  while (n->kind() == NodeKind::call_function && !n->args().empty() && n->args()[0].is_node()) {
    if (n->op()->is_autograd_function) break;  // its outputs are fresh
    if (!n->op()->is_getitem) {
      const auto& returns = n->op()->schema().returns();
      const auto* alias = returns.empty() ? nullptr : returns[0].alias_info();
      if (!alias || alias->isWrite()) break;
    }
    n = n->args()[0].node();
  }
  return n;
}

bool metadata_mutation(const std::string& name) {
  static const std::set<std::string> names = {"t_", "transpose_", "squeeze_", "unsqueeze_", "as_strided_",
                                              "resize_", "resize_as_", "swapdims_", "swapaxes_", "set_"};
  return names.count(name) > 0;
}
// One functional tensor per position. Inputs sharing storage with one in
// `merged` become views (as_strided) of one synthetic base placeholder
// covering that storage (the seed's merge_view_inputs), so a mutation
// through one is seen through the others.
Status Driver::setup_inputs(const std::set<const c10::StorageImpl*>& merged) {
  std::vector<Node*> phs = src.placeholders();
  if (phs.size() != examples.size())
    return Error{"AOT: the graph takes " + std::to_string(phs.size()) + " inputs, " +
                 std::to_string(examples.size()) + " example tensors given"};
  std::map<const c10::StorageImpl*, int> base_of;
  for (size_t i = 0; i < examples.size(); ++i) {
    const at::Tensor& t = examples[i];
    if (!t.defined()) return Error{"AOT: input " + phs[i]->name() + " is not a tensor"};
    int dup = -1;
    for (size_t j = 0; j < i && dup < 0; ++j)
      if (examples[j].is_same(t)) dup = static_cast<int>(j);
    if (dup >= 0) {
      cap.unique_of.push_back(cap.unique_of[dup]);
      pos_funcs.push_back(pos_funcs[dup]);
      continue;
    }
    const c10::StorageImpl* storage = t.has_storage() ? t.storage().unsafeGetStorageImpl() : nullptr;
    bool member = storage && merged.count(storage);
    if (member && options.joint && t.requires_grad())
      return Error{"AOT: input " + phs[i]->name() + " requires grad and aliases a mutated input"};
    if (member && base_of.count(storage)) {
      int u = base_of[storage];
      if (examples[cap.inputs[u].position].scalar_type() != t.scalar_type())
        return Error{"AOT: mutated inputs of different dtypes share memory"};
      cap.inputs[u].members.push_back(static_cast<int>(i));
      cap.unique_of.push_back(u);
      pos_funcs.push_back(funcs[u].as_strided(t.sizes(), t.strides(), t.storage_offset()));
      continue;
    }
    cap.unique_of.push_back(static_cast<int>(cap.inputs.size()));
    InputInfo info;
    info.position = static_cast<int>(i);
    info.requires_grad = options.joint && t.requires_grad();
    TensorMeta m = TensorMeta::of(t);
    std::string name = phs[i]->name();
    if (member) {
      int64_t numel = static_cast<int64_t>(t.storage().nbytes() / t.dtype().itemsize());
      m = TensorMeta::contiguous({numel}, t.scalar_type());
      m.device = t.device();
      name = "synthetic_base_" + name;
      info.synthetic_base = true;
      info.members.push_back(static_cast<int>(i));
      base_of[storage] = static_cast<int>(cap.inputs.size());
    }
    Node* ph = cap.graph->placeholder(name, m);
    // an inference capture of a tensor that requires grad (a parameter under no_grad): the graph records no
    // gradient for it (backends read the tag: jit/lowering.cpp, graph/passes/freeze.h). Not so where the graph
    // computes gradients itself (a traced backward: aot/joint_step.h): frozen or oneDNN-lowered, its forward
    // would not be the one it differentiates.
    if (t.requires_grad() && !info.requires_grad && !options.backward_inside) ph->meta().tags.grad_unused = true;
    at::Tensor proxy = detail::make_proxy(detail::meta_tensor(m), ph);
    at::Tensor f = fn::to_functional_tensor(proxy);
    if (info.requires_grad || (options.backward_inside && t.requires_grad())) f.requires_grad_(true);
    cap.inputs.push_back(info);
    funcs.push_back(f);
    placeholders.push_back(ph);
    originals.push_back(proxy);
    pos_funcs.push_back(member ? f.as_strided(t.sizes(), t.strides(), t.storage_offset()) : f);
  }
  return ok_status();
}

// Runs the captured graph on the functional inputs; returns its tensors.
Expected<std::vector<at::Tensor>> Driver::run() {
  auto v = run_graph(src, std::vector<c10::IValue>(pos_funcs.begin(), pos_funcs.end()));
  if (!v) return v.error();
  std::vector<at::Tensor> outs = flatten_tensors(*v);
  for (const at::Tensor& t : outs)
    if (!fn::isFunctionalTensor(t)) return Error{"AOT: an output is not a value of the graph"};
  return outs;
}

// Runs `g` (the captured graph, or a custom Function's backward body) on
// `inputs`, one per placeholder; returns the value of its output node.
Expected<c10::IValue> Driver::run_graph(const Graph& g, const std::vector<c10::IValue>& inputs) {
  std::unordered_map<const Node*, c10::IValue> env;
  graph::detail::ValueOf value_of = [&](const Node* n) -> const c10::IValue& { return env.at(n); };
  size_t next_input = 0;
  for (const Node* node : g.nodes()) {
    switch (node->kind()) {
      case NodeKind::placeholder:
        env[node] = inputs.at(next_input++);
        break;
      case NodeKind::get_attr: {
        const at::Tensor* t = g.attr(node->target());
        if (!t) return Error{"AOT: no attribute " + node->target()};
        if (options.joint && t->requires_grad())
          return Error{"AOT: attribute " + node->target() + " requires grad (parameters must be inputs)"};
        cap.graph->set_attr(node->target(), *t);
        Node* n = cap.graph->get_attr(node->target());
        n->meta().set_tensor(TensorMeta::of(*t));
        env[node] = fn::to_functional_tensor(detail::make_proxy(detail::meta_tensor(TensorMeta::of(*t)), n));
        break;
      }
      case NodeKind::call_function: {
        if (node->op()->is_getitem) {
          auto v = graph::detail::run_getitem(*node, value_of);
          if (!v) return v.error();
          env[node] = *v;
          break;
        }
        std::optional<c10::AutoGradMode> region_mode;
        if (auto mode = node->meta().tags.grad_enabled) region_mode.emplace(records_grad() && *mode);
        if (node->op()->is_autograd_function) {
          auto v = autograd_function(g, *node, value_of);
          if (!v) return v.error();
          env[node] = *v;
          break;
        }
        if (auto bn = batch_norm(*node, value_of); !bn || !bn->isNone()) {
          if (!bn) return bn.error();
          env[node] = *bn;
          break;
        }
        if (node->inputs().empty()) {  // a factory: record the node itself
          auto v = factory(*node, value_of);
          if (!v) return v.error();
          env[node] = *v;
          break;
        }
        auto stack = graph::detail::box_arguments(*node, value_of);
        if (!stack) return stack.error();
        // Inputs merged into a synthetic base keep their geometry: the
        // wrapper regenerates them as views of it.
        if (!merged.empty() && metadata_mutation(node->op()->base_name()) && (*stack)[0].isTensor()) {
          const at::Tensor& target = (*stack)[0].toTensor();
          for (size_t u = 0; u < funcs.size(); ++u)
            if (cap.inputs[u].synthetic_base && functional_storage(funcs[u]) == functional_storage(target))
              return Error{"AOT: " + node->name() + " (" + node->target() +
                           ") changes the metadata of an input that shares memory with another input"};
        }
        // LibTorch 1.13's CopySlices (an in-place op on a view of a tensor
        // that requires grad, or that the op makes require grad: `out[:, t]
        // = h` into a fresh zeros) computes storage offsets and strides the
        // functional wrappers do not keep: its gradient would land at offset 0.
        if ((options.joint || (options.backward_inside && c10::GradMode::is_enabled())) &&
            node->op()->traits.mutates && !stack->empty() && (*stack)[0].isTensor()) {
          const at::Tensor& target = (*stack)[0].toTensor();
          const bool makes_grad = c10::GradMode::is_enabled() &&  // under no_grad autograd records no CopySlices
                                  std::any_of(stack->begin() + 1, stack->end(), [](const c10::IValue& a) {
                                    return a.isTensor() && a.toTensor().defined() && a.toTensor().requires_grad();
                                  });
          if (target.is_view() && (target.requires_grad() || makes_grad))
            return Error{"AOT: " + node->name() + " (" + node->target() +
                         ") writes a view of a tensor that requires grad (not supported with LibTorch 1.13)"};
        }
        // LibTorch 1.13's functionalization of `_to_copy` (what `to(dtype)`
        // becomes) leaves its result unwrapped, ending functionalization,
        // unless the Functionalize key is in the thread's include set (its
        // lazy-tensor special case); capture keeps the key on the tensors
        // only, so include it for these calls: the result stays functional
        // and autograd records on it.
        std::optional<c10::impl::IncludeDispatchKeyGuard> functionalize;
        if (const std::string& base = node->op()->base_name(); base == "to" || base == "_to_copy" || base == "type_as")
          functionalize.emplace(c10::DispatchKey::Functionalize);
        std::vector<at::Tensor> arg_tensors;
        for (const c10::IValue& a : *stack)
          if (a.isTensor()) arg_tensors.push_back(a.toTensor());
        try {
          node->op()->handle().callBoxed(*stack);
        } catch (const std::exception& e) {
          return graph::detail::exception_error(
              "AOT capture of " + node->name() + " (" + node->target() + ") failed: ", e);
        }
        env[node] = graph::detail::unbox_returns(*node, *stack);
        // Its argument itself here, a tensor of its own in eager
        // (`b.add_(1); v = b.contiguous(); b.t_()` of a non-contiguous b:
        // the functional b is laid out as its new value): a copy now, or
        // later in-place ops on b would reach v.
        if (env[node].isTensor() && eager.fresh_results.count(node)) {
          const at::Tensor result = env[node].toTensor();
          for (const at::Tensor& a : arg_tensors)
            if (a.is_same(result)) {
              env[node] = at::clone(result);
              break;
            }
        }
        break;
      }
      case NodeKind::output:
        return graph::detail::arg_to_ivalue(node->args().at(0), value_of);
    }
  }
  return Error{"AOT: the graph has no output node"};
}

// A custom Function: its outputs get the autograd node, whose backward
// runs the body on these functional tensors while `backward()` records,
// so the body's ops land in the joint graph (and zeros for undefined
// grads are recorded as factory nodes).
Expected<c10::IValue> Driver::autograd_function(const Graph& g, const Node& node, const graph::detail::ValueOf& value_of) {
  auto body = node.args().empty() || !node.args()[0].is<std::string>()
                  ? nullptr
                  : g.autograd_function(node.args()[0].as<std::string>());
  if (!body || !body->backward) return Error{"AOT: " + node.name() + " has no autograd_function body"};
  AutogradFunctionArgs parts = autograd_function_args(node);
  auto tensors = [&](const std::vector<Node*>& nodes) {
    std::vector<at::Tensor> out;
    for (const Node* n : nodes) out.push_back(value_of(n).toTensor());
    return out;
  };
  BackwardRunner run = [this](const AutogradFunctionBody& b, std::vector<at::Tensor> in) {
    auto r = run_graph(*b.backward, std::vector<c10::IValue>(in.begin(), in.end()));
    TORCH_CHECK(r.ok(), "tracejit capture: backward of ", b.class_name, ": ", r.ok() ? "" : r.error().message);
    return flatten_tensors(*r);
  };
  ZerosMaker zeros = [this](const TensorMeta& like) { return recorded_zeros(like); };
  std::vector<at::Tensor> wrapped;
  try {
    wrapped = apply_autograd_function(body, tensors(parts.inputs), tensors(parts.outputs), tensors(parts.saved),
                                      std::move(run), std::move(zeros));
  } catch (const std::exception& e) {
    return graph::detail::exception_error("AOT capture of " + node.name() + " failed: ", e);
  }
  return c10::IValue(c10::ivalue::Tuple::create(std::vector<c10::IValue>(wrapped.begin(), wrapped.end())));
}

// `aten::zeros` recorded as a node, shaped like `like`.
at::Tensor Driver::recorded_zeros(const TensorMeta& like) {
  static const OpInfo* zeros_op = *OpRegistry::instance().get("aten::zeros");
  TensorMeta m = TensorMeta::contiguous(like.sizes, like.dtype);
  m.device = rec.device;
  Node* n = cap.graph->call(*zeros_op, {Arg::ints(like.sizes)}, {{"dtype", Arg(like.dtype)}, {"device", Arg(rec.device)}},
                            "zeros");
  n->meta().set_tensor(m);
  return fn::to_functional_tensor(detail::make_proxy(detail::meta_tensor(m), n));
}

// Batch norm in training mode with running statistics: the kernel updates
// them in place although its schema says it does not, so functionalization
// would drop the update. Run it without them and update them explicitly on
// the functional tensors (a copy_ each, so they become mutated inputs);
// eager does not bump their version counters, so neither do we. Returns
// None when `node` is no such call.
Expected<c10::IValue> Driver::batch_norm(const Node& node, const graph::detail::ValueOf& value_of) {
  const std::string& name = node.op()->name;
  bool native = name == "aten::native_batch_norm";
  if (!native && name != "aten::batch_norm") return c10::IValue();
  auto stack = graph::detail::box_arguments(node, value_of);
  if (!stack) return stack.error();
  std::vector<c10::IValue>& s = *stack;
  if (!s[5].toBool() || s[3].isNone() || s[4].isNone()) return c10::IValue();
  at::Tensor x = s[0].toTensor(), rm = s[3].toTensor(), rv = s[4].toTensor();
  c10::optional<at::Tensor> w = s[1].isNone() ? c10::nullopt : c10::optional<at::Tensor>(s[1].toTensor());
  c10::optional<at::Tensor> b = s[2].isNone() ? c10::nullopt : c10::optional<at::Tensor>(s[2].toTensor());
  double momentum = s[6].toDouble(), eps = s[7].toDouble();
  auto [out, mean, invstd] = at::native_batch_norm(x, w, b, c10::nullopt, c10::nullopt, true, momentum, eps);
  {
    at::NoGradGuard no_grad;
    double n = static_cast<double>(x.numel() / std::max<int64_t>(x.size(1), 1));
    at::Tensor var = invstd.pow(-2).sub(eps).mul(n / std::max(n - 1, 1.0));
    for (auto [stat, value] : {std::pair{rm, mean}, std::pair{rv, var}}) {
      stat.copy_(stat.mul(1 - momentum).add(value.mul(momentum)));
      for (size_t u = 0; u < funcs.size(); ++u)
        if (funcs[u].is_same(stat)) bump_correction[u] -= 1;
    }
  }
  if (!native) return c10::IValue(out);
  return c10::IValue(c10::ivalue::Tuple::create({out, mean, invstd}));
}

Expected<c10::IValue> Driver::factory(const Node& node, const graph::detail::ValueOf& value_of) {
  std::optional<c10::Device> requested;
  auto stack = graph::detail::box_arguments(node, value_of, {true, &requested});
  if (!stack) return stack.error();
  graph::detail::infer_factory_dtype(*node.op(), *stack);  // the recorded node keeps its own arguments
  node.op()->handle().callBoxed(*stack);
  c10::IValue v = graph::detail::unbox_returns(node, *stack);
  if (!v.isTensor()) return Error{"AOT: factory " + node.name() + " returns more than one tensor"};
  Node* n = cap.graph->call(*node.op(), node.args(), node.kwargs(), node.name());
  n->meta().set_tensor(detail::describe_meta(v.toTensor(), requested.value_or(rec.device)));
  return c10::IValue(fn::to_functional_tensor(detail::make_proxy(v.toTensor(), n)));
}

// The tangents (by index) that `n` reads, directly or through other nodes.
std::vector<int> Driver::tangents_read(Node* n, const std::unordered_map<const Node*, int>& tangent_index) {
  std::vector<int> found;
  std::unordered_set<const Node*> seen{n};
  std::vector<Node*> todo{n};
  while (!todo.empty()) {
    Node* m = todo.back();
    todo.pop_back();
    if (auto it = tangent_index.find(m); it != tangent_index.end()) found.push_back(it->second);
    for (Node* in : m->inputs())
      if (seen.insert(in).second) todo.push_back(in);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// Per differentiable output: whether its autograd graph reaches each of
// `wrt`'s gradient edges. Eager's engine runs every node a present output
// reaches, so an input reached that way gets a gradient even when its
// formula reads no incoming gradient (copysign's `other`: zeros_like(other);
// fuzz seed 9971406); the tangents a gradient reads miss such an input.
static std::vector<std::vector<int>> outputs_reaching(const std::vector<at::Tensor>& diff_outs,
                                                      const std::vector<at::Tensor>& wrt) {
  using torch::autograd::Node;
  std::vector<std::shared_ptr<Node>> targets;  // held: a leaf's accumulator may be made here
  for (const at::Tensor& w : wrt) targets.push_back(torch::autograd::impl::gradient_edge(w).function);
  std::vector<std::vector<int>> reached_by(wrt.size());
  for (size_t i = 0; i < diff_outs.size(); ++i) {
    std::unordered_set<const Node*> seen;
    std::vector<const Node*> todo;
    if (const Node* root = torch::autograd::impl::gradient_edge(diff_outs[i]).function.get()) {
      seen.insert(root);
      todo.push_back(root);
    }
    while (!todo.empty()) {
      const Node* m = todo.back();
      todo.pop_back();
      for (const auto& e : m->next_edges())
        if (e.function && seen.insert(e.function.get()).second) todo.push_back(e.function.get());
    }
    for (size_t u = 0; u < wrt.size(); ++u)
      if (targets[u] && seen.count(targets[u].get())) reached_by[u].push_back(static_cast<int>(i));
  }
  return reached_by;
}

// Each cut output's readers (pick_cuts) hand their gradient to a leaf of
// its own instead of the output's node: the recorded backward then
// computes the output's gradient from its own tangent alone, which the
// wrapper's node receives summed with the cut edge's by the engine.
void Driver::cut_readers(const std::vector<at::Tensor>& diff_outs, std::vector<at::Tensor>& wrt,
                         std::vector<at::Tensor>& cut_leaves) {
  for (const auto& [k, y] : cuts) {
    at::Tensor leaf = y.detach();
    leaf.requires_grad_(true);
    const torch::autograd::Edge edge = torch::autograd::impl::gradient_edge(leaf);
    if (detail::edges_into(diff_outs, y, &edge) == 0) continue;
    cut_leaves.push_back(leaf);
    wrt.push_back(leaf);
    cap.grad_inputs.push_back(Capture::cut_edge(k));
  }
}

// An input with autograd history (a non-leaf: its node runs hooks and
// retain_grad) that some differentiable output does not reach: its
// contributions and the others' are handed apart, so that the outputs
// reaching it make a part of their own (attach_backward's output groups).
// A sum joining them would put its edge in a node a backward from the
// other outputs alone runs, handing it an undefined gradient where eager
// never runs its node (`x1.retain_grad()` raised "Expected a proper
// Tensor but got None", a hook on x1 was called with None).
bool Driver::split_for_history(const std::vector<at::Tensor>& diff_outs,
                               const std::vector<std::vector<int>>& reached_by) const {
  if (diff_outs.size() < 2) return false;
  size_t w = 0;
  for (size_t u = 0; u < funcs.size(); ++u) {
    if (!cap.inputs[u].requires_grad) continue;
    const at::Tensor& example = examples[static_cast<size_t>(cap.inputs[u].position)];
    if (example.grad_fn() && w < reached_by.size() && !reached_by[w].empty() &&
        reached_by[w].size() < diff_outs.size())
      return true;
    ++w;
  }
  return false;
}

// Records the backward: one tangent per differentiable output.
Expected<std::vector<Arg>> Driver::backward(const std::vector<at::Tensor>& diff_outs) {
  std::vector<at::Tensor> wrt;
  for (size_t u = 0; u < funcs.size(); ++u)
    if (cap.inputs[u].requires_grad) {
      cap.grad_inputs.push_back(static_cast<int>(u));
      wrt.push_back(funcs[u]);
    }
  if (wrt.empty() || diff_outs.empty()) {
    cap.grad_defined.assign(wrt.size(), false);
    cap.grad_tangents.assign(wrt.size(), {});
    return std::vector<Arg>{};
  }
  Node* first_op = nullptr;
  for (Node* n : cap.graph->nodes())
    if (n->kind() != NodeKind::placeholder) {
      first_op = n;
      break;
    }
  std::vector<at::Tensor> tangents;
  std::unordered_map<const Node*, int> tangent_index;
  for (size_t i = 0; i < diff_outs.size(); ++i) {
    TensorMeta m = TensorMeta::contiguous(diff_outs[i].sizes().vec(), diff_outs[i].scalar_type());
    m.device = rec.device;
    cap.graph->set_insert_point(first_op);
    Node* ph = cap.graph->placeholder("tangents_" + std::to_string(i + 1), m);
    tangent_index[ph] = static_cast<int>(i);
    cap.graph->set_insert_point(nullptr);
    tangents.push_back(fn::to_functional_tensor(detail::make_proxy(detail::meta_tensor(m), ph)));
  }
  std::vector<at::Tensor> cut_leaves;  // held: their accumulators are the readers' edges
  cut_readers(diff_outs, wrt, cut_leaves);
  const std::vector<std::vector<int>> reached_by = outputs_reaching(diff_outs, wrt);
  const bool split_all = !cuts.empty() || split_for_history(diff_outs, reached_by);
  const std::vector<int> counts = detail::contribution_counts(diff_outs, wrt);
  detail::EngineSumScope engine_sums(rec, diff_outs, wrt, [](const at::Tensor& t) -> const Node* {
    return detail::proxy_node(fn::isFunctionalTensor(t) ? current_value(t) : t);
  });  // before grad(): the graph is freed as it runs
  std::vector<at::Tensor> grads;
  {
    detail::InplaceStepScope inplace_steps;  // tags the formulas' in-place steps
    grads = torch::autograd::grad(diff_outs, wrt, tangents, /*retain_graph=*/false,
                                  /*create_graph=*/false, /*allow_unused=*/true);
  }
  const std::vector<int> wrt_inputs = std::move(cap.grad_inputs);
  cap.grad_inputs.clear();
  std::vector<Arg> result;
  for (size_t w = 0; w < grads.size(); ++w) {
    const at::Tensor& g = grads[w];
    const int u = wrt_inputs[w];
    if (!g.defined()) {
      cap.grad_inputs.push_back(u);
      cap.grad_defined.push_back(false);
      cap.grad_tangents.emplace_back();
      grad_seqs.push_back(0);
      continue;
    }
    at::Tensor v = fn::isFunctionalTensor(g) ? current_value(g) : g;
    Node* n = detail::proxy_node(v);
    if (!n) return Error{"AOT: a gradient is not a recorded value"};
    // Where a size-1 dim's stride can differ (AccumulateGrad keeps it), the
    // engine's sum is handed over as its contributions, one edge each, so
    // the engine adds them to other nodes' as it adds eager's
    // (engine_sums.h).
    // With a cut, every input's: a sum of a cut output's and its readers'
    // contributions would join their nodes (the readers' part would hand
    // the cut output's part a gradient and wait for it). So too where an
    // input with autograd history is not reached by every output
    // (split_for_history).
    bool size1 = split_all;
    if (!Capture::is_cut_edge(u)) {
      const at::Tensor& example = examples[static_cast<size_t>(cap.inputs[static_cast<size_t>(u)].position)];
      for (int64_t d = 0; d < example.dim(); ++d) size1 |= example.size(d) == 1;
    }
    const std::vector<Node*> parts =
        size1 ? detail::contributions(n, counts[w], engine_sums.sums()) : std::vector<Node*>{n};
    for (Node* part : parts) {
      // the tangents it reads, and (for a whole gradient, or a part that
      // reads none) those of outputs whose graph reaches the input
      std::vector<int> t = tangents_read(part, tangent_index);
      if (parts.size() == 1 || t.empty()) t.insert(t.end(), reached_by[w].begin(), reached_by[w].end());
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
      cap.grad_inputs.push_back(u);
      cap.grad_defined.push_back(true);
      cap.grad_tangents.push_back(std::move(t));
      const auto handed = engine_sums.sums().handed.find({part, w});
      grad_seqs.push_back(handed == engine_sums.sums().handed.end() ? 0 : handed->second);
      result.emplace_back(part);
    }
  }
  return result;
}

// Capture::grad_order and OutputInfo::grad_order from the capture's
// sequence numbers: their ranks (1-based; 0 stays unknown), alike for
// every capture of the program.
void Driver::rank_grad_orders() {
  std::vector<uint64_t> seqs;
  for (uint64_t s : output_seqs)
    if (s) seqs.push_back(s);
  for (uint64_t s : grad_seqs)
    if (s) seqs.push_back(s);
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  auto rank = [&](uint64_t s) {
    return s ? static_cast<int>(std::lower_bound(seqs.begin(), seqs.end(), s) - seqs.begin()) + 1 : 0;
  };
  for (size_t k = 0; k < cap.outputs.size() && k < output_seqs.size(); ++k) cap.outputs[k].grad_order = rank(output_seqs[k]);
  cap.grad_order.clear();
  for (uint64_t s : grad_seqs) cap.grad_order.push_back(rank(s));
  cap.grad_order.resize(cap.grad_inputs.size(), 0);
}

Expected<Capture> Driver::go() {
  detail::ensure_registered();
  SavedTensorHooksOff no_saved_tensor_hooks;
  cap.graph = std::make_unique<Graph>();
  cap.joint = options.joint;
  rec.graph = cap.graph.get();
  for (const at::Tensor& t : examples)
    if (t.defined()) {
      rec.device = t.device();
      break;
    }
  {
    auto run = detail::run_eager_meta(src, examples, options.grad_enabled);
    if (!run) return run.error();
    eager = std::move(*run);
    if (!eager.unsupported.empty()) return Error{"AOT: " + eager.unsupported};
  }
  try {
    c10::InferenceMode not_inference(false);
    c10::AutoGradMode grad_mode(records_grad() && options.grad_enabled);
    fn::FunctionalizationReapplyViewsGuard reapply(true);
    detail::RecordingScope scope(&rec);
    if (auto st = setup_inputs(merged); !st) return st.error();
    auto outs = run();
    if (!outs) return outs.error();
    if (outs->size() != eager.outputs.size()) return Error{"AOT: the eager meta run returned other outputs"};
    std::vector<at::Tensor> diff_outs;
    auto fw = classify(*outs, diff_outs);
    if (!fw) return fw.error();
    std::vector<Arg> items(fw->begin(), fw->end());
    if (options.joint) {
      auto grads = backward(diff_outs);
      if (!grads) return grads.error();
      items.insert(items.end(), grads->begin(), grads->end());
    }
    cap.graph->output(Arg::tuple(std::move(items)));
    rank_grad_orders();
  } catch (const std::exception& e) {
    return graph::detail::exception_error("AOT capture failed: ", e);
  }
  eliminate_dead_code(*cap.graph);
  cap.recorded_ops = rec.recorded;
  return std::move(cap);
}
}  // namespace capture_impl

using capture_impl::Driver;

Expected<Capture> capture(const Graph& graph, c10::ArrayRef<at::Tensor> example_inputs,
                          const CaptureOptions& options) {
  Driver first{graph, example_inputs, options};
  auto result = first.go();
  if (result.ok() || first.to_merge.empty()) return result;
  Driver merged{graph, example_inputs, options};
  merged.merged = first.to_merge;
  return merged.go();
}

}  // namespace tj::graph::aot
