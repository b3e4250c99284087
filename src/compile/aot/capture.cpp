// AOT capture: functionalization (+ autograd) over proxy tensors; see capture.h.
#include "compile/aot/capture.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <ATen/FunctionalStorageImpl.h>
#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/InferenceMode.h>
#include <ATen/ops/clone.h>
#include <ATen/ops/native_batch_norm.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/variable.h>

#include "compile/aot/eager_meta.h"
#include "graph/autograd_function.h"
#include "compile/aot/proxy.h"
#include "compile/aot/view_replay.h"
#include "graph/boxing.h"
#include "graph/interpreter.h"
#include "graph/meta_rules.h"
#include "graph/op_registry.h"
#include "graph/passes/dce.h"

namespace tj::graph::aot {

namespace fn = at::functionalization::impl;

namespace {

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

struct Driver {
  const Graph& src;
  c10::ArrayRef<at::Tensor> examples;
  const CaptureOptions& options;
  Capture cap{};
  detail::Recorder rec{};
  std::vector<at::Tensor> funcs;         // per unique input: its functional tensor
  std::vector<Node*> placeholders;       // per unique input
  std::vector<at::Tensor> originals;     // per unique input: the proxy it started as
  std::vector<at::Tensor> pos_funcs;     // per captured position: its functional tensor
  std::unordered_map<size_t, int64_t> bump_correction;  // per unique input
  std::set<const c10::StorageImpl*> merged;    // storages captured as synthetic bases
  std::set<const c10::StorageImpl*> to_merge;  // found to need it
  detail::EagerMeta eager{};                   // the graph run with eager's semantics on meta tensors

  // One functional tensor per position. Inputs sharing storage with one in
  // `merged` become views (as_strided) of one synthetic base placeholder
  // covering that storage (the seed's merge_view_inputs), so a mutation
  // through one is seen through the others.
  Status setup_inputs(const std::set<const c10::StorageImpl*>& merged) {
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
      // gradient for it (backends read the tag: jit/llvm_backend.cpp, graph/passes/freeze.h)
      if (t.requires_grad() && !info.requires_grad) ph->meta().tags["grad_unused"] = "1";
      at::Tensor proxy = detail::make_proxy(detail::meta_tensor(m), ph);
      at::Tensor f = fn::to_functional_tensor(proxy);
      if (info.requires_grad) f.requires_grad_(true);
      cap.inputs.push_back(info);
      funcs.push_back(f);
      placeholders.push_back(ph);
      originals.push_back(proxy);
      pos_funcs.push_back(member ? f.as_strided(t.sizes(), t.strides(), t.storage_offset()) : f);
    }
    return ok_status();
  }

  // Runs the captured graph on the functional inputs; returns its tensors.
  Expected<std::vector<at::Tensor>> run() {
    auto v = run_graph(src, std::vector<c10::IValue>(pos_funcs.begin(), pos_funcs.end()));
    if (!v) return v.error();
    std::vector<at::Tensor> outs = flatten_tensors(*v);
    for (const at::Tensor& t : outs)
      if (!fn::isFunctionalTensor(t)) return Error{"AOT: an output is not a value of the graph"};
    return outs;
  }

