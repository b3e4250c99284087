// Meta inference: run the overload on meta tensors; see meta_infer.h.
#include "graph/meta_infer.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/flip.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>

#include "graph/autograd_function.h"
#include "graph/boxing.h"
#include "graph/data_dependent_ops.h"
#include "graph/libtorch_messages.h"
#include "graph/meta_rules.h"
#include "graph/sym_ints.h"
#include "graph/unbacked_sizes.h"
#include "graph/op_registry.h"

namespace tj::graph {

namespace {

at::TensorOptions meta_options(c10::ScalarType dtype) {
  return at::TensorOptions().dtype(dtype).device(c10::kMeta);
}

}  // namespace


namespace {

// copy_: its meta kernel returns at once, but eager's raises when the
// destination overlaps itself or partly overlaps the source, or when the
// source does not broadcast to it (TensorIterator's checks, in its order).
// Only for tracing: these checks are about eager's behaviour, not shapes.
// In-place arithmetic whose promoted result cannot be cast back to self's
// dtype raises in eager ("result type Long can't be cast to the desired
// output type Bool"); LibTorch's functionalization would otherwise compute
// it out of place and cast, and some meta kernels do not check.
void inplace_cast_check(const OpInfo& op, const std::vector<c10::IValue>& s) {
  static const std::set<std::string, std::less<>> kPromoting = {
      "add_", "sub_", "mul_", "div_", "floor_divide_", "remainder_", "fmod_", "pow_", "atan2_", "addcmul_",
      "addcdiv_", "lerp_"};
  if (!op.traits.inplace || !kPromoting.count(op.base_name()) || s.empty() || !s[0].isTensor()) return;
  const at::Tensor& self = s[0].toTensor();
  at::native::ResultTypeState state{};
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].isTensor()) state = at::native::update_result_type_state(s[i].toTensor(), state);
    else if (i == 1 && s[i].isScalar()) state = at::native::update_result_type_state(s[i].toScalar(), state);
  }
  const c10::ScalarType result = at::native::result_type(state);
  TORCH_CHECK(c10::canCast(result, self.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", self.scalar_type());
}

// The checks eager's kernels make before running that the meta kernels
// skip: in-place casts, set_ between dtypes, the operands' dtypes of the
// matrix products, copy_'s overlap and shape.
void eager_only_checks(const OpInfo& op, const std::vector<c10::IValue>& s) {
  inplace_cast_check(op, s);
  // set_(source) of another dtype: eager's Python binding asserts (the meta kernel does not check).
  if (op.base_name() == "set_" && s.size() >= 2 && s[0].isTensor() && s[1].isTensor())
    TORCH_CHECK(s[0].toTensor().scalar_type() == s[1].toTensor().scalar_type(),
                "source.dtype() == self.dtype() INTERNAL ASSERT FAILED: set_ between ", s[0].toTensor().scalar_type(),
                " and ", s[1].toTensor().scalar_type());
  // mm, bmm, mv, dot and matmul (composite: mm on meta) do not compare
  // their operands' dtypes on meta; eager's CPU kernels raise.
  static const std::set<std::string, std::less<>> kSameDtype = {"mm", "bmm", "mv", "dot", "vdot", "matmul",
                                                                "baddbmm", "addmv", "addbmm"};
  if (kSameDtype.count(op.base_name())) {
    const size_t operands = op.base_name().rfind("add", 0) == 0 || op.base_name() == "baddbmm" ? 3 : 2;
    for (size_t i = 1; i < operands && i < s.size(); ++i)
      if (s[0].isTensor() && s[i].isTensor())
        TORCH_CHECK(s[i].toTensor().scalar_type() == s[0].toTensor().scalar_type(), "expected scalar type ",
                    s[0].toTensor().scalar_type(), " but found ", s[i].toTensor().scalar_type());
  }
  if (op.qualified_name() != "aten::copy_") return;
  const at::Tensor& self = s.at(0).toTensor();
  const at::Tensor& src = s.at(1).toTensor();
  if (self.is_same(src)) return;
  at::assert_no_internal_overlap(self);
  at::assert_no_partial_overlap(self, src);
  auto broadcast = at::infer_size(self.sizes(), src.sizes());
  TORCH_CHECK(broadcast == self.sizes(), "output with shape ", self.sizes(), " doesn't match the broadcast shape ",
              broadcast);
}

// ---- building meta inputs ----

struct MetaInputs {
  Graph& graph;
  std::unordered_map<const Node*, c10::IValue> values;
  std::unordered_map<int64_t, at::Tensor> bases;  // storage id -> meta base of that storage
  std::unordered_map<const c10::StorageImpl*, int64_t> storage_ids;

  // Storage extent (in elements) a description needs.
  static int64_t extent(const TensorMeta& m) {
    int64_t end = m.storage_offset + 1;
    for (size_t i = 0; i < m.sizes.size(); ++i) {
      if (m.sizes[i] == 0) return m.storage_offset;
      end += (m.sizes[i] - 1) * m.strides[i];
    }
    return end;
  }

  void reserve(const TensorMeta& m) {
    if (m.storage_id < 0) return;
    auto it = bases.find(m.storage_id);
    int64_t need = extent(m);
    if (it == bases.end() || it->second.numel() < need)
      bases[m.storage_id] = at::empty({need}, meta_options(m.dtype));
  }

  at::Tensor build(const TensorMeta& m) {
    if (!m.defined) return at::Tensor();
    at::Tensor base = m.storage_id >= 0 ? bases.at(m.storage_id) : at::empty({extent(m)}, meta_options(m.dtype));
    at::Tensor t = base.as_strided(m.sizes, m.strides, m.storage_offset);
    if (t.scalar_type() != m.dtype) t = at::empty(m.sizes, meta_options(m.dtype)).as_strided(m.sizes, m.strides);
    if (m.storage_id >= 0) storage_ids[t.storage().unsafeGetStorageImpl()] = m.storage_id;
    return t;
  }

  Status add(const Node& node, const Node& input) {
    const NodeMeta& meta = input.meta();
    if (is_sym(input)) {
      if (!meta.sym_value) return Error{node.name() + " (" + node.target() + "): size " + input.name() + " has no value"};
      values[&input] = c10::IValue(*meta.sym_value);
      return ok_status();
    }
    if (meta.fake.empty() && !meta.fake_is_sequence)
      return Error{node.name() + " (" + node.target() + "): input " + input.name() + " has no fake tensor"};
    if (!meta.fake_is_sequence) {
      values[&input] = build(meta.fake[0]);
      return ok_status();
    }
    std::vector<c10::IValue> items;
    for (const TensorMeta& m : meta.fake) items.emplace_back(build(m));
    values[&input] = c10::ivalue::Tuple::create(std::move(items));
    return ok_status();
  }

  // Every input of `node`, views of one storage built on one meta base.
  Status add_all(const Node& node) {
    for (const Node* input : node.inputs())
      for (const TensorMeta& m : input->meta().fake) reserve(m);
    for (const Node* input : node.inputs())
      if (auto st = add(node, *input); !st) return st;
    return ok_status();
  }
};

TensorMeta describe(const at::Tensor& t, MetaInputs& in, c10::Device device, bool requires_grad) {
  TensorMeta m = TensorMeta::of(t);
  m.device = device;
  m.requires_grad = requires_grad && (c10::isFloatingType(m.dtype) || c10::isComplexType(m.dtype));
  const c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  auto it = in.storage_ids.find(storage);
  if (it == in.storage_ids.end()) it = in.storage_ids.emplace(storage, in.graph.new_storage_id()).first;
  m.storage_id = it->second;
  return m;
}

// The outputs as they are (the same tensors at run time, so the same
// storage ids), with eager's `_wrap_outputs` rule for requires_grad.
Status infer_autograd_function(const Graph& graph, Node& node) {
  auto body = node.args().empty() || !node.args()[0].is<std::string>()
                  ? nullptr
                  : graph.autograd_function(node.args()[0].as<std::string>());
  if (!body) return Error{node.name() + ": autograd_function without a body"};
  AutogradFunctionArgs parts = autograd_function_args(node);
  bool any_requires_grad = false;
  for (const Node* in : parts.inputs)
    if (const TensorMeta* m = in->meta().tensor()) any_requires_grad |= m->requires_grad;
  NodeMeta& out = node.meta();
  out.fake.clear();
  out.fake_is_sequence = true;
  for (size_t j = 0; j < parts.outputs.size(); ++j) {
    const TensorMeta* m = parts.outputs[j]->meta().tensor();
    if (!m) return Error{node.name() + ": output " + std::to_string(j) + " is not a tensor"};
    TensorMeta t = *m;
    bool differentiable = j >= body->non_differentiable.size() || !body->non_differentiable[j];
    t.requires_grad = any_requires_grad && differentiable && (c10::isFloatingType(t.dtype) || c10::isComplexType(t.dtype));
    out.fake.push_back(t);
  }
  return ok_status();
}

// A slice of a data-dependent dim with constant bounds (`x[mask][:5]`) has
// min(5, count) elements: data-dependent too, whatever the hint gives.
// A narrow by a bound known when the graph runs is data-dependent the same way.
bool unbacked_bound(const Node& node) {
  bool out = false;  // x[:lengths[0]], x.narrow(0, 0, lengths[0]): a bound known when the graph runs
  for (size_t i = 2; i < node.args().size(); ++i)
    out |= node.args()[i].is_node() && depends_on_unbacked(*node.args()[i].node());
  return out;
}

bool is_unbacked_narrow(const Node& node) {
  return node.op()->base_name() == "narrow" && node.args().size() == 4 && node.args()[0].is_node() &&
         node.args()[1].is<int64_t>() && unbacked_bound(node);
}

void keep_slice_unbacked(Node& node) {
  const bool narrow = is_unbacked_narrow(node);
  if ((node.op()->base_name() != "slice" && !narrow) || node.args().size() < 2 || !node.args()[0].is_node() ||
      !node.args()[1].is<int64_t>())
    return;
  TensorMeta* m = node.meta().fake.size() == 1 ? &node.meta().fake[0] : nullptr;
  if (!m || !(unbacked_bound(node) || unbacked_dim(*node.args()[0].node(), node.args()[1].as<int64_t>()))) return;
  int64_t dim = node.args()[1].as<int64_t>();
  if (dim < 0) dim += static_cast<int64_t>(m->sizes.size());
  if (dim >= 0 && dim < static_cast<int64_t>(m->sizes.size())) m->sizes[static_cast<size_t>(dim)] = kUnbackedHint;
}

// The meta results of `node` on the boxed arguments `stack`: a
// data-dependent op's (unbacked_sizes.h), a meta rule's, or the op's own
// meta kernel's. LibTorch's errors are thrown.
struct MetaRun {
  std::vector<at::Tensor> results;
  bool sequence = false;
  bool unbacked = false;
};

Status run_meta(const Node& node, std::vector<c10::IValue>& stack, bool cpu, MetaRun* out) {
  const std::string qualified = node.op()->qualified_name();
  if (auto unbacked = unbacked_meta_results(*node.op(), stack)) {
    out->results = std::move(*unbacked);
    out->sequence = out->results.size() != 1 || node.op()->schema().returns().at(0).type()->kind() == c10::TypeKind::ListType;
    out->unbacked = true;
  } else if (is_unbacked_narrow(node) && stack[0].isTensor()) {
    // the whole dim here (a view of the input's layout); keep_slice_unbacked makes it the placeholder
    const at::Tensor& self = stack[0].toTensor();
    const int64_t dim = node.args()[1].as<int64_t>();
    out->results.push_back(self.narrow(dim, 0, self.size(dim)));
  } else if (const detail::MetaRule* rule = detail::meta_rule(qualified, node.op()->name)) {
    out->results = detail::run_meta_rule(*rule, stack, cpu);
    out->sequence = out->results.size() != 1;
  } else {
    // A split or unbind along a data-dependent dim: its number of results
    // is that size, and the meta run would make kUnbackedHint / n views
    // (millions: minutes; fuzz seed 9972054 hung on `x[x > 0].split(4)`).
    if ((qualified == "aten::split.Tensor" || qualified == "aten::unsafe_split.Tensor" ||
         qualified == "aten::unbind.int") &&
        !stack.empty() && stack[0].isTensor() && stack.size() >= 2) {
      const at::Tensor& self = stack[0].toTensor();
      const c10::IValue& d = qualified == "aten::unbind.int" ? stack[1] : stack[stack.size() - 1];
      int64_t dim = d.isInt() ? d.toInt() : 0;
      if (self.dim() > 0) {
        dim = dim < 0 ? dim + self.dim() : dim;
        if (dim >= 0 && dim < self.dim() && !node.args().empty() && node.args()[0].is_node() &&
            unbacked_dim(*node.args()[0].node(), dim))
          return Error{qualified + " (node " + node.name() + ") along a data-dependent size: its number of "
                       "out->results is known only when it runs",
                       ErrorKind::data_dependent};
      }
    }
    detail::infer_factory_dtype(*node.op(), stack);
    eager_only_checks(*node.op(), stack);
    if (cpu) detail::promote_like_cpu(*node.op(), stack);
    node.op()->handle().callBoxed(stack);
    c10::IValue value = detail::unbox_returns(node, stack);
    if (value.isTensor()) {
      out->results.push_back(value.toTensor());
    } else if (value.isTuple() || value.isTensorList()) {
      out->sequence = true;
      for (const c10::IValue& v : value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec())
        if (v.isTensor()) out->results.push_back(v.toTensor());
        else if (v.isNone()) out->results.push_back(at::Tensor());
    }
  }
  return ok_status();
}

// A broadcast of a data-dependent dim against another operand's size s >= 2
// (`s / torch.bincount(b).unsqueeze(-1)`, s of 2 rows) fails on the
// placeholder size. As TorchDynamo's size-oblivious broadcast of an unbacked
// size, it is taken to be s: eager's result has size s whether the count is
// s or 1, and raises otherwise (the stage after the op is compiled for the
// real sizes, and one whose shapes do not hold runs op by op, raising as
// eager). The inputs of `node` right-aligned: each data-dependent dim in a
// place where the other operands have exactly one size >= 2 is set to it.
// Whether any dim was set.
bool align_unbacked_dims(const Node& node, MetaInputs& in) {
  std::vector<const Node*> tensors;
  size_t rank = 0;
  for (const Node* input : node.inputs())
    if (const TensorMeta* m = input->meta().tensor(); m && !input->meta().fake_is_sequence && m->defined) {
      tensors.push_back(input);
      rank = std::max(rank, m->sizes.size());
    }
  bool changed = false;
  std::unordered_map<const Node*, TensorMeta> aligned;
  for (size_t back = 1; back <= rank; ++back) {
    std::set<int64_t> known;
    std::vector<const Node*> unknown;
    for (const Node* t : tensors) {
      const std::vector<int64_t>& sizes = t->meta().tensor()->sizes;
      if (sizes.size() < back) continue;
      const int64_t dim = static_cast<int64_t>(sizes.size() - back);
      if (unbacked_dim(*t, dim)) unknown.push_back(t);
      else if (sizes[static_cast<size_t>(dim)] >= 2) known.insert(sizes[static_cast<size_t>(dim)]);
    }
    if (known.size() != 1 || unknown.empty()) continue;
    for (const Node* t : unknown) {
      TensorMeta& m = aligned.emplace(t, *t->meta().tensor()).first->second;
      m.sizes[m.sizes.size() - back] = *known.begin();
      changed = true;
    }
  }
  for (auto& [t, m] : aligned) {
    in.reserve(m);
    in.values[t] = in.build(m);
  }
  return changed;
}

}  // namespace

