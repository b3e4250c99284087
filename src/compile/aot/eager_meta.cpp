// Eager layouts: the captured graph on meta tensors; see eager_meta.h.
#include "compile/aot/eager_meta.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include "compile/aot/proxy.h"
#include "graph/boxing.h"
#include "graph/interpreter.h"
#include "graph/meta_rules.h"
#include "graph/op_registry.h"

namespace tj::graph::aot::detail {

bool may_overlap(const at::Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims longer than 1
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return false;
    if (t.size(d) == 1) continue;
    if (t.stride(d) == 0) return true;
    dims.emplace_back(std::abs(t.stride(d)), t.size(d));
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;  // the largest offset the smaller dims reach
  for (const auto& [stride, size] : dims) {
    if (stride <= span) return true;
    span += stride * (size - 1);
  }
  return false;
}

namespace {

// An empty view broadcast (stride 0) along one of its empty dims from a
// tensor with elements (`x.expand(0)` of a 0-d x): eager writes nothing
// through it; functionalization writes the base back as a sum over the
// broadcast copies, which over none is zeros.
bool empty_broadcast_of(const at::Tensor& t, const at::Tensor& base) {
  if (t.numel() != 0 || base.numel() == 0) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) == 0 && t.stride(d) == 0) return true;
  return false;
}

// The bytes of its storage `t` spans, [first, last].
std::pair<int64_t, int64_t> byte_span(const at::Tensor& t) {
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  int64_t item = static_cast<int64_t>(t.element_size());
  return {t.storage_offset() * item, last * item + item - 1};
}

}  // namespace

bool reads_what_it_writes(const at::Tensor& written, const at::Tensor& read) {
  if (!written.has_storage() || !read.has_storage() || !written.storage().is_alias_of(read.storage())) return false;
  if (written.numel() == 0 || read.numel() == 0) return false;
  if (written.sizes() == read.sizes() && written.strides() == read.strides() &&
      written.storage_offset() == read.storage_offset() && written.dtype() == read.dtype())
    return false;  // element by element the same: `x.add_(x)`
  auto [w0, w1] = byte_span(written);
  auto [r0, r1] = byte_span(read);
  return w0 <= r1 && r0 <= w1;
}

at::Tensor EagerMeta::root_of(const at::Tensor& t) const {
  if (!t.defined() || !t.has_storage()) return at::Tensor();
  auto it = roots.find(t.storage().unsafeGetStorageImpl());
  return it == roots.end() ? at::Tensor() : it->second;
}

namespace {

constexpr const char* kOverlap =
    "a tensor that overlaps itself, or a view of one (functionalization would sum its copies)";
constexpr const char* kEmptyBroadcast =
    "an empty view broadcast from a tensor with elements (functionalization would write it back as zeros)";
constexpr const char* kStridedView =
    "through as_strided of a tensor not laid out contiguously from the start of its storage (functionalization "
    "would write it into a contiguous copy)";
constexpr const char* kStridedRead =
    " through as_strided outside the elements its argument lays out from the start of its storage "
    "(functionalization would read the written value laid out anew)";
constexpr const char* kDtypeView =
    "through a view of another dtype (LibTorch 1.13's functionalization gives the base the view's dtype)";

at::TensorOptions meta_options(c10::ScalarType dtype) { return at::TensorOptions().dtype(dtype).device(c10::kMeta); }

bool writes_argument(const c10::FunctionSchema& schema, size_t i) {
  const auto* alias = schema.arguments().at(i).alias_info();
  return alias && alias->isWrite();
}

bool shares_storage(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() && b.defined() && a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage());
}

// The tensors among boxed arguments (tensor lists included).
std::vector<at::Tensor> tensors_of(const std::vector<c10::IValue>& args) {
  std::vector<at::Tensor> out;
  for (const c10::IValue& a : args) {
    if (a.isTensor()) out.push_back(a.toTensor());
    if (a.isTensorList())
      for (const at::Tensor& t : a.toTensorList().vec()) out.push_back(t);
  }
  return out;
}

