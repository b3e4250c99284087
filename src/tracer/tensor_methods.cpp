// Tensor methods, tensor attributes and Python operators on tensors,
// mapped to ATen calls (call_aten) or answered from the tensor's fake
// metadata (size(), dim(), dtype, ...). See torch_ops.h. A method is
// dispatched by name through one table (method_handlers): a handler per
// method the tracer answers itself, any other name is aten::<name>.
#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "support/py_lookup.h"
#include "tracer/grad_writes.h"
#include "tracer/attr_writes.h"
#include "tracer/backward.h"
#include "tracer/sizes.h"
#include "tracer/kwargs.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

// --------------------------------------------------------- tensor methods

namespace {

// Methods whose ints after self are one shape/dims list: t.view(2, 3).
bool packs_varargs(const std::string& name) {
  static const char* kNames[] = {"view", "reshape", "expand", "repeat", "permute", "tile", "flip", "new_zeros",
                                 "new_ones", "new_empty"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

// One call of a tensor method being answered: what each handler below reads.
struct MethodCall {
  InstructionTranslator& t;
  const ValuePtr& self;
  const std::string& name;
  std::vector<ValuePtr>& args;
  Kwargs& kwargs;
  const graph::TensorMeta& m;
  int64_t ndim;
  bool no_arguments() const { return args.empty() && kwargs.empty(); }
};

// A handler's answer: the method's value (null: unsupported, or a failed
// trace), or nullopt for the generic call of aten::<name> (with the
// arguments as the handler left them).
using MethodResult = std::optional<ValuePtr>;
using MethodHandler = MethodResult (*)(MethodCall&);

// The handlers, in their own namespace: their names are the methods'.
namespace methods {

MethodResult size_or_stride(MethodCall& c) {
  const bool size = c.name == "size";
  if (!size && unbacked_size_read(c.t, c.self, "Tensor.stride()")) return nullptr;
  if (!size) c.t.note_sizes_read("Tensor.stride()");
  const auto& v = size ? c.m.sizes : c.m.strides;
  if (c.no_arguments()) {
    if (size) return tensor_shape(c.t, c.self);
    PyRef strides = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(v.size())));
    if (!strides) return c.t.unsupported("Tensor.stride()"), nullptr;  // MemoryError: unsupported() names it
    for (size_t i = 0; i < v.size(); ++i)
      PyTuple_SET_ITEM(strides.get(), static_cast<Py_ssize_t>(i), PyLong_FromLongLong(v[i]));
    return Value::constant(strides.get());
  }
  auto dim = c.args.size() == 1 ? const_int(c.args[0]) : std::nullopt;
  if (!dim || *dim < -c.ndim || *dim >= c.ndim)
    return c.t.unsupported("Tensor." + c.name + " with a bad dim"), nullptr;
  return size ? tensor_size(c.t, c.self, normalize_dim(*dim, c.ndim)) : int_constant(v[normalize_dim(*dim, c.ndim)]);
}

// The legacy constructor: t.new(2, 3) / t.new(torch.Size) / t.new() are
// uninitialised tensors of t's dtype and device; t.new(data) is data.
MethodResult legacy_new(MethodCall& c) {
  if (!c.kwargs.empty()) return std::nullopt;
  bool sizes = std::all_of(c.args.begin(), c.args.end(),
                           [](const ValuePtr& a) { return a->is_constant() && PyLong_Check(a->obj.get()); });
  if (c.args.size() == 1 &&
      ((c.args[0]->is_constant() && is_size(c.args[0]->obj.get())) || c.args[0]->obj.get() == size_type()))
    sizes = true;
  if (c.args.empty()) c.args.push_back(int_constant(0));
  if (sizes) return call_tensor_method(c.t, c.self, "new_empty", std::move(c.args), {});
  return c.t.unsupported("Tensor.new(data) (a tensor built from Python data)"), nullptr;
}

// t.new_tensor(data): torch.tensor(data) in t's dtype and on t's device
// unless the call names them (fast_neural_style's
// `batch.new_tensor([0.485, 0.456, 0.406])`); tensor data (eager copies it
// with a warning) and anything torch.tensor does not trace break.
MethodResult new_tensor(MethodCall& c) {
  PyObject* torch_tensor = cached_module_attr("torch", "tensor");
  if (c.args.size() != 1 || c.args[0]->is_tensor() || !torch_tensor)
    return c.t.unsupported("Tensor.new_tensor (a tensor built from Python data)"), nullptr;
  Kwargs kwargs = c.kwargs;
  if (!names_kwarg(kwargs, "dtype")) kwargs.emplace_back("dtype", dtype_constant(c.m.dtype));
  if (!names_kwarg(kwargs, "device")) kwargs.emplace_back("device", Value::constant_steal(device_object(c.m.device)));
  return call_torch_callable(c.t, torch_tensor, c.args, std::move(kwargs));
}

MethodResult new_full(MethodCall& c) {
  bool handled = false;
  ValuePtr r = full_of_number(c.t, c.self, c.args, c.kwargs, handled);
  return handled ? MethodResult(r) : std::nullopt;
}

MethodResult dim(MethodCall& c) { return int_constant(c.ndim); }
MethodResult numel(MethodCall& c) { return tensor_numel(c.t, c.self); }
MethodResult is_floating_point(MethodCall& c) { return bool_constant(c10::isFloatingType(c.m.dtype)); }
MethodResult is_complex(MethodCall& c) { return bool_constant(c10::isComplexType(c.m.dtype)); }
MethodResult element_size(MethodCall& c) { return int_constant(static_cast<int64_t>(c10::elementSize(c.m.dtype))); }

MethodResult is_contiguous(MethodCall& c) {
  if (!c.args.empty()) return std::nullopt;
  if (unbacked_size_read(c.t, c.self, "Tensor.is_contiguous()")) return nullptr;
  c.t.note_sizes_read("Tensor.is_contiguous()");
  return bool_constant(c.m.is_contiguous());
}

MethodResult needs_data(MethodCall& c) {
  return c.t.unsupported("Tensor." + c.name + "() needs the tensor's data (data-dependent)"), nullptr;
}

MethodResult item(MethodCall& c) { return c.no_arguments() ? tensor_item(c.t, c.self) : needs_data(c); }

MethodResult tolist(MethodCall& c) { return c.no_arguments() ? tensor_tolist(c.t, c.self) : needs_data(c); }

MethodResult not_traceable(MethodCall& c) {
  return c.t.unsupported("Tensor." + c.name + "() is not traceable"), nullptr;
}

MethodResult backward(MethodCall& c) {
  c.args.insert(c.args.begin(), c.self);
  return trace_backward(c.t, std::move(c.args), std::move(c.kwargs), /*tensor_method=*/true);
}

// requires_grad_(False) of a tensor that does not require grad changes
// nothing (zero_grad(set_to_none=False) calls it on each grad). On an input
// leaf that requires grad (`p.requires_grad_(False)` freezing a parameter,
// and True back) it is the attribute assignment (toggle_leaf_requires_grad).
MethodResult requires_grad_(MethodCall& c) {
  if (c.args.size() + c.kwargs.size() > 1) return std::nullopt;
  ValuePtr flag = !c.args.empty() ? c.args[0] : nullptr;  // none: requires_grad_() sets True
  if (!c.kwargs.empty()) {
    if (c.kwargs[0].first != "requires_grad") return std::nullopt;
    flag = c.kwargs[0].second;
  }
  if (flag && !(flag->is_constant() && PyBool_Check(flag->obj.get()))) return std::nullopt;
  const bool wanted = !flag || flag->obj.get() == Py_True;
  const bool toggled = leaf_requires_grad_toggled(c.self);
  if (!wanted && !toggled && !data_replaced_requires_grad(c.t, c.self)) return MethodResult(c.self);
  if (!toggled && !(c.m.requires_grad && c.self->source && c.t.input_tensor_object(c.self))) return std::nullopt;
  return toggle_leaf_requires_grad(c.t, c.self, wanted) ? MethodResult(c.self) : MethodResult(nullptr);
}

// Calls that change nothing return the tensor itself in eager (an alias
// whose metadata follows later in-place changes of the original): so does
// the tracer, with no node.
MethodResult contiguous(MethodCall& c) {
  if (unbacked_size_read(c.t, c.self, "Tensor.contiguous()")) return nullptr;
  if (c.no_arguments() && c.m.is_contiguous()) {
    c.t.note_sizes_read("Tensor.contiguous() of a contiguous tensor (no copy)");
    return c.self;
  }
  if (c.args.empty() && c.kwargs.size() == 1 && c.kwargs[0].first == "memory_format" &&
      c.kwargs[0].second->is_constant() &&
      as_memory_format(c.kwargs[0].second->obj.get()) == c10::MemoryFormat::Contiguous && c.m.is_contiguous()) {
    c.t.note_sizes_read("Tensor.contiguous(memory_format=torch.contiguous_format) of a contiguous tensor (no copy)");
    return c.self;
  }
  return std::nullopt;
}

// x.flatten() of a 1-d x is x (ATen returns self when start and end dims agree).
MethodResult flatten(MethodCall& c) { return c.no_arguments() && c.ndim == 1 ? MethodResult(c.self) : std::nullopt; }

// x.to(device) / x.cpu(): aten::to with the device and a dtype.
MethodResult to_device_or_dtype(MethodCall& c) {
  if (c.name == "cpu") c.args = {Value::constant_steal(device_object(c10::Device(c10::kCPU)))};
  if (c.args.size() == 1 && c.args[0]->is_tensor()) c.args[0] = dtype_constant(c.args[0]->meta().dtype);
  if (!c.args.empty() && c.args[0]->is_constant() && as_device(c.args[0]->obj.get())) {
    if (c.args.size() == 1) c.args.push_back(dtype_constant(c.m.dtype));
    return call_aten(c.t, "aten::to", {c.self, c.args[0], c.args[1]}, std::move(c.kwargs));
  }
  std::vector<ValuePtr> all{c.self};
  for (auto& a : c.args) all.push_back(a);
  return call_aten(c.t, "aten::to", std::move(all), std::move(c.kwargs));
}

MethodResult to(MethodCall& c) {
  if (c.args.empty() && !c.kwargs.empty()) {  // x.to(dtype=x.dtype[, copy=False][, non_blocking=...]) is x
    bool same = false, other = false;
    for (const auto& [k, v] : c.kwargs) {
      bool harmless = (k == "copy" && v->is_constant() && v->obj.get() == Py_False) ||
                      (k == "non_blocking" && v->is_constant());
      if (k == "dtype" && v->is_constant() && as_dtype(v->obj.get()) == c.m.dtype) same = true;
      else other |= !harmless;
    }
    if (same && !other) return c.self;
  }
  if (!c.args.empty())  // x.to("cpu"): the device the string names
    if (ValuePtr device = device_of_string(c.args[0])) c.args[0] = device;
  if (c.args.size() == 1 && c.kwargs.empty() && c.args[0]->is_constant()) {
    auto dtype = as_dtype(c.args[0]->obj.get());
    if (dtype && *dtype == c.m.dtype) return c.self;
  }
  if (c.args.size() == 1 && c.kwargs.empty() && c.args[0]->is_tensor() && c.args[0]->meta().dtype == c.m.dtype &&
      c.args[0]->meta().device == c.m.device)
    return c.self;
  return to_device_or_dtype(c);
}

// x.float(), x.long(), ...: aten::to of that dtype.
MethodResult dtype_method(MethodCall& c) {
  static const std::map<std::string, c10::ScalarType, std::less<>> dtypes = {
      {"float", c10::ScalarType::Float}, {"double", c10::ScalarType::Double}, {"half", c10::ScalarType::Half},
      {"bfloat16", c10::ScalarType::BFloat16}, {"int", c10::ScalarType::Int}, {"long", c10::ScalarType::Long},
      {"short", c10::ScalarType::Short}, {"char", c10::ScalarType::Char}, {"byte", c10::ScalarType::Byte},
      {"bool", c10::ScalarType::Bool}};
  const c10::ScalarType dtype = dtypes.at(c.name);
  if (!c.args.empty()) return std::nullopt;
  if (c.kwargs.empty() && dtype == c.m.dtype) return c.self;
  return call_aten(c.t, "aten::to", {c.self, dtype_constant(dtype)}, std::move(c.kwargs));
}

MethodResult type_as(MethodCall& c) {
  if (c.args.size() != 1 || !c.args[0]->is_tensor()) return std::nullopt;
  if (c.args[0]->meta().dtype == c.m.dtype) return c.self;
  return call_aten(c.t, "aten::to", {c.self, dtype_constant(c.args[0]->meta().dtype)});
}

// x.type(torch.float64): x.to(torch.float64).
// The dtype of a CPU legacy tensor type (`torch.FloatTensor`, or its name
// 'torch.FloatTensor' as `x.type()` prints it); nullopt for anything else
// (a CUDA type: `x.type(torch.cuda.FloatTensor)` moves the tensor).
std::optional<c10::ScalarType> legacy_type_dtype(PyObject* o) {
  PyRef type_obj = PyRef::borrow(o);
  if (PyUnicode_Check(o)) {
    const char* utf8 = PyUnicode_AsUTF8(o);
    if (!utf8) return clear_unless_interruption(), std::nullopt;  // (a lone surrogate)
    std::string name = utf8;
    if (!name.starts_with("torch.") || name.find('.', 6) != std::string::npos) return std::nullopt;
    PyObject* torch_module = PyImport_AddModule("torch");  // borrowed; imported by now
    type_obj = PyRef::steal(torch_module ? PyObject_GetAttrString(torch_module, name.substr(6).c_str()) : nullptr);
  }
  PyObject* t = type_obj.get();
  if (!t || std::string(Py_TYPE(t)->tp_name) != "torch.tensortype") {
    clear_unless_interruption();  // no such type in torch: CPython's error, when it runs the call
    return std::nullopt;
  }
  PyRef is_cuda = PyRef::steal(PyObject_GetAttrString(t, "is_cuda"));
  PyRef dtype = PyRef::steal(PyObject_GetAttrString(t, "dtype"));
  clear_unless_interruption();
  if (!is_cuda || is_cuda.get() != Py_False || !dtype) return std::nullopt;
  return as_dtype(dtype.get());
}

// x.type(dtype) / x.type(torch.FloatTensor) / x.type('torch.FloatTensor'):
// to(dtype), or x itself when it has that dtype already.
MethodResult type(MethodCall& c) {
  // (torch.FloatTensor, a class, is a callable value)
  const bool known = c.args.size() == 1 && (c.args[0]->is_constant() || c.args[0]->kind == ValueKind::callable);
  if (!known || !c.kwargs.empty() || !c.args[0]->obj) return std::nullopt;
  std::optional<c10::ScalarType> dtype = as_dtype(c.args[0]->obj.get());
  if (!dtype) dtype = legacy_type_dtype(c.args[0]->obj.get());
  if (!dtype) return std::nullopt;
  if (*dtype == c.m.dtype) return c.self;
  return call_aten(c.t, "aten::to", {c.self, dtype_constant(*dtype)});
}

// Tensor.norm(dim=..., keepdim=...) is norm(self, p=2, dim, keepdim) in ATen.
MethodResult norm(MethodCall& c) {
  if (c.args.empty() && !c.kwargs.empty()) {
    bool has_p = false;
    for (auto& [k, v] : c.kwargs) has_p |= k == "p";
    if (!has_p) c.args.push_back(int_constant(2));
  }
  return std::nullopt;
}

MethodResult split(MethodCall& c) {
  if (c.args.empty() || !c.args[0]->is_sequence()) return std::nullopt;
  std::vector<ValuePtr> all{c.self};
  for (auto& a : c.args) all.push_back(a);
  return call_aten(c.t, "aten::split_with_sizes", std::move(all), std::move(c.kwargs));
}

}  // namespace methods

// The methods answered by a handler, by name; any other is aten::<name>.
const std::unordered_map<std::string_view, MethodHandler>& method_handlers() {
  static const std::unordered_map<std::string_view, MethodHandler> handlers = {
      {"size", methods::size_or_stride},
      {"stride", methods::size_or_stride},
      {"new", methods::legacy_new},
      {"new_tensor", methods::new_tensor},
      {"new_full", methods::new_full},
      {"dim", methods::dim},
      {"ndimension", methods::dim},
      {"numel", methods::numel},
      {"nelement", methods::numel},
      {"is_contiguous", methods::is_contiguous},
      {"is_floating_point", methods::is_floating_point},
      {"is_complex", methods::is_complex},
      {"element_size", methods::element_size},
      {"item", methods::item},
      {"tolist", methods::tolist},
      {"numpy", methods::needs_data},
      {"__bool__", methods::needs_data},
      {"__int__", methods::needs_data},
      {"__float__", methods::needs_data},
      {"data_ptr", methods::needs_data},
      {"backward", methods::backward},
      {"requires_grad_", methods::requires_grad_},
      {"register_hook", methods::not_traceable},
      {"retain_grad", methods::not_traceable},
      {"cuda", methods::not_traceable},
      {"contiguous", methods::contiguous},
      {"flatten", methods::flatten},
      {"to", methods::to},
      {"cpu", methods::to_device_or_dtype},
      {"float", methods::dtype_method},
      {"double", methods::dtype_method},
      {"half", methods::dtype_method},
      {"bfloat16", methods::dtype_method},
      {"int", methods::dtype_method},
      {"long", methods::dtype_method},
      {"short", methods::dtype_method},
      {"char", methods::dtype_method},
      {"byte", methods::dtype_method},
      {"bool", methods::dtype_method},
      {"type_as", methods::type_as},
      {"type", methods::type},
      {"norm", methods::norm},
      {"split", methods::split},
  };
  return handlers;
}

}  // namespace

