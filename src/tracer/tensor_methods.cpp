// Tensor methods, tensor attributes and Python operators on tensors,
// mapped to ATen calls (call_aten) or answered from the tensor's fake
// metadata (size(), dim(), dtype, ...). See torch_ops.h.
#include <algorithm>
#include <map>

#include "support/py_lookup.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

namespace {

// Methods whose ints after self are one shape/dims list: t.view(2, 3).
bool packs_varargs(const std::string& name) {
  static const char* kNames[] = {"view", "reshape", "expand", "repeat", "permute", "tile", "flip", "new_zeros",
                                 "new_ones", "new_empty"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

const std::map<std::string, c10::ScalarType>& dtype_methods() {
  static const std::map<std::string, c10::ScalarType> m = {
      {"float", c10::ScalarType::Float}, {"double", c10::ScalarType::Double}, {"half", c10::ScalarType::Half},
      {"bfloat16", c10::ScalarType::BFloat16}, {"int", c10::ScalarType::Int}, {"long", c10::ScalarType::Long},
      {"short", c10::ScalarType::Short}, {"char", c10::ScalarType::Char}, {"byte", c10::ScalarType::Byte},
      {"bool", c10::ScalarType::Bool}};
  return m;
}

}  // namespace

// --------------------------------------------------------- tensor methods

ValuePtr call_tensor_method(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                            std::vector<ValuePtr> args, Kwargs kwargs) {
  if (refuse_dynamic_int_arguments(t, self, args, kwargs, "Tensor." + name + "'s argument")) return nullptr;
  if (is_python_number(self)) return t.unsupported("method '" + name + "' of a Python number from Tensor.item()"), nullptr;
  if (name == "item" && args.empty() && kwargs.empty()) return tensor_item(t, self);
  bool handled = false;
  if (ValuePtr r = addc_with_number_value(t, self, name, args, kwargs, handled); handled) return r;
  if (name == "new_full")
    if (ValuePtr r = full_of_number(t, self, args, kwargs, handled); handled) return r;
  const graph::TensorMeta& m = self->meta();
  const int64_t ndim = static_cast<int64_t>(m.sizes.size());
  if (name == "size" || name == "stride") {
    if (name == "stride" && t.unbacked_size_read(self, "Tensor.stride()")) return nullptr;
    if (name == "stride") t.note_sizes_read("Tensor.stride()");
    const auto& v = name == "size" ? m.sizes : m.strides;
    if (args.empty() && kwargs.empty()) {
      if (name == "size") return t.tensor_shape(self);
      PyObject* strides = PyTuple_New(static_cast<Py_ssize_t>(v.size()));
      for (size_t i = 0; i < v.size(); ++i) PyTuple_SET_ITEM(strides, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(v[i]));
      return Value::constant_steal(strides);
    }
    auto dim = args.size() == 1 ? const_int(args[0]) : std::nullopt;
    if (!dim || *dim < -ndim || *dim >= ndim) return t.unsupported("Tensor." + name + " with a bad dim"), nullptr;
    return name == "size" ? t.tensor_size(self, normalize_dim(*dim, ndim)) : int_constant(v[normalize_dim(*dim, ndim)]);
  }
  if (name == "new" && kwargs.empty()) {
    // The legacy constructor: t.new(2, 3) / t.new(torch.Size) / t.new() are
    // uninitialised tensors of t's dtype and device; t.new(data) is data.
    bool sizes = std::all_of(args.begin(), args.end(), [](const ValuePtr& a) { return a->is_constant() && PyLong_Check(a->obj.get()); });
    if (args.size() == 1 && ((args[0]->is_constant() && is_size(args[0]->obj.get())) || args[0]->obj.get() == size_type())) sizes = true;
    if (args.empty()) args.push_back(int_constant(0));
    if (sizes) return call_tensor_method(t, self, "new_empty", std::move(args), {});
    return t.unsupported("Tensor.new(data) (a tensor built from Python data)"), nullptr;
  }
  if (name == "new_tensor") return t.unsupported("Tensor.new_tensor (a tensor built from Python data)"), nullptr;
  if (name == "dim" || name == "ndimension") return int_constant(ndim);
  if (name == "numel" || name == "nelement") return t.tensor_numel(self);
  if (name == "is_contiguous" && args.empty()) {
    if (t.unbacked_size_read(self, "Tensor.is_contiguous()")) return nullptr;
    t.note_sizes_read("Tensor.is_contiguous()");
    return bool_constant(m.is_contiguous());
  }
  if (name == "is_floating_point") return bool_constant(c10::isFloatingType(m.dtype));
  if (name == "is_complex") return bool_constant(c10::isComplexType(m.dtype));
  if (name == "element_size") return int_constant(static_cast<int64_t>(c10::elementSize(m.dtype)));
  if (name == "item" || name == "tolist" || name == "numpy" || name == "__bool__" || name == "__int__" ||
      name == "__float__" || name == "data_ptr")
    return t.unsupported("Tensor." + name + "() needs the tensor's data (data-dependent)"), nullptr;
  if (name == "backward") {
    args.insert(args.begin(), self);
    return t.trace_backward(nullptr, std::move(args), std::move(kwargs), /*tensor_method=*/true);
  }
  // requires_grad_(False) of a tensor that does not require grad changes
  // nothing (zero_grad(set_to_none=False) calls it on each grad).
  if (name == "requires_grad_" && !m.requires_grad && args.size() + kwargs.size() == 1 &&
      (args.empty() ? kwargs[0].first == "requires_grad" && kwargs[0].second->is_constant() &&
                          kwargs[0].second->obj.get() == Py_False
                    : args[0]->is_constant() && args[0]->obj.get() == Py_False))
    return self;
  if (name == "register_hook" || name == "retain_grad" || name == "cuda")
    return t.unsupported("Tensor." + name + "() is not traceable"), nullptr;
  // Calls that change nothing return the tensor itself in eager (an alias
  // whose metadata follows later in-place changes of the original): so
  // does the tracer, with no node.
  if (name == "contiguous" && t.unbacked_size_read(self, "Tensor.contiguous()")) return nullptr;
  if (name == "contiguous" && args.empty() && kwargs.empty() && m.is_contiguous()) {
    t.note_sizes_read("Tensor.contiguous() of a contiguous tensor (no copy)");
    return self;
  }
  if (name == "contiguous" && args.empty() && kwargs.size() == 1 && kwargs[0].first == "memory_format" &&
      kwargs[0].second->is_constant() && as_memory_format(kwargs[0].second->obj.get()) == c10::MemoryFormat::Contiguous &&
      m.is_contiguous()) {
    t.note_sizes_read("Tensor.contiguous(memory_format=torch.contiguous_format) of a contiguous tensor (no copy)");
    return self;
  }
  // x.flatten() of a 1-d x is x (ATen returns self when start and end dims agree).
  if (name == "flatten" && args.empty() && kwargs.empty() && ndim == 1) return self;
  // x.to(dtype=x.dtype[, copy=False][, non_blocking=...]) is x.
  if (name == "to" && args.empty() && !kwargs.empty()) {
    bool same = false, other = false;
    for (const auto& [k, v] : kwargs) {
      bool harmless = (k == "copy" && v->is_constant() && v->obj.get() == Py_False) ||
                      (k == "non_blocking" && v->is_constant());
      if (k == "dtype" && v->is_constant() && as_dtype(v->obj.get()) == m.dtype) same = true;
      else other |= !harmless;
    }
    if (same && !other) return self;
  }
  if (auto it = dtype_methods().find(name); it != dtype_methods().end() && args.empty()) {
    if (kwargs.empty() && it->second == m.dtype) return self;
    return call_aten(t, "aten::to", {self, dtype_constant(it->second)}, std::move(kwargs));
  }
  if (name == "type_as" && args.size() == 1 && args[0]->is_tensor()) {
    if (args[0]->meta().dtype == m.dtype) return self;
    return call_aten(t, "aten::to", {self, dtype_constant(args[0]->meta().dtype)});
  }
  if (name == "to" && !args.empty())  // x.to("cpu"): the device the string names
    if (ValuePtr device = device_of_string(args[0])) args[0] = device;
  if (name == "type" && args.size() == 1 && kwargs.empty() && args[0]->is_constant() && as_dtype(args[0]->obj.get())) {
    if (*as_dtype(args[0]->obj.get()) == m.dtype) return self;  // x.type(torch.float64): x.to(torch.float64)
    return call_aten(t, "aten::to", {self, args[0]});
  }
  if (name == "to" && args.size() == 1 && kwargs.empty() && args[0]->is_constant()) {
    auto dtype = as_dtype(args[0]->obj.get());
    if (dtype && *dtype == m.dtype) return self;
  }
  if (name == "to" && args.size() == 1 && kwargs.empty() && args[0]->is_tensor() &&
      args[0]->meta().dtype == m.dtype && args[0]->meta().device == m.device)
    return self;
  if (name == "to" || name == "cpu") {
    if (name == "cpu") args = {Value::constant_steal(device_object(c10::Device(c10::kCPU)))};
    if (args.size() == 1 && args[0]->is_tensor()) args[0] = dtype_constant(args[0]->meta().dtype);
    if (!args.empty() && args[0]->is_constant() && as_device(args[0]->obj.get())) {
      if (args.size() == 1) args.push_back(dtype_constant(m.dtype));
      return call_aten(t, "aten::to", {self, args[0], args[1]}, std::move(kwargs));
    }
    std::vector<ValuePtr> all{self};
    for (auto& a : args) all.push_back(a);
    return call_aten(t, "aten::to", std::move(all), std::move(kwargs));
  }
  if (name == "norm" && args.empty() && !kwargs.empty()) {
    // Tensor.norm(dim=..., keepdim=...) is norm(self, p=2, dim, keepdim) in ATen.
    bool has_p = false;
    for (auto& [k, v] : kwargs) has_p |= k == "p";
    if (!has_p) args.push_back(int_constant(2));
  }
  if (name == "split" && args.size() >= 1 && args[0]->is_sequence()) {
    std::vector<ValuePtr> all{self};
    for (auto& a : args) all.push_back(a);
    return call_aten(t, "aten::split_with_sizes", std::move(all), std::move(kwargs));
  }
  if (packs_varargs(name)) args = pack_ints(std::move(args), 0);
  // The method binds `self` to the schema's `self`, which is not always its
  // first argument: t.where(c, y) is where(c, t, y).
  size_t self_position = name == "where" && !args.empty() ? 1 : 0;
  std::vector<ValuePtr> all = std::move(args);
  all.insert(all.begin() + static_cast<long>(self_position), self);
  return call_aten(t, "aten::" + name, std::move(all), std::move(kwargs));
}

ValuePtr tensor_attribute(InstructionTranslator& t, const ValuePtr& self, const std::string& name) {
  if (is_python_number(self))
    return t.unsupported("attribute '" + name + "' of a Python number from Tensor.item() (not modelled)"), nullptr;
  const graph::TensorMeta& m = self->meta();
  if (name == "shape") return t.tensor_shape(self);
  if (name == "dtype") return dtype_constant(m.dtype);
  if (name == "device") return Value::constant_steal(device_object(m.device));
  if (name == "ndim") return int_constant(static_cast<int64_t>(m.sizes.size()));
  if (name == "requires_grad") return bool_constant(t.data_replaced_requires_grad(self));  // `.data =` keeps the flag
  if (name == "is_cuda") return bool_constant(m.device.is_cuda());
  if (name == "is_sparse") return bool_constant(false);
  if (name == "T") return call_aten(t, "aten::numpy_T", {self});
  if (name == "mT") return call_aten(t, "aten::transpose", {self, int_constant(-2), int_constant(-1)});
  // Tensor.real of a real tensor is the tensor itself; of a complex one a view.
  if (name == "real") return c10::isComplexType(m.dtype) ? call_aten(t, "aten::real", {self}) : self;
  if (name == "imag") return call_aten(t, "aten::imag", {self});
  if (name == "is_nested" || name == "is_quantized" || name == "is_meta" || name == "is_mkldnn" ||
      name == "is_complex_attr")
    return bool_constant(name == "is_meta" ? m.device.type() == c10::DeviceType::Meta : false);
  if (name == "__class__") {  // the tensor's type (TENSOR_MATCH guards an input's)
    PyObject* type = self->obj ? self->obj.get() : cached_module_attr("torch", "Tensor");
    return type ? Value::callable(type) : nullptr;
  }
  if (name == "grad")  // written earlier in the trace (`p.grad = None` in zero_grad)
    for (const auto& [n, v] : self->attr_overrides)
      if (n == name) return v;
  // Tensor.data: a tensor sharing the storage, outside autograd (an alias
  // that does not require grad, which detach() is; writes through it reach
  // the original, as eager's do).
  if (name == "data") return call_aten(t, "aten::detach", {self});
  // A tensor the graph made that does not require grad has no grad_fn.
  if (name == "grad_fn" && !self->source && !m.requires_grad) return Value::constant(Py_None);
  if ((name == "grad" || name == "grad_fn") && self->source) {
    // Of an input tensor (a parameter's .grad in optimizer.step()): the
    // real attribute, read through its source and guarded like any input.
    if (PyObject* real = t.input_tensor_object(self)) {
      PyRef attr = PyRef::steal(PyObject_GetAttrString(real, name.c_str()));
      if (!attr) return t.unsupported("Tensor." + name + " could not be read"), nullptr;  // it names the error
      return t.wrap_input(attr.get(), Source::attr(self->source, name));
    }
  }
  if (name == "data" || name == "grad" || name == "grad_fn" || name == "_version")
    return t.unsupported("Tensor." + name + " is not traceable"), nullptr;
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