  // Runs `g` (the captured graph, or a custom Function's backward body) on
  // `inputs`, one per placeholder; returns the value of its output node.
  Expected<c10::IValue> run_graph(const Graph& g, const std::vector<c10::IValue>& inputs) {
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
          if (auto tag = node->meta().tags.find("grad_enabled"); tag != node->meta().tags.end())
            region_mode.emplace(options.joint && tag->second == "1");
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
          // that requires grad) computes storage offsets the functional
          // wrappers do not keep: its gradient would land at offset 0.
          if (options.joint && node->op()->traits.mutates && !stack->empty() && (*stack)[0].isTensor()) {
            const at::Tensor& target = (*stack)[0].toTensor();
            if (target.is_view() && target.requires_grad())
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
  Expected<c10::IValue> autograd_function(const Graph& g, const Node& node, const graph::detail::ValueOf& value_of) {
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
  at::Tensor recorded_zeros(const TensorMeta& like) {
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
  Expected<c10::IValue> batch_norm(const Node& node, const graph::detail::ValueOf& value_of) {
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

  Expected<c10::IValue> factory(const Node& node, const graph::detail::ValueOf& value_of) {
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

  // Fills input and output metadata; returns the forward output nodes.
  Expected<std::vector<Node*>> classify(const std::vector<at::Tensor>& outs, std::vector<at::Tensor>& diff_outs) {
    std::vector<Node*> mutated_nodes, fresh_nodes, base_nodes;
    std::vector<at::Tensor> fresh_funcs, base_funcs;
    std::vector<size_t> fresh_outputs;  // per fresh node: its output index
    for (size_t u = 0; u < funcs.size(); ++u) {
      InputInfo& info = cap.inputs[u];
      at::Tensor base = storage_base(funcs[u]);
      at::Tensor value = current_value(funcs[u]);
      info.version_bumps = static_cast<int64_t>(funcs[u].unsafeGetTensorImpl()->version_counter().current_version()) +
                           (bump_correction.count(u) ? bump_correction[u] : 0);
      info.data_mutated = node_of(base, "a mutated input") != placeholders[u];
      // The wrapper's value is its storage base unless view metadata was
      // applied to the input itself (t_, transpose_, as_strided_).
      info.meta_mutated = !value.is_same(base);
      if (info.meta_mutated) info.final_geometry = geometry(value, base.storage_offset());
      if (!info.synthetic_base) {
        // The geometry eager leaves (the functional value of `t_(); copy_(v)`
        // is laid out like `v`, and `transpose_(0, 0)` changes nothing).
        const at::Tensor& after = eager.inputs[info.position];
        const at::Tensor& before = examples[info.position];
        info.meta_mutated = after.sizes() != before.sizes() || after.strides() != before.strides() ||
                            after.storage_offset() != before.storage_offset();
        info.final_geometry = info.meta_mutated ? eager_geometry(after, before.storage_offset(), after.scalar_type())
                                                : Geometry{};
      }
      if ((info.data_mutated || info.meta_mutated) && info.requires_grad)
        return Error{"AOT: input " + placeholders[u]->name() + " requires grad and is mutated in place"};
      // Written with a value that requires grad, eager's input gets autograd
      // history; the wrapper's copy back gives it none.
      if (info.data_mutated && options.joint && funcs[u].requires_grad())
        return Error{"AOT: input " + placeholders[u]->name() + " is written with a value that requires grad"};
      if (info.data_mutated) {
        cap.mutated.push_back(static_cast<int>(u));
        mutated_nodes.push_back(node_of(base, "a mutated input"));
      }
    }
    // A mutated input's new value that is another mutated input's old value
    // (`a.copy_(b); b.fill_(3)`), or a view of it: the wrapper writes the
    // inputs back one after another, so it would read `b` already written.
    // The graph returns a copy made before any write instead.
    for (size_t k = 0; k < mutated_nodes.size(); ++k) {
      const Node* root = alias_root(mutated_nodes[k]);
      const size_t u = static_cast<size_t>(cap.mutated[k]);
      for (size_t w = 0; w < funcs.size(); ++w)
        if (w != u && root == placeholders[w] && cap.inputs[w].data_mutated) {
          mutated_nodes[k] = node_of(at::clone(storage_base(funcs[u])), "a copied mutated input value");
          break;
        }
    }
    // Mutated inputs that share memory with another input: capture again
    // with their storages merged into synthetic bases.
    for (size_t u = 0; u < funcs.size(); ++u) {
      if (!cap.inputs[u].data_mutated && !cap.inputs[u].meta_mutated) continue;
      const at::Tensor& a = examples[cap.inputs[u].position];
      for (size_t w = 0; w < funcs.size(); ++w) {
        const at::Tensor& b = examples[cap.inputs[w].position];
        if (w != u && a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage()))
          to_merge.insert(a.storage().unsafeGetStorageImpl());
      }
    }
    if (!to_merge.empty()) return Error{"AOT: mutated inputs share memory with other inputs"};

    std::vector<const c10::TensorImpl*> out_impls;
    for (size_t k = 0; k < outs.size(); ++k) {
      const at::Tensor& f = outs[k];
      OutputInfo info;
      out_impls.push_back(f.unsafeGetTensorImpl());
      int found = -1;
      for (size_t p = 0; p < pos_funcs.size() && found < 0; ++p)
        if (pos_funcs[p].is_same(f)) found = static_cast<int>(p);
      const at::Tensor& eager_out = eager.outputs[k];
      // The input itself here, a tensor of its own in eager (`b.add_(1);
      // b.contiguous()` of a non-contiguous b: the functional b is laid out
      // as its new value, so contiguous() returned it): a copy of its value.
      if (found >= 0 && !eager_out.is_same(eager.inputs[static_cast<size_t>(found)]) &&
          !shares_storage(eager_out, eager.inputs[static_cast<size_t>(found)])) {
        if (auto st = add_fresh(k, at::clone(current_value(f)), f, info, fresh_nodes, fresh_funcs, fresh_outputs); !st)
          return st.error();
        continue;
      }
      if (found >= 0 && eager_out.is_same(eager.inputs[static_cast<size_t>(found)])) {
        info.kind = OutputKind::input;
        info.source = found;
        cap.outputs.push_back(info);
        continue;
      }
      found = -1;
      for (size_t j = 0; j < k && found < 0; ++j)
        if (out_impls[j] == f.unsafeGetTensorImpl()) found = static_cast<int>(j);
      if (found >= 0) {
        info.kind = OutputKind::same_as_output;
        info.source = found;
        cap.outputs.push_back(info);
        continue;
      }
      at::Tensor value = current_value(f);
      for (size_t p = 0; p < pos_funcs.size() && found < 0; ++p)
        if (functional_storage(pos_funcs[p]) == functional_storage(f)) found = static_cast<int>(p);
      if (found >= 0) {
        // The geometry of eager's view on the caller's input (the functional
        // value of a view written in place is the functional op's result).
        const at::Tensor& eager_in = eager.inputs[static_cast<size_t>(found)];
        if (!eager_in.storage().is_alias_of(eager_out.storage()))
          return Error{"AOT: output " + std::to_string(k) + " views an input only in the functional graph"};
        info.kind = OutputKind::view_of_input;
        info.source = found;
        info.detached = options.joint && pos_funcs[static_cast<size_t>(found)].requires_grad() && !f.requires_grad();
        info.geometry = eager_geometry(eager_out, eager.offsets[static_cast<size_t>(found)], eager_in.scalar_type());
        if (auto st = check_dtype_view(info.geometry, eager_in); !st) return st.error();
        if (options.joint && f.requires_grad() && !info.detached && detail::may_overlap(examples[found])) {
          std::vector<const Node*> src_outs = flat_output_nodes(src);
          std::vector<Node*> phs = src.placeholders();
          if (src_outs.size() == outs.size() && src_outs[k])
            info.replay = view_chain_from(phs.at(static_cast<size_t>(found)), src_outs[k]);
          if (!info.replay)
            return Error{"AOT: output " + std::to_string(k) +
                         " views an input that overlaps itself, not by view ops alone (its gradient would be spread)"};
        }
        cap.outputs.push_back(info);
        continue;
      }
      if (!f.is_view()) {
        Node* node = node_of(value, "an output");
        // Eager's tensor aliases an earlier output that is the same value
        // here (`detach()` of it, made before a write): a view of that one.
        for (size_t j = 0; j < fresh_nodes.size() && found < 0; ++j)
          if (fresh_nodes[j] == node && shares_storage(eager.outputs[fresh_outputs[j]], eager_out))
            found = static_cast<int>(fresh_outputs[j]);
        if (found >= 0) {
          if (options.joint) return Error{"AOT: an output aliases another without being its autograd view"};
          const at::Tensor& eager_base = eager.outputs[static_cast<size_t>(found)];
          info.kind = OutputKind::view_of_output;
          info.source = found;
          info.detached = !eager_out.is_view();
          info.geometry = eager_geometry(eager_out, eager_base.storage_offset(), eager_base.scalar_type());
          if (auto st = check_dtype_view(info.geometry, eager_base); !st) return st.error();
          cap.outputs.push_back(info);
          continue;
        }
        if (!owns_its_value(node, eager_out, fresh_nodes, fresh_outputs)) value = at::clone(value);
        if (auto st = add_fresh(k, value, f, info, fresh_nodes, fresh_funcs, fresh_outputs); !st) return st.error();
        continue;
      }
      info.kind = OutputKind::view_of_intermediate;  // resolved below
      info.source = -1;
      cap.outputs.push_back(info);
    }
    // Views of intermediates: of another (non-view) output, else of an extra base.
    for (size_t k = 0; k < outs.size(); ++k) {
      OutputInfo& info = cap.outputs[k];
      if (info.kind != OutputKind::view_of_intermediate) continue;
      const at::Tensor& f = outs[k];
      at::Tensor base_f(f._base());
      at::Tensor value = current_value(f);
      for (size_t j = 0; j < outs.size(); ++j)
        if (cap.outputs[j].kind == OutputKind::fresh && outs[j].is_same(base_f)) {
          info.kind = OutputKind::view_of_output;
          info.source = static_cast<int>(j);
        }
      at::Tensor base_value = current_value(base_f);
      // Eager's view on eager's base: the first tensor made on its storage.
      at::Tensor eager_base = eager.root_of(eager.outputs[k]);
      if (!eager_base.defined())
        return Error{"AOT: output " + std::to_string(k) + " views an intermediate only in the functional graph"};
      info.geometry = eager_geometry(eager.outputs[k], eager_base.storage_offset(), eager_base.scalar_type());
      if (auto st = check_dtype_view(info.geometry, eager_base); !st) return st.error();
      if (eager_base.storage_offset() != base_value.storage_offset() || eager_base.sizes() != base_value.sizes())
        return Error{"AOT: output " + std::to_string(k) + " views an intermediate laid out otherwise than eager's"};
      if (info.kind == OutputKind::view_of_output) {
        if (!same_layout(eager_base.sizes(), eager_base.strides(), base_value))
          return Error{"AOT: output " + std::to_string(k) + " views an output laid out otherwise than eager's"};
        continue;
      }
      for (size_t b = 0; b < base_funcs.size(); ++b)
        if (base_funcs[b].is_same(base_f)) info.source = static_cast<int>(b);
      if (info.source < 0) {
        info.source = static_cast<int>(base_funcs.size());
        int slot = static_cast<int>(cap.mutated.size() + fresh_nodes.size() + base_nodes.size());
        Node* base_node = node_of(base_value, "an intermediate base");
        if (!owns_its_value(base_node, eager_base, fresh_nodes, fresh_outputs)) {
          base_value = at::clone(base_value);
          base_node = node_of(base_value, "a copied intermediate base");
        }
        if (auto st = note_layout(slot, base_value, eager_base); !st) return st.error();
        base_funcs.push_back(base_f);
        base_nodes.push_back(base_node);
      }
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      OutputInfo& info = cap.outputs[k];
      bool view = info.kind == OutputKind::view_of_input || info.kind == OutputKind::view_of_output ||
                  info.kind == OutputKind::view_of_intermediate;
      auto* view_meta = view && !info.detached ? torch::autograd::impl::get_view_autograd_meta(eager.outputs[k])
                                               : nullptr;
      if (view_meta && view_meta->has_bw_view())
        info.creation_meta = static_cast<uint8_t>(view_meta->get_creation_meta());
    }
    cap.num_fresh = static_cast<int>(fresh_nodes.size());
    cap.num_bases = static_cast<int>(base_nodes.size());
    std::vector<Node*> result = mutated_nodes;
    result.insert(result.end(), fresh_nodes.begin(), fresh_nodes.end());
    result.insert(result.end(), base_nodes.begin(), base_nodes.end());
    if (options.joint) {
      // Fresh outputs and bases the caller's outputs reach (not only the
      // unused results kept as extra outputs): those get tangents.
      std::vector<bool> fresh_used(fresh_funcs.size()), base_used(base_funcs.size());
      const size_t unused = std::min(outs.size(), static_cast<size_t>(std::max(options.undifferentiated_outputs, 0)));
      std::function<void(size_t)> use = [&](size_t k) {
        const OutputInfo& o = cap.outputs[k];
        if (o.kind == OutputKind::fresh) fresh_used.at(static_cast<size_t>(o.source)) = true;
        if (o.kind == OutputKind::view_of_intermediate) base_used.at(static_cast<size_t>(o.source)) = true;
        if (o.kind == OutputKind::same_as_output || o.kind == OutputKind::view_of_output)
          use(static_cast<size_t>(o.source));
      };
      for (size_t k = 0; k < outs.size() - unused; ++k) use(k);
      int slot = static_cast<int>(mutated_nodes.size());
      for (const auto& [list, used] : {std::pair{&fresh_funcs, &fresh_used}, std::pair{&base_funcs, &base_used}})
        for (size_t i = 0; i < list->size(); ++i) {
          const at::Tensor& f = (*list)[i];
          if (f.requires_grad() && (*used)[i]) {
            cap.differentiable.push_back(slot);
            diff_outs.push_back(f);
          }
          ++slot;
        }
    }
    return result;
  }

  // Output `k` is a fresh one: the graph returns `value` (for functional
  // tensor `f`), laid out as eager's.
  Status add_fresh(size_t k, const at::Tensor& value, const at::Tensor& f, OutputInfo info,
                   std::vector<Node*>& fresh_nodes, std::vector<at::Tensor>& fresh_funcs,
                   std::vector<size_t>& fresh_outputs) {
    info.kind = OutputKind::fresh;
    info.source = static_cast<int>(fresh_nodes.size());
    if (auto st = note_layout(static_cast<int>(cap.mutated.size() + fresh_nodes.size()), value, eager.outputs[k]); !st)
      return st;
    fresh_nodes.push_back(node_of(value, "an output"));
    fresh_outputs.push_back(k);
    fresh_funcs.push_back(f);
    cap.outputs.push_back(info);
    return ok_status();
  }

  // Whether graph output `node`, for eager's tensor `eager_value`, may be
  // returned as it is: not when the functional value is an input or a
  // constant itself (`copy_` of a same-shaped source is the source) or what
  // a fresh output is, where eager's tensors share no memory (else: a copy).
  bool owns_its_value(const Node* node, const at::Tensor& eager_value, const std::vector<Node*>& fresh_nodes,
                      const std::vector<size_t>& fresh_outputs) const {
    const Node* root = alias_root(node);
    if (root->kind() == NodeKind::placeholder) return false;
    if (root->kind() == NodeKind::get_attr) {
      auto attr = eager.attrs.find(root->target());
      if (attr == eager.attrs.end() || !shares_storage(attr->second, eager_value)) return false;
    }
    for (size_t j = 0; j < fresh_nodes.size(); ++j)
      if (alias_root(fresh_nodes[j]) == root && !shares_storage(eager.outputs[fresh_outputs[j]], eager_value))
        return false;
    return true;
  }

  // A view's dtype other than its base's is made with `view(dtype)`, which
  // needs elements of one size.
  static Status check_dtype_view(const Geometry& g, const at::Tensor& base) {
    if (g.dtype == c10::ScalarType::Undefined || c10::elementSize(g.dtype) == base.element_size()) return ok_status();
    return Error{"AOT: an output views a tensor of another element size"};
  }

  // Forward output `slot` has functional value `value`; eager's tensor is
  // `eager_value`. Where their layouts differ, the wrapper restrides it.
  Status note_layout(int slot, const at::Tensor& value, const at::Tensor& eager_value) {
    if (same_layout(eager_value.sizes(), eager_value.strides(), value)) {
      // Strides of size-1 dims address nothing, yet `stride()` shows them
      // (`x[::2].clone()` keeps a (1, n) slice's stride): eager's are set
      // back on the output, which copies nothing.
      if (value.strides() != eager_value.strides())
        cap.relayouts.emplace_back(slot, Geometry{eager_value.sizes().vec(), eager_value.strides().vec(), 0});
      return ok_status();
    }
    if (eager_value.sizes() != value.sizes() || eager_value.storage_offset() != 0 || detail::may_overlap(eager_value))
      return Error{"AOT: output slot " + std::to_string(slot) + " has a layout the functional graph cannot give"};
    if (options.joint) return Error{"AOT: a differentiable output would need eager's layout back"};
    cap.relayouts.emplace_back(slot, Geometry{eager_value.sizes().vec(), eager_value.strides().vec(), 0});
    return ok_status();
  }

  // The tangents (by index) that `n` reads, directly or through other nodes.
  static std::vector<int> tangents_read(Node* n, const std::unordered_map<const Node*, int>& tangent_index) {
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

  // Records the backward: one tangent per differentiable output.
  Expected<std::vector<Arg>> backward(const std::vector<at::Tensor>& diff_outs) {
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
    std::vector<at::Tensor> grads = torch::autograd::grad(diff_outs, wrt, tangents, /*retain_graph=*/false,
                                                          /*create_graph=*/false, /*allow_unused=*/true);
    std::vector<Arg> result;
    for (const at::Tensor& g : grads) {
      cap.grad_defined.push_back(g.defined());
      cap.grad_tangents.emplace_back();
      if (!g.defined()) continue;
      at::Tensor v = fn::isFunctionalTensor(g) ? current_value(g) : g;
      Node* n = detail::proxy_node(v);
      if (!n) return Error{"AOT: a gradient is not a recorded value"};
      cap.grad_tangents.back() = tangents_read(n, tangent_index);
      result.emplace_back(n);
    }
    return result;
  }

  Expected<Capture> go() {
    detail::ensure_registered();
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
      c10::AutoGradMode grad_mode(options.joint && options.grad_enabled);
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
    } catch (const std::exception& e) {
      return graph::detail::exception_error("AOT capture failed: ", e);
    }
    eliminate_dead_code(*cap.graph);
    cap.recorded_ops = rec.recorded;
    return std::move(cap);
  }
};

}  // namespace

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