// Factories shaped like an input and detach make tensors outside autograd,
// whatever their inputs (eager: `torch.full_like(x, 7).requires_grad` is False).
bool makes_tensors_outside_autograd(std::string_view base_name) {
  static const std::set<std::string, std::less<>> kNoGrad = {
      "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like",
      "new_zeros",  "new_ones",  "new_full",  "new_empty",  "new_empty_strided", "detach",
      "autograd_grad"};  // tracejit::autograd_grad: gradients without history (graph/autograd_grad.h)
  return kNoGrad.count(base_name) != 0;
}

Status infer_meta(Graph& graph, Node& node) {
  if (node.kind() != NodeKind::call_function) return ok_status();
  NodeMeta& out = node.meta();
  if (is_sym(node)) return infer_sym(node);
  if (node.op()->is_getitem) {
    const Node* seq = node.args().at(0).node();
    int64_t index = node.args().at(1).as<int64_t>();
    const NodeMeta& in = seq->meta();
    if (index < 0) index += static_cast<int64_t>(in.fake.size());
    if (!in.fake_is_sequence || index < 0 || index >= static_cast<int64_t>(in.fake.size()))
      return Error{node.name() + ": getitem on " + seq->name() + " which has no such element"};
    out.set_tensor(in.fake[index]);
    return ok_status();
  }
  if (node.op()->is_autograd_function) return infer_autograd_function(graph, node);

  MetaInputs in{graph, {}, {}, {}};
  if (auto st = in.add_all(node); !st) return st;
  bool any_requires_grad = false;
  std::optional<c10::Device> device;
  for (const Node* input : node.inputs())
    for (const TensorMeta& m : input->meta().fake) {
      any_requires_grad |= m.requires_grad;
      if (!device) device = m.device;
    }
  detail::ValueOf value_of = [&](const Node* n) -> const c10::IValue& { return in.values.at(n); };
  std::optional<c10::Device> requested;
  auto stack = detail::box_arguments(node, value_of, {true, &requested});
  if (!stack) return stack.error();
  if (requested) device = requested;
  c10::Device result_device = device.value_or(c10::Device(c10::kCPU));

  const std::string qualified = node.op()->qualified_name();
  out.unbacked = false;
  // A result no fake tensor can describe (data_dependent_ops.h), unless
  // unbacked_meta_results describes it; asked now, while `stack` still
  // holds the arguments.
  const bool depends_on_data = result_depends_on_data(*node.op(), *stack);
  MetaRun run;
  try {
    if (auto st = run_meta(node, *stack, result_device.is_cpu(), &run); !st) return st;
  } catch (const std::exception& e) {
    // A data-dependent dim broadcast against a known size: again with it taken to be that size.
    bool aligned = false;
    if (depends_on_unbacked(node) && align_unbacked_dims(node, in)) {
      run = MetaRun{};
      auto again = detail::box_arguments(node, value_of, {true, nullptr});
      try {
        aligned = again && run_meta(node, *again, result_device.is_cpu(), &run).ok();
      } catch (const std::exception&) {
        aligned = false;
      }
    }
    if (!aligned) {
      std::string why = detail::short_message(e);
      ErrorKind kind = detail::exception_kind(e);
      return Error{"no meta kernel for " + qualified + " (node " + node.name() + "): " + why,
                   kind == ErrorKind::internal ? kind
                   : depends_on_data            ? ErrorKind::data_dependent
                                                : ErrorKind::unsupported};
    }
  }
  std::vector<at::Tensor>& results = run.results;
  const bool sequence = run.sequence;
  out.unbacked = run.unbacked;
  // An undefined tensor (None in Python) is described as one only inside a
  // sequence, where the tracer binds it to None; a lone one has no node value.
  for (const at::Tensor& t : results)
    if (!t.defined() && !sequence)
      return Error{qualified + " (node " + node.name() + ") returns None for its tensor, which the graph cannot describe"};
  if (makes_tensors_outside_autograd(node.op()->base_name())) any_requires_grad = false;
  out.fake.clear();
  out.fake_is_sequence = sequence;
  for (const at::Tensor& t : results)
    out.fake.push_back(t.defined() ? describe(t, in, result_device, any_requires_grad) : TensorMeta::undefined());
  keep_slice_unbacked(node);
  return ok_status();
}