struct Runner {
  const Graph& graph;
  c10::ArrayRef<at::Tensor> examples;
  bool grad_enabled = true;  // of nodes without a `grad_enabled` tag
  EagerMeta out{};
  std::unordered_map<const Node*, c10::IValue> env;
  // Meta tensors functionalization cannot write through, and why: reached
  // through a view that overlaps itself (or an overlapping input), or
  // through a view of another dtype.
  std::unordered_map<const c10::TensorImpl*, std::string> unwritable;
  std::set<const c10::StorageImpl*> input_storages;
  std::set<const c10::StorageImpl*> offset_input_storages;  // with an input not contiguous from the start
  std::set<const c10::StorageImpl*> written;  // storages an op wrote so far
  // Storages an as_strided read outside what functionalization lays out
  // as eager does (strided_read_is_kept), and that node's name.
  std::unordered_map<const c10::StorageImpl*, std::string> strided_reads;
  bool on_cpu = true;  // every example input is a CPU tensor (promote_like_cpu applies)

  Status setup_inputs() {
    std::unordered_map<const c10::StorageImpl*, c10::Storage> storages;
    for (size_t i = 0; i < examples.size(); ++i) {
      const at::Tensor& t = examples[i];
      if (!t.defined()) return Error{"AOT: input " + std::to_string(i) + " is not a tensor"};
      on_cpu = on_cpu && t.device().is_cpu();
      at::Tensor m;
      for (size_t j = 0; j < i && !m.defined(); ++j)
        if (examples[j].is_same(t)) m = out.inputs[j];
      if (!m.defined() && t.has_storage()) {
        const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
        auto it = storages.find(key);
        if (it == storages.end())
          it = storages
                   .emplace(key, at::empty({static_cast<int64_t>(t.storage().nbytes())}, meta_options(at::kByte))
                                     .storage())
                   .first;
        m = at::empty({0}, meta_options(t.scalar_type())).set_(it->second, t.storage_offset(), t.sizes(), t.strides());
        // set_ on meta sets the storage's size to what this view spans,
        // shrinking it under an earlier input on it (a later `unsqueeze_`
        // of that input would then fail its bounds check): keep the real size.
        it->second.set_nbytes(t.storage().nbytes());
        input_storages.insert(m.storage().unsafeGetStorageImpl());
        if (!t.is_contiguous() || t.storage_offset() != 0)
          offset_input_storages.insert(m.storage().unsafeGetStorageImpl());
      }
      if (!m.defined()) m = at::empty_strided(t.sizes(), t.strides(), meta_options(t.scalar_type()));
      if (may_overlap(m)) unwritable[m.unsafeGetTensorImpl()] = kOverlap;
      out.inputs.push_back(m);
      out.offsets.push_back(t.storage_offset());
    }
    return ok_status();
  }

  // A result `t` of an op on `args`: the first tensor of a new storage (or
  // the base of a view of it the op made) is its root; one sharing an argument's storage (a view, whatever the
  // schema says: `broadcast_tensors` has no alias annotation) inherits what
  // makes that argument unwritable, or is unwritable itself.
  void note_result(const at::Tensor& t, const std::vector<at::Tensor>& args) {
    if (!t.defined() || !t.has_storage()) return;
    const c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
    // A view the op made of a tensor of its own (at::linear of a 3-d input views addmm's [M, N] back as [B, T, N])
    // has that tensor for root, as eager's `_base` and the functional view's base are.
    const at::Tensor base = t.is_view() ? at::Tensor(t._base()) : at::Tensor();
    if (!input_storages.count(storage)) out.roots.emplace(storage, shares_storage(base, t) ? base : t);
    for (const at::Tensor& a : args)
      if (a.is_same(t)) return;  // an in-place op's result keeps its marks
    for (const at::Tensor& a : args) {
      if (!shares_storage(a, t)) continue;
      auto inherited = unwritable.find(a.unsafeGetTensorImpl());
      if (inherited != unwritable.end()) {
        unwritable[t.unsafeGetTensorImpl()] = inherited->second;
        return;
      }
    }
    for (const at::Tensor& a : args) {
      if (!shares_storage(a, t)) continue;
      if (may_overlap(t)) unwritable[t.unsafeGetTensorImpl()] = kOverlap;
      else if (empty_broadcast_of(t, a)) unwritable[t.unsafeGetTensorImpl()] = kEmptyBroadcast;
      else if (t.scalar_type() != a.scalar_type()) unwritable[t.unsafeGetTensorImpl()] = kDtypeView;
      return;
    }
  }

