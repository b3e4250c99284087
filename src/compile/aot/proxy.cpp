// Proxy tensors and the boxed recording function; see proxy.h.
#include "compile/aot/proxy.h"

#include <mutex>

#include <ATen/TensorUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <c10/core/TensorImpl.h>
#include <torch/library.h>

#include "compile/aot/engine_sums.h"
#include "compile/aot/inplace_steps.h"
#include "graph/data_dependent_ops.h"
#include "graph/meta_rules.h"
#include "graph/op_registry.h"

namespace tj::graph::aot::detail {

namespace {

thread_local Recorder* t_recorder = nullptr;

c10::DispatchKeySet proxy_keys() {
  return c10::DispatchKeySet({c10::DispatchKey::PrivateUse1, c10::DispatchKey::AutogradPrivateUse1,
                              c10::DispatchKey::ADInplaceOrView});
}

// Proxies claim the device the graph runs on (dispatch goes by their keys,
// not their device): derivative formulas that make tensors from
// `grad.options()` (`where`'s wrapped zero) then make real CPU constants
// with known values instead of meta tensors with none.
c10::Device proxy_device() { return t_recorder ? t_recorder->device : c10::Device(c10::kMeta); }

class ProxyImpl final : public c10::TensorImpl {
 public:
  ProxyImpl(at::Tensor meta, Node* node)
      : c10::TensorImpl(proxy_keys(), meta.dtype(), proxy_device()), meta_(std::move(meta)), node_(node) {
    set_sizes_and_strides(meta_.sizes(), meta_.strides());
    set_storage_offset(meta_.storage_offset());
    set_storage_access_should_throw();
  }

  const at::Tensor& meta() const { return meta_; }
  Node* node() const { return node_; }
  void set_node(Node* node) { node_ = node; }

  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(const c10::VariableVersion& version_counter,
                                                              bool allow_tensor_metadata_change) const override {
    auto impl = c10::make_intrusive<ProxyImpl>(meta_, node_);
    copy_tensor_metadata(this, impl.get(), version_counter, allow_tensor_metadata_change);
    impl->refresh_numel();
    return impl;
  }
  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(c10::VariableVersion&& version_counter,
                                                              bool allow_tensor_metadata_change) const override {
    auto impl = c10::make_intrusive<ProxyImpl>(meta_, node_);
    copy_tensor_metadata(this, impl.get(), std::move(version_counter), allow_tensor_metadata_change);
    impl->refresh_numel();
    return impl;
  }
  void shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) override {
    auto* other = dynamic_cast<ProxyImpl*>(impl.get());
    TORCH_CHECK(other, "tracejit capture: shallow_copy_from a tensor that is not a proxy");
    copy_tensor_metadata(other, this, version_counter(), allow_tensor_metadata_change());
    meta_ = other->meta_;
    node_ = other->node_;
    refresh_numel();
  }

 private:
  const char* tensorimpl_type_name() const override { return "tracejit::ProxyImpl"; }
  at::Tensor meta_;
  Node* node_;
};

ProxyImpl* as_proxy(const at::Tensor& t) {
  if (!t.defined()) return nullptr;
  return dynamic_cast<ProxyImpl*>(t.unsafeGetTensorImpl());
}

c10::TypePtr unwrap_optional(c10::TypePtr type) {
  if (auto opt = type->cast<c10::OptionalType>()) return opt->getElementType();
  return type;
}

// Converts one boxed argument to a graph Arg, and its meta counterpart.
struct ArgConverter {
  Recorder& rec;