namespace {

// Runs `n` on meta tensors in grad mode `grad`: its first argument is
// `self_value`, the others are built from their descriptions (as leaves
// requiring grad where they require grad, with `grad_leaves`). Nothing when
// the arguments cannot be built; LibTorch's errors are thrown.
std::optional<c10::IValue> call_on_meta(Graph& graph, const Node& n, c10::IValue self_value, bool grad_leaves,
                                        bool grad) {
  MetaInputs in{graph, {}, {}, {}};
  if (!in.add_all(n)) return std::nullopt;
  if (grad_leaves)
    for (auto& [input, v] : in.values)
      if (const TensorMeta* m = input->meta().tensor(); m && m->requires_grad && v.isTensor())
        v = v.toTensor().detach().requires_grad_(true);
  in.values[n.args()[0].node()] = std::move(self_value);
  detail::ValueOf value_of = [&](const Node* x) -> const c10::IValue& { return in.values.at(x); };
  auto stack = detail::box_arguments(n, value_of, {true, nullptr});
  if (!stack) return std::nullopt;
  c10::AutoGradMode mode(grad);
  n.op()->handle().callBoxed(*stack);
  return detail::unbox_returns(n, *stack);
}

}  // namespace

bool inplace_raises_on_grad_leaf(Graph& graph, const Node& node) {
  if (node.kind() != NodeKind::call_function || is_sym(node) || node.op()->is_getitem ||
      node.op()->is_autograd_function || !node.op()->traits.inplace || node.args().empty() || !node.args()[0].is_node())
    return false;
  const Node* self = node.args()[0].node();
  const TensorMeta* m = self->meta().tensor();
  if (!m || !(c10::isFloatingType(m->dtype) || c10::isComplexType(m->dtype))) return false;
  std::string qualified = node.op()->qualified_name();
  if (detail::meta_rule(qualified, node.op()->name)) return false;  // not run through LibTorch's kernels
  try {
    // `self` alone is a fresh leaf requiring grad (its other uses in the
    // call keep the plain meta tensor: only autograd's check is asked).
    (void)call_on_meta(graph, node, at::empty_strided(m->sizes, m->strides, meta_options(m->dtype)).requires_grad_(true),
                       false, true);
  } catch (const std::exception& e) {
    return says_leaf_modified_inplace(e.what());
  }
  return false;
}