ValuePtr call_tensor_method(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                            std::vector<ValuePtr> args, Kwargs kwargs) {
  // Numbers as arguments of pointwise methods (each refuses dynamic ints it cannot take).
  bool handled = false;
  if (!is_python_number(self)) {
    if (ValuePtr r = pointwise_with_number(t, self, name, args, kwargs, handled); handled) return r;
    if (ValuePtr r = addc_with_number_value(t, self, name, args, kwargs, handled); handled) return r;
  }
  if (refuse_dynamic_int_arguments(t, self, args, kwargs, "Tensor." + name + "'s argument")) return nullptr;
  if (is_python_number(self)) return t.unsupported("method '" + name + "' of a Python number from Tensor.item()"), nullptr;
  const graph::TensorMeta& m = self->meta();
  if (auto it = method_handlers().find(name); it != method_handlers().end()) {
    MethodCall call{t, self, name, args, kwargs, m, static_cast<int64_t>(m.sizes.size())};
    if (MethodResult r = it->second(call)) return *r;
  }
  if (packs_varargs(name)) args = pack_ints(std::move(args), 0);
  // The method binds `self` to the schema's `self`, which is not always its
  // first argument: t.where(c, y) is where(c, t, y).
  size_t self_position = name == "where" && !args.empty() ? 1 : 0;
  std::vector<ValuePtr> all = std::move(args);
  all.insert(all.begin() + static_cast<long>(self_position), self);
  return call_aten_from_user(t, "aten::" + name, std::move(all), std::move(kwargs));
}