  Arg tensor(const at::Tensor& t, c10::IValue& meta) {
    if (!t.defined()) {
      meta = c10::IValue();
      return Arg();
    }
    if (ProxyImpl* p = as_proxy(t)) {
      meta = p->meta();
      return Arg(p->node());
    }
    TORCH_CHECK(!t.is_meta(), "tracejit capture: a meta tensor that is not a proxy reached an op");
    if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
      meta = t;  // TensorIterator treats CPU scalars specially: keep it
      if (t.scalar_type() == at::kBool) return Arg(t.item<bool>());
      if (c10::isIntegralType(t.scalar_type(), false)) return Arg(t.item<int64_t>());
      return Arg(t.item<double>());
    }
    // A real tensor made inside a formula (or a constant): an attribute.
    std::string name = "_tensor_constant" + std::to_string(rec.constants++);
    rec.graph->set_attr(name, t);
    Node* n = rec.graph->get_attr(name);
    n->meta().set_tensor(TensorMeta::of(t));
    meta = at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
    return Arg(n);
  }

  Arg convert(const c10::IValue& v, const c10::TypePtr& declared, c10::IValue& meta) {
    c10::TypePtr type = unwrap_optional(declared);
    meta = v;
    if (v.isNone()) return Arg();
    if (v.isTensor()) return tensor(v.toTensor(), meta);
    if (v.isTensorList()) {
      std::vector<Arg> items;
      c10::List<at::Tensor> metas;
      for (const at::Tensor& t : v.toTensorList().vec()) {
        c10::IValue m;
        items.push_back(tensor(t, m));
        metas.push_back(m.toTensor());
      }
      meta = metas;
      return Arg::list(std::move(items));
    }
    if (v.isList()) {  // Tensor?[] and other generic lists
      std::vector<Arg> items;
      c10::impl::GenericList metas(v.toList().elementType());
      c10::TypePtr elem = type->cast<c10::ListType>() ? type->cast<c10::ListType>()->getElementType() : type;
      for (const c10::IValue& item : v.toListRef()) {
        c10::IValue m;
        items.push_back(convert(item, elem, m));
        metas.push_back(m);
      }
      meta = metas;
      return Arg::list(std::move(items));
    }
    if (v.isIntList()) return Arg::ints(v.toIntVector());
    if (v.isDoubleList()) {
      std::vector<Arg> items;
      for (double d : v.toDoubleVector()) items.emplace_back(d);
      return Arg::list(std::move(items));
    }
    if (v.isBoolList()) {
      std::vector<Arg> items;
      for (bool b : v.toBoolList().vec()) items.emplace_back(b);
      return Arg::list(std::move(items));
    }
    if (v.isInt()) {
      switch (type->kind()) {
        case c10::TypeKind::ScalarTypeType: return Arg(static_cast<c10::ScalarType>(v.toInt()));
        case c10::TypeKind::LayoutType: return Arg(static_cast<c10::Layout>(v.toInt()));
        case c10::TypeKind::MemoryFormatType: return Arg(static_cast<c10::MemoryFormat>(v.toInt()));
        default: return Arg(v.toInt());
      }
    }
    if (v.isDouble()) return Arg(v.toDouble());
    if (v.isBool()) return Arg(v.toBool());
    if (v.isString()) return Arg(v.toStringRef());
    if (v.isDevice()) {
      c10::Device d = v.toDevice();
      if (d.is_meta()) {
        meta = c10::IValue(d);
        return Arg(rec.device);
      }
      meta = c10::IValue(c10::Device(c10::kMeta));
      return Arg(d);
    }
    if (v.isGenerator()) TORCH_CHECK(false, "tracejit capture: an explicit Generator argument is not supported");
    TORCH_CHECK(false, "tracejit capture: unsupported argument kind ", v.tagKind());
  }
};

// The functional overload an in-place op on a fresh tensor becomes
// (`bernoulli_.float` -> `bernoulli.p`): same argument names and types.
const OpInfo* functional_overload(const c10::FunctionSchema& inplace) {
  std::string name = inplace.name();
  if (name.empty() || name.back() != '_') return nullptr;
  name.pop_back();
  auto& reg = OpRegistry::instance();
  for (const std::string& ov : reg.overloads(name)) {
    auto info = reg.get(ov.empty() ? name : name + "." + ov);
    if (!info) continue;
    const auto& s = (*info)->schema();
    if (s.is_mutable() || s.arguments().size() != inplace.arguments().size()) continue;
    bool same = true;
    for (size_t i = 0; i < s.arguments().size() && same; ++i)
      same = s.arguments()[i].name() == inplace.arguments()[i].name() &&
             s.arguments()[i].type()->str() == inplace.arguments()[i].type()->str();
    if (same) return *info;
  }
  return nullptr;
}