namespace {

// The view chain of `self`: the views, getitems of multi-output views and
// in-place ops it was made by, back to the first tensor that is none of
// these (`base`), in graph order.
std::vector<const Node*> view_chain(const Node* self, const Node** base) {
  std::vector<const Node*> chain;
  const Node* cur = self;
  while (cur->kind() == NodeKind::call_function && !is_sym(*cur) && !cur->op()->is_autograd_function &&
         !cur->args().empty() && cur->args()[0].is_node()) {
    const Node* prev = cur->args()[0].node();
    bool link = cur->op()->is_getitem ? prev->kind() == NodeKind::call_function && !is_sym(*prev) &&
                                            !prev->op()->is_builtin() && prev->op()->traits.view
                                      : cur->op()->traits.view || cur->op()->traits.inplace;
    if (!link) break;
    chain.push_back(cur);
    cur = prev;
  }
  *base = cur;
  return {chain.rbegin(), chain.rend()};
}

}  // namespace

std::optional<std::string> inplace_refused_on_view(Graph& graph, const Node& node, bool base_requires_grad,
                                                   bool entry_grad_enabled) {
  if (node.kind() != NodeKind::call_function || is_sym(node) || node.op()->is_builtin() ||
      !node.op()->traits.inplace || node.args().empty() || !node.args()[0].is_node())
    return std::nullopt;
  const Node* base = nullptr;
  std::vector<const Node*> chain = view_chain(node.args()[0].node(), &base);
  bool is_view = false;
  for (const Node* link : chain) is_view |= link->op()->is_getitem || link->op()->traits.view;
  const TensorMeta* bm = base->meta().tensor();
  if (!is_view || !bm || !(c10::isFloatingType(bm->dtype) || c10::isComplexType(bm->dtype))) return std::nullopt;
  bool any_requires_grad = base_requires_grad;
  for (const Node* input : node.inputs())
    for (const TensorMeta& m : input->meta().fake) any_requires_grad |= m.requires_grad;
  if (!any_requires_grad) return std::nullopt;  // autograd's check needs a tensor that requires grad
  for (const Node* link : chain)
    if (!link->op()->is_getitem && detail::meta_rule(link->op()->qualified_name(), link->op()->name))
      return std::nullopt;  // not replayable through LibTorch's kernels
  // The base as autograd knew it (a computed tensor: leaves are the
  // caller's business), then each link run under its grad mode.
  c10::IValue value = at::empty_strided(bm->sizes, bm->strides, meta_options(bm->dtype));
  if (base_requires_grad) value = value.toTensor().requires_grad_(true).clone();
  auto grad_enabled_at = [&](const Node& n) { return n.meta().tags.grad_enabled.value_or(entry_grad_enabled); };
  try {
    for (const Node* link : chain) {
      if (link->op()->is_getitem) {
        std::vector<c10::IValue> items =
            value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
        int64_t index = link->args().at(1).as<int64_t>();
        if (index < 0) index += static_cast<int64_t>(items.size());
        value = items.at(static_cast<size_t>(index));
        continue;
      }
      // An in-place op that only writes data leaves the tensor as it was.
      const TensorMeta* in_meta = link->args()[0].node()->meta().tensor();
      const TensorMeta* out_meta = link->meta().tensor();
      if (!link->op()->traits.view && in_meta && out_meta && in_meta->sizes == out_meta->sizes &&
          in_meta->strides == out_meta->strides && in_meta->storage_offset == out_meta->storage_offset)
        continue;
      auto next = call_on_meta(graph, *link, value, false, grad_enabled_at(*link));
      if (!next) return std::nullopt;
      value = std::move(*next);
    }
    if (!value.isTensor() || !call_on_meta(graph, node, value, true, true)) return std::nullopt;
  } catch (const std::exception& e) {
    if (says_autograd_refused_inplace(e.what())) return detail::short_message(e);
  }
  return std::nullopt;
}

Status infer_meta_all(Graph& graph) {
  for (Node* node : graph.nodes())
    if (auto st = infer_meta(graph, *node); !st) return st;
  return ok_status();
}

}  // namespace tj::graph