namespace {

// Tensor.grad / Tensor.grad_fn of an input tensor (a parameter's .grad in
// optimizer.step()): the real attribute, read through its source and
// guarded like any input; of any other tensor not traceable.
ValuePtr input_autograd_attr(InstructionTranslator& t, const ValuePtr& self, const char* name) {
  if (self->source) {
    if (PyObject* real = t.input_tensor_object(self)) {
      PyRef attr = PyRef::steal(PyObject_GetAttrString(real, name));
      if (!attr) return t.unsupported(std::string("Tensor.") + name + " could not be read"), nullptr;  // it names the error
      return t.wrap_input(attr.get(), Source::attr(self->source, name));
    }
  }
  return t.unsupported(std::string("Tensor.") + name + " is not traceable"), nullptr;
}

// Attributes answered from the tensor's metadata (or one ATen view), by name.
using AttributeHandler = ValuePtr (*)(InstructionTranslator& t, const ValuePtr& self, const graph::TensorMeta& m);

const std::unordered_map<std::string_view, AttributeHandler>& attribute_handlers() {
  using T = InstructionTranslator;
  using M = graph::TensorMeta;
  static const std::unordered_map<std::string_view, AttributeHandler> handlers = {
      {"shape", [](T& t, const ValuePtr& self, const M&) { return tensor_shape(t, self); }},
      {"dtype", [](T&, const ValuePtr&, const M& m) { return dtype_constant(m.dtype); }},
      {"device", [](T&, const ValuePtr&, const M& m) { return Value::constant_steal(device_object(m.device)); }},
      {"ndim", [](T&, const ValuePtr&, const M& m) { return int_constant(static_cast<int64_t>(m.sizes.size())); }},
      // `.data =` keeps the flag
      {"requires_grad",
       [](T& t, const ValuePtr& self, const M&) { return bool_constant(data_replaced_requires_grad(t, self)); }},
      {"is_cuda", [](T&, const ValuePtr&, const M& m) { return bool_constant(m.device.is_cuda()); }},
      {"is_sparse", [](T&, const ValuePtr&, const M&) { return bool_constant(false); }},
      {"T", [](T& t, const ValuePtr& self, const M&) { return call_aten(t, "aten::numpy_T", {self}); }},
      {"mT",
       [](T& t, const ValuePtr& self, const M&) {
         return call_aten(t, "aten::transpose", {self, int_constant(-2), int_constant(-1)});
       }},
      // Tensor.real of a real tensor is the tensor itself; of a complex one a view.
      {"real",
       [](T& t, const ValuePtr& self, const M& m) {
         return c10::isComplexType(m.dtype) ? call_aten(t, "aten::real", {self}) : self;
       }},
      {"imag", [](T& t, const ValuePtr& self, const M&) { return call_aten(t, "aten::imag", {self}); }},
      {"is_nested", [](T&, const ValuePtr&, const M&) { return bool_constant(false); }},
      {"is_quantized", [](T&, const ValuePtr&, const M&) { return bool_constant(false); }},
      {"is_mkldnn", [](T&, const ValuePtr&, const M&) { return bool_constant(false); }},
      {"is_complex_attr", [](T&, const ValuePtr&, const M&) { return bool_constant(false); }},
      {"is_meta",
       [](T&, const ValuePtr&, const M& m) { return bool_constant(m.device.type() == c10::DeviceType::Meta); }},
      // the tensor's type (TENSOR_MATCH guards an input's)
      {"__class__",
       [](T&, const ValuePtr& self, const M&) {
         PyObject* type = self->obj ? self->obj.get() : cached_module_attr("torch", "Tensor");
         return type ? Value::callable(type) : nullptr;
       }},
      // The autograd attributes. .grad: written earlier in the trace (`p.grad
      // = None` in zero_grad), else an input's.
      {"grad",
       [](T& t, const ValuePtr& self, const M&) {
         for (const auto& [n, v] : self->attr_overrides)
           if (n == "grad") return v;
         return input_autograd_attr(t, self, "grad");
       }},
      // Tensor.data: a tensor sharing the storage, outside autograd (an alias
      // that does not require grad, which detach() is; writes through it reach
      // the original, as eager's do).
      {"data", [](T& t, const ValuePtr& self, const M&) { return call_aten(t, "aten::detach", {self}); }},
      // A tensor the graph made that does not require grad has no grad_fn.
      // An input the graph wrote in place and that requires grad after it,
      // or whose memory it wrote values requiring grad into through another
      // view: its grad_fn is made when the graph runs (the object's at trace
      // time is the old one, or None). An input written without grad (a
      // `.grad` accumulated in place, read by zero_grad) keeps its grad_fn.
      {"grad_fn",
       [](T& t, const ValuePtr& self, const M& m) {
         if (!self->source && !data_replaced_requires_grad(t, self)) return Value::constant(Py_None);
         const bool written_in_place = self->node->op() && self->node->op()->traits.inplace;
         if (self->source && ((written_in_place && m.requires_grad) || requires_grad_by_write(t, self->node)))
           return t.unsupported("Tensor.grad_fn of an input the graph wrote in place (autograd gives it its "
                                "grad_fn when the graph runs)"),
                  ValuePtr();
         return input_autograd_attr(t, self, "grad_fn");
       }},
      {"_version",
       [](T& t, const ValuePtr&, const M&) { return t.unsupported("Tensor._version is not traceable"), ValuePtr(); }},
  };
  return handlers;
}

}  // namespace