// Runs the op on zero-filled CPU tensors (ops without a Meta kernel and no
// rule): correct shapes and strides, at the cost of a real computation.
std::vector<c10::IValue> run_on_zeros(const c10::OperatorHandle& op, std::vector<c10::IValue> stack) {
  auto to_cpu = [](const at::Tensor& t) {
    if (!t.defined() || !t.is_meta()) return t;
    return at::zeros({0}, t.options().device(c10::kCPU)).set_(
        at::zeros({static_cast<int64_t>(t.storage().nbytes() / std::max<size_t>(t.dtype().itemsize(), 1))},
                  t.options().device(c10::kCPU))
            .storage(),
        t.storage_offset(), t.sizes(), t.strides());
  };
  for (c10::IValue& v : stack) {
    if (v.isTensor()) {
      v = to_cpu(v.toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> l;
      for (const at::Tensor& t : v.toTensorList().vec()) l.push_back(to_cpu(t));
      v = l;
    }
  }
  op.callBoxed(stack);
  auto to_meta = [](const at::Tensor& t) {
    return t.defined() ? at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta)) : t;
  };
  for (c10::IValue& v : stack) {
    if (v.isTensor()) {
      v = to_meta(v.toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> l;
      for (const at::Tensor& t : v.toTensorList().vec()) l.push_back(to_meta(t));
      v = l;
    }
  }
  return stack;
}


// LibTorch 1.13's functionalization replays a `reshape` view
// (`_reshape_alias(base, size, stride)`) with the strides computed on the
// original base. Replayed on a base's new value after a mutation (a fresh
// contiguous tensor) those strides read past its data when the original
// was strided (`x[::2].reshape(-1)`). Such a replay is recorded as
// `view(base, size)`, whose strides come from the base it is given (later
// PyTorch replays it so too). True when it was, with the result pushed.
bool replay_reshape_alias_as_view(const std::string& qualified, torch::jit::Stack* stack) {
  if (qualified != "aten::_reshape_alias") return false;
  auto args = torch::jit::last(*stack, 3);
  if (!args[0].isTensor() || !args[1].isIntList() || !args[2].isIntList()) return false;
  at::Tensor self = args[0].toTensor();
  std::vector<int64_t> size = args[1].toIntVector(), stride = args[2].toIntVector();
  auto natural = at::detail::computeStride(self.sizes(), self.strides(), size);
  if (!natural || *natural == stride) return false;
  static const c10::OperatorHandle view = c10::Dispatcher::singleton().findSchemaOrThrow("aten::view", "");
  torch::jit::drop(*stack, 3);
  torch::jit::Stack call{self, c10::IValue(size)};
  view.callBoxed(call);
  stack->push_back(std::move(call.at(0)));
  return true;
}