  Expected<c10::IValue> call(const Node& node) {
    const graph::detail::ValueOf value_of = [&](const Node* n) -> const c10::IValue& { return env.at(n); };
    if (node.op()->is_getitem) {
      auto v = graph::detail::run_getitem(node, value_of);
      if (!v) return v.error();
      return *v;
    }
    if (node.op()->is_autograd_function) {  // its outputs, as they are (the tracer made them fresh)
      std::vector<c10::IValue> items;
      if (node.args().size() == 4 && node.args()[2].is_list())
        for (const Arg& a : node.args()[2].items()) items.push_back(env.at(a.node()));
      return c10::IValue(c10::ivalue::Tuple::create(std::move(items)));
    }
    std::optional<c10::Device> requested;
    auto stack = graph::detail::box_arguments(node, value_of, {true, &requested});
    if (!stack) return stack.error();
    const c10::FunctionSchema& schema = node.op()->schema();
    std::vector<c10::IValue> args = *stack;
    for (size_t i = 0; i < args.size() && i < schema.arguments().size() && out.unsupported.empty(); ++i) {
      if (!writes_argument(schema, i) || !args[i].isTensor()) continue;
      auto why = unwritable.find(args[i].toTensor().unsafeGetTensorImpl());
      if (why != unwritable.end()) out.unsupported = node.name() + " (" + node.target() + ") writes " + why->second;
    }
    for (size_t i = 0; i < args.size() && i < schema.arguments().size() && out.unsupported.empty(); ++i) {
      if (!writes_argument(schema, i) || !args[i].isTensor()) continue;
      for (size_t j = 0; j < args.size() && out.unsupported.empty(); ++j) {
        if (j == i) continue;
        std::vector<at::Tensor> read;
        if (args[j].isTensor()) read.push_back(args[j].toTensor());
        if (args[j].isTensorList()) read = args[j].toTensorList().vec();
        for (const at::Tensor& r : read)
          if (r.defined() && reads_what_it_writes(args[i].toTensor(), r))
            out.unsupported = node.name() + " (" + node.target() +
                              ") reads memory it writes through another view (eager's result depends on the "
                              "order its kernel visits the elements)";
      }
    }
    const std::string qualified = node.op()->qualified_name();
    // LibTorch 1.13 replays `view(dtype)` of a tensor written in place as
    // `_to_copy`: a conversion of its values, not a view of its bits.
    if (qualified == "aten::view.dtype" && out.unsupported.empty() && !args.empty() && args[0].isTensor() &&
        args[0].toTensor().has_storage() && written.count(args[0].toTensor().storage().unsafeGetStorageImpl()))
      out.unsupported = node.name() + " (" + node.target() +
                        ") views the bits of memory written in place as another dtype (functionalization would "
                        "convert the values)";
    for (size_t i = 0; i < args.size() && i < schema.arguments().size(); ++i)
      if (writes_argument(schema, i) && args[i].isTensor() && args[i].toTensor().has_storage()) {
        const c10::StorageImpl* s = args[i].toTensor().storage().unsafeGetStorageImpl();
        written.insert(s);
        auto read = strided_reads.find(s);
        if (read != strided_reads.end() && out.unsupported.empty())
          out.unsupported = node.name() + " (" + node.target() + ") writes memory " + read->second + kStridedRead;
      }
    try {
      if (const graph::detail::MetaRule* rule = graph::detail::meta_rule(qualified, node.op()->name)) {
        std::vector<at::Tensor> results = graph::detail::run_meta_rule(*rule, *stack, on_cpu);
        stack->assign(results.begin(), results.end());
      } else {
        graph::detail::infer_factory_dtype(*node.op(), *stack);
        if (on_cpu) graph::detail::promote_like_cpu(*node.op(), *stack);
        node.op()->handle().callBoxed(*stack);
      }
    } catch (const std::exception&) {
      if (!args.empty() && writes_argument(schema, 0) && args[0].isTensor()) {
        *stack = {args[0]};  // an in-place op keeps its target's metadata
      } else {
        try {
          *stack = run_meta(node.op()->handle(), schema, qualified, args);
        } catch (const std::exception& e) {
          return graph::detail::exception_error(
              "AOT: " + node.name() + " (" + node.target() + ") cannot run on meta tensors: ", e);
        }
      }
    }
    c10::IValue value = graph::detail::unbox_returns(node, *stack);
    std::vector<at::Tensor> inputs = tensors_of(args);
    for (const at::Tensor& t : flatten_tensors(value)) note_result(t, inputs);
    if (value.isTensor() && value.toTensor().has_storage() && !inputs.empty() &&
        std::none_of(inputs.begin(), inputs.end(), [&](const at::Tensor& a) { return shares_storage(a, value.toTensor()); }))
      out.fresh_results.insert(&node);
    // as_strided's strides and offset address the storage; functionalization
    // writes such a view back into a clone of its argument, laid out anew
    // unless the argument is the storage's own contiguous layout.
    if (node.op()->base_name() == "as_strided" && value.isTensor() && !inputs.empty() &&
        !(inputs[0].is_contiguous() && inputs[0].storage_offset() == 0))
      unwritable.emplace(value.toTensor().unsafeGetTensorImpl(), kStridedView);
    if (node.op()->base_name() == "as_strided" && value.isTensor() && !inputs.empty())
      note_strided_read(node, inputs[0], value.toTensor());
    return value;
  }