ValuePtr tensor_attribute(InstructionTranslator& t, const ValuePtr& self, const std::string& name) {
  if (is_python_number(self))
    return t.unsupported("attribute '" + name + "' of a Python number from Tensor.item() (not modelled)"), nullptr;
  const graph::TensorMeta& m = self->meta();
  if (auto it = attribute_handlers().find(name); it != attribute_handlers().end()) return it->second(t, self, m);
  // Only methods become bound methods; any other attribute (a property)
  // is not modelled.
  PyObject* tensor_type = cached_module_attr("torch", "Tensor");
  PyRef attr = PyRef::steal(tensor_type ? PyObject_GetAttrString(tensor_type, name.c_str()) : nullptr);
  bool is_method = attr && (PyObject_TypeCheck(attr.get(), &PyMethodDescr_Type) || PyFunction_Check(attr.get()) ||
                            PyCFunction_Check(attr.get()));
  clear_expected_error({PyExc_AttributeError});  // not an attribute of torch.Tensor: the reason below
  if (!is_method) return t.unsupported("the tensor attribute '" + name + "' is not modelled"), nullptr;
  return Value::tensor_method(self, name);  // a bound method, called later
}

// --------------------------------------------------------- operators

ValuePtr tensor_binary_op(InstructionTranslator& t, bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs) {
  const bc::BinaryOpInfo& row = *op.info;
  const std::string aten(row.aten);
  if (lhs->is_tensor()) {
    if (op.inplace && !row.aten_inplace.empty()) return call_aten(t, std::string(row.aten_inplace), {lhs, rhs});
    return call_aten(t, aten, {lhs, rhs});
  }
  // A number (or list) on the left of a tensor: Tensor.__r<op>__.
  using R = bc::TensorReflected;
  switch (row.tensor_reflected) {
    case R::swapped: return call_aten(t, aten, {rhs, lhs});
    case R::rsub: return call_aten(t, "aten::rsub", {rhs, lhs});
    case R::reciprocal_mul: {
      ValuePtr r = call_aten(t, "aten::reciprocal", {rhs});
      return r ? call_aten(t, "aten::mul", {r, lhs}) : nullptr;
    }
    case R::scalar_pow: {
      // Tensor.__rpow__: torch.tensor(lhs, dtype=torch.result_type(lhs, rhs)) ** rhs.
      auto dtype = lhs->is_constant() ? result_type(rhs->meta(), lhs->obj.get()) : std::nullopt;
      if (!dtype) return t.unsupported(std::string("a ") + lhs->type_name() + " to the power of a tensor"), nullptr;
      ValuePtr base = call_aten(t, "aten::scalar_tensor", {lhs},
                                {{"dtype", dtype_constant(*dtype)},
                                 {"device", Value::constant_steal(device_object(rhs->meta().device))}});
      return base ? call_aten(t, aten, {base, rhs}) : nullptr;
    }
    case R::number_first: return call_aten(t, aten, {lhs, rhs});
    case R::none: break;
  }
  return t.unsupported(std::string("a ") + lhs->type_name() + " on the left of a tensor operator"), nullptr;
}

ValuePtr tensor_compare(InstructionTranslator& t, int op, const ValuePtr& lhs, const ValuePtr& rhs) {
  static const char* kNames[6] = {"lt", "le", "eq", "ne", "gt", "ge"};
  static const int kSwapped[6] = {Py_GT, Py_GE, Py_EQ, Py_NE, Py_LT, Py_LE};
  if (lhs->is_tensor()) return call_aten(t, std::string("aten::") + kNames[op], {lhs, rhs});
  return call_aten(t, std::string("aten::") + kNames[kSwapped[op]], {rhs, lhs});
}

ValuePtr tensor_unary(InstructionTranslator& t, bc::Opcode op, const ValuePtr& operand) {
  switch (op) {
    case bc::Opcode::UNARY_NEGATIVE: return call_aten(t, "aten::neg", {operand});
    case bc::Opcode::UNARY_POSITIVE: return call_aten(t, "aten::positive", {operand});
    case bc::Opcode::UNARY_INVERT: return call_aten(t, "aten::bitwise_not", {operand});
    default: return t.unsupported(std::string(bc::info(op).name) + " on a tensor (data-dependent)"), nullptr;
  }
}

}  // namespace tj::tracer