void record(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  Recorder* rec = t_recorder;
  const c10::FunctionSchema& schema = op.schema();
  std::string qualified = schema.name() + (schema.overload_name().empty() ? "" : "." + schema.overload_name());
  if (replay_reshape_alias_as_view(qualified, stack)) return;
  TORCH_CHECK(rec, "tracejit: a proxy tensor reached ", qualified, " outside AOT capture");
  const size_t n = schema.arguments().size();
  auto args = torch::jit::last(*stack, n);
  // Capture must fail (the runtime then runs the frame uncompiled), never invent a value.
  TORCH_CHECK(!graph::capture_refuses(schema.name(), schema.overload_name(), args), "tracejit capture: ", qualified,
              " depends on tensor data (its result cannot be known while compiling)");

  const OpInfo* info = nullptr;
  ProxyImpl* inplace_target = nullptr;
  bool writes = false;
  for (size_t i = 0; i < n; ++i) {
    const auto* alias = schema.arguments()[i].alias_info();
    if (alias && alias->isWrite()) {
      writes = true;
      if (i == 0 && args[0].isTensor()) inplace_target = as_proxy(args[0].toTensor());
    }
  }
  if (writes) {
    // Functionalization removed the mutations of the program; what is left
    // writes a tensor made inside a decomposition. Record the functional
    // overload and make the written proxy stand for its result.
    info = inplace_target && !schema.arguments()[0].is_out() ? functional_overload(schema) : nullptr;
    TORCH_CHECK(info, "tracejit capture: ", qualified, " writes an argument and has no functional overload");
  } else {
    auto found = OpRegistry::instance().get(qualified);
    TORCH_CHECK(found.ok(), "tracejit capture: ", found.ok() ? "" : found.error().message);
    info = *found;
  }

  ArgConverter conv{*rec};
  std::vector<Arg> gargs;
  std::vector<Kwarg> gkwargs;
  std::vector<c10::IValue> meta_stack(n);
  // Defaults are the recorded overload's (bernoulli_.float has p=0.5,
  // bernoulli.p none): its arguments match the called op's one for one.
  const c10::FunctionSchema& recorded = info->schema();
  for (size_t i = 0; i < n; ++i) {
    const c10::Argument& param = recorded.arguments()[i];
    Arg a = conv.convert(args[i], schema.arguments()[i].real_type(), meta_stack[i]);
    bool is_default = param.default_value() && *param.default_value() == args[i] && !args[i].isTensor();
    if (param.kwarg_only()) {
      if (!is_default) gkwargs.emplace_back(param.name(), std::move(a));
    } else {
      gargs.push_back(std::move(a));
    }
  }
  // Drop trailing positional arguments equal to their defaults (readability).
  for (size_t i = gargs.size(); i-- > 0;) {
    const c10::Argument& param = recorded.arguments()[i];
    if (param.kwarg_only() || !param.default_value() || args[i].isTensor() || !(*param.default_value() == args[i]))
      break;
    gargs.pop_back();
  }

  Node* node = rec->graph->call(*info, std::move(gargs), std::move(gkwargs));
  if (!writes && in_inplace_step(op)) node->meta().tags.inplace_step = true;
  if (rec->engine_sums && rec->engine_sums->depth == 0) rec->engine_sums->nodes.insert(node);
  ++rec->recorded;
  // The CPU kernel's copies of the operands a TensorIterator op promotes,
  // which lay its result out (seed 9993160: `clamp_min(x2, x1)`'s mask of a
  // float64 x2 and a float32 x1 with gaps was laid out as x2 on meta, and
  // a compiled backend's mask then laid out x2's gradient otherwise).
  if (rec->device.is_cpu()) graph::detail::promote_like_cpu(*info, meta_stack);
  std::vector<c10::IValue> results = run_meta(op, schema, qualified, std::move(meta_stack));
  c10::IValue written = writes ? args[0] : c10::IValue();  // `args` views the stack
  torch::jit::drop(*stack, n);

  const size_t nret = schema.returns().size();
  if (writes) {
    at::Tensor meta = results.at(0).toTensor();
    node->meta().set_tensor(describe_meta(meta, rec->device));
    inplace_target->set_node(node);
    stack->push_back(std::move(written));
    return;
  }
  bool sequence = nret != 1 || (nret == 1 && results.at(0).isTensorList());
  NodeMeta& nm = node->meta();
  nm.fake.clear();
  nm.fake_is_sequence = sequence;
  int64_t item = 0;
  auto wrap = [&](const at::Tensor& meta) -> at::Tensor {
    if (!meta.defined()) return meta;
    Node* value = node;
    if (sequence) {
      value = rec->graph->call(OpRegistry::instance().getitem(), {Arg(node), Arg(item)});
      value->meta().set_tensor(describe_meta(meta, rec->device));
    }
    return make_proxy(meta, value);
  };
  for (size_t r = 0; r < nret; ++r) {
    c10::IValue& v = results.at(r);
    if (v.isTensor()) {
      at::Tensor meta = v.toTensor();
      nm.fake.push_back(meta.defined() ? describe_meta(meta, rec->device) : TensorMeta::undefined());
      stack->push_back(wrap(meta));
      ++item;
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& meta : v.toTensorList().vec()) {
        nm.fake.push_back(describe_meta(meta, rec->device));
        out.push_back(wrap(meta));
        ++item;
      }
      stack->push_back(out);
    } else {
      stack->push_back(v);
      ++item;
    }
  }
}