  // True when functionalization's as_strided of `arg`'s new value (after
  // a write of its storage) reads the elements eager's reads of the
  // storage: `arg` is laid out contiguously from the start of a storage
  // whose base is (so the new value of the base, laid out as the base,
  // puts each element where eager's storage has it) and `view` reads
  // only `arg`'s elements.
  bool strided_read_is_kept(const at::Tensor& arg, const at::Tensor& view) const {
    if (!arg.is_contiguous() || arg.storage_offset() != 0) return false;
    if (view.numel() != 0) {
      auto [first, last] = byte_span(view);
      if (first < 0 || last >= static_cast<int64_t>(arg.numel() * arg.element_size())) return false;
    }
    const c10::StorageImpl* s = arg.storage().unsafeGetStorageImpl();
    if (input_storages.count(s)) return !offset_input_storages.count(s);
    at::Tensor root = out.root_of(arg);
    return root.defined() && root.is_contiguous() && root.storage_offset() == 0;
  }

  // An as_strided reads storage offsets, and functionalization runs it on
  // the written base's new value, laid out anew (seed 9995626: `x.neg_()`
  // then `x.as_strided(...)` of an x with gaps read x's second element
  // where eager reads the gap). Such a read of a storage written before
  // it, or written after it, makes the graph unsupported.
  void note_strided_read(const Node& node, const at::Tensor& arg, const at::Tensor& view) {
    if (!arg.has_storage() || strided_read_is_kept(arg, view)) return;
    const c10::StorageImpl* s = arg.storage().unsafeGetStorageImpl();
    if (written.count(s) && out.unsupported.empty())
      out.unsupported = node.name() + " (" + node.target() + ") reads memory written in place" + kStridedRead;
    strided_reads.emplace(s, "that " + node.name() + " (" + node.target() + ") reads");
  }

  Expected<EagerMeta> go() {
    if (auto st = setup_inputs(); !st) return st.error();
    size_t next_input = 0;
    for (const Node* node : graph.nodes()) {
      switch (node->kind()) {
        case NodeKind::placeholder:
          if (next_input >= out.inputs.size()) return Error{"AOT: more placeholders than example inputs"};
          env[node] = out.inputs[next_input++];
          break;
        case NodeKind::get_attr: {
          const at::Tensor* t = graph.attr(node->target());
          if (!t) return Error{"AOT: no attribute " + node->target()};
          at::Tensor m = at::empty_strided(t->sizes(), t->strides(), meta_options(t->scalar_type()));
          note_result(m, {});
          out.attrs.emplace(node->target(), m);
          env[node] = m;
          break;
        }
        case NodeKind::call_function: {
          c10::AutoGradMode mode(node->meta().tags.grad_enabled.value_or(grad_enabled));
          auto v = call(*node);
          if (!v) return v.error();
          env[node] = std::move(*v);
          break;
        }
        case NodeKind::output: {
          const graph::detail::ValueOf value_of = [&](const Node* n) -> const c10::IValue& { return env.at(n); };
          auto v = graph::detail::arg_to_ivalue(node->args().at(0), value_of);
          if (!v) return v.error();
          out.outputs = flatten_tensors(*v);
          return std::move(out);
        }
      }
    }
    return Error{"AOT: the graph has no output node"};
  }
};

}  // namespace

Expected<EagerMeta> run_eager_meta(const Graph& graph, c10::ArrayRef<at::Tensor> examples, bool grad_enabled) {
  c10::InferenceMode not_inference(false);
  Runner runner{graph, examples, grad_enabled};
  try {
    return runner.go();
  } catch (const std::exception& e) {
    return graph::detail::exception_error("AOT: the eager meta run failed: ", e);
  }
}

}  // namespace tj::graph::aot::detail