std::unique_ptr<torch::Library>& fallback_lib() {
  static std::unique_ptr<torch::Library> lib;
  return lib;
}
std::unique_ptr<torch::Library>& impl_lib() {
  static std::unique_ptr<torch::Library> lib;
  return lib;
}

}  // namespace

std::vector<c10::IValue> run_meta(const c10::OperatorHandle& op, const c10::FunctionSchema& schema,
                                  const std::string& qualified, std::vector<c10::IValue> stack) {
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  if (const auto* rule = graph::detail::meta_rule(qualified, schema.name())) {
    std::vector<at::Tensor> out = graph::detail::run_meta_rule(*rule, stack);
    return std::vector<c10::IValue>(out.begin(), out.end());
  }
  std::vector<c10::IValue> saved = stack;
  try {
    op.callBoxed(stack);
    return stack;
  } catch (const c10::Error&) {
    return run_on_zeros(op, std::move(saved));
  }
}

RecordingScope::RecordingScope(Recorder* rec) : prev_(t_recorder) { t_recorder = rec; }
RecordingScope::~RecordingScope() { t_recorder = prev_; }

void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, [] {
    fallback_lib() = std::make_unique<torch::Library>(torch::Library::IMPL, "_", c10::DispatchKey::PrivateUse1,
                                                      __FILE__, __LINE__);
    fallback_lib()->fallback(torch::CppFunction::makeFromBoxedFunction<&record>());
    // Ops whose CompositeExplicitAutograd kernel would serve PrivateUse1 and
    // hide the op behind its decomposition: record them as themselves.
    impl_lib() = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                                                  __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      auto handle = dispatcher.findOp(name);
      if (!handle) continue;
      if (handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) continue;
      if (!handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) &&
          !handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional))
        continue;
      std::string op_name = name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);
      impl_lib()->impl(op_name.c_str(), torch::CppFunction::makeFromBoxedFunction<&record>());
    }
  });
}

at::Tensor make_proxy(const at::Tensor& meta, Node* node) {
  return at::Tensor(c10::make_intrusive<ProxyImpl>(meta, node));
}

Node* proxy_node(const at::Tensor& t) {
  ProxyImpl* p = as_proxy(t);
  return p ? p->node() : nullptr;
}

at::Tensor proxy_meta(const at::Tensor& t) {
  ProxyImpl* p = as_proxy(t);
  return p ? p->meta() : at::Tensor();
}

at::Tensor meta_tensor(const TensorMeta& m) {
  int64_t extent = m.storage_offset + 1;
  for (size_t i = 0; i < m.sizes.size(); ++i) {
    if (m.sizes[i] == 0) {
      extent = m.storage_offset;
      break;
    }
    extent += (m.sizes[i] - 1) * m.strides[i];
  }
  at::Tensor base = at::empty({std::max<int64_t>(extent, 0)}, at::TensorOptions().dtype(m.dtype).device(c10::kMeta));
  return base.as_strided(m.sizes, m.strides, m.storage_offset);
}

TensorMeta describe_meta(const at::Tensor& t, c10::Device device) {
  TensorMeta m = TensorMeta::of(t);
  m.device = device;
  m.requires_grad = false;
  return m;
}

}  // namespace tj::graph::aot::detail
