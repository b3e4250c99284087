// torch.tensor / torch.as_tensor of Python data in the graph: scalar
// constants, numbers from Tensor.item()/.tolist() (symbolic_numbers.cpp)
// and 0-d tensors, nested in lists and tuples; each element a 0-d tensor of
// the dtype torch.tensor infers (or dtype=), stacked and reshaped.
#include <algorithm>

#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/torch_ops.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

ValuePtr tensor_of_scalar(InstructionTranslator& t, const ValuePtr& data, const Kwargs& kwargs) {
  PyObject* o = data->is_constant() ? data->obj.get() : nullptr;
  bool constant = o && (PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o));
  if (!constant && !is_python_number(data)) return nullptr;
  c10::ScalarType inferred = default_dtype();
  PyObject* kind = constant ? reinterpret_cast<PyObject*>(Py_TYPE(o)) : data->obj.get();
  if (kind == reinterpret_cast<PyObject*>(&PyBool_Type)) inferred = c10::ScalarType::Bool;
  if (kind == reinterpret_cast<PyObject*>(&PyLong_Type)) inferred = c10::ScalarType::Long;
  ValuePtr dtype = dtype_constant(inferred);
  for (const auto& [k, v] : kwargs) {
    if (k == "dtype" && !(v->is_constant() && v->obj.get() == Py_None)) {
      dtype = v;
    } else if (k == "device") {
      PyObject* d = v->is_constant() ? v->obj.get() : nullptr;
      auto dev = d ? as_device(d) : std::nullopt;
      bool cpu = d == Py_None || (dev && dev->is_cpu()) || (d && PyUnicode_Check(d) && PyUnicode_CompareWithASCIIString(d, "cpu") == 0);
      if (!cpu) return t.unsupported("torch.tensor on a device other than the CPU"), nullptr;
    } else if (k == "requires_grad" && v->is_constant() && v->obj.get() == Py_False) {
    } else if (k != "dtype") {
      return t.unsupported("torch.tensor with the keyword '" + k + "'"), nullptr;
    }
  }
  if (constant) return call_aten(t, "aten::scalar_tensor", {data}, {{"dtype", dtype}});
  // A number from Tensor.item(): eager stores the Python scalar in the
  // dtype, unchecked for floats (1e300 is inf in float32) but checked for
  // narrow ints and Half (300 in uint8 raises); only the casts the graph's
  // _to_copy gives alike are kept (number_read_as breaks for the others).
  auto want = dtype->is_constant() ? as_dtype(dtype->obj.get()) : std::nullopt;
  if (!want)
    return t.unsupported("torch.tensor of a Python number from Tensor.item() with a dtype that is not a constant"),
           nullptr;
  if (!number_read_as(t, data, *want, /*checked=*/false, "torch.tensor")) return nullptr;
  return call_aten(t, "aten::_to_copy", {data}, {{"dtype", dtype}});
}

namespace {

// The leaves of torch.tensor's data (nested lists and tuples, constant or
// traced), row-major, and the shape they make; false when the data is
// ragged, too large to unroll, or holds something other than numbers.
constexpr size_t kMaxTensorDataElements = 256;

// A 0-d tensor of the graph (not a number from Tensor.item()): torch.tensor
// takes its value (`torch.tensor([R])` with R from iterating a tensor).
bool is_zero_dim_tensor(const ValuePtr& v) {
  return v->is_tensor() && !is_python_number(v) && v->meta().sizes.empty();
}

bool flatten_tensor_data(const ValuePtr& data, size_t depth, std::vector<int64_t>& shape, std::vector<ValuePtr>& leaves) {
  std::vector<ValuePtr> items;
  PyObject* o = data->is_constant() ? data->obj.get() : nullptr;
  if (data->is_sequence()) {
    items = data->items;
  } else if (o && (PyList_CheckExact(o) || PyTuple_CheckExact(o))) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
      items.push_back(Value::constant(PySequence_Fast_GET_ITEM(o, i)));
  } else {
    bool number = o ? (PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o)) : is_python_number(data);
    number = number || is_zero_dim_tensor(data);
    if (!number || depth != shape.size()) return false;
    leaves.push_back(data);
    return leaves.size() <= kMaxTensorDataElements;
  }
  if (depth == shape.size()) {
    if (items.empty()) return false;  // torch.tensor([]): rare, left to CPython
    shape.push_back(static_cast<int64_t>(items.size()));
  } else if (depth > shape.size() || shape[depth] != static_cast<int64_t>(items.size())) {
    return false;  // ragged: torch.tensor raises
  }
  for (const ValuePtr& item : items)
    if (!flatten_tensor_data(item, depth + 1, shape, leaves)) return false;
  return true;
}

// The dtype torch.tensor infers from Python numbers: bool when all are
// bools, int64 when all are ints or bools, else the default float dtype.
c10::ScalarType inferred_data_dtype(const std::vector<ValuePtr>& leaves) {
  bool all_bool = true, all_int = true;
  for (const ValuePtr& v : leaves) {
    PyObject* kind = v->is_constant() ? reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get())) : v->obj.get();
    all_bool = all_bool && kind == reinterpret_cast<PyObject*>(&PyBool_Type);
    all_int = all_int && (kind == reinterpret_cast<PyObject*>(&PyBool_Type) || kind == reinterpret_cast<PyObject*>(&PyLong_Type));
  }
  return all_bool ? c10::ScalarType::Bool : all_int ? c10::ScalarType::Long : default_dtype();
}

ValuePtr reshaped(InstructionTranslator& t, ValuePtr flat, const std::vector<int64_t>& shape) {
  if (!flat || shape.size() == 1) return flat;
  PyRef sizes = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(shape.size())));
  for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(sizes.get(), i, PyLong_FromLongLong(shape[i]));
  return call_aten(t, "aten::reshape", {flat, Value::constant(sizes.get())});
}

// torch.tensor of nested lists of 0-d tensors of one dtype: their values
// (detached: the result never requires grad), in that dtype unless dtype=
// says otherwise. Mixed with Python numbers, or of mixed dtypes (eager
// promotes), it is left to CPython (null, nothing set).
ValuePtr tensor_of_tensors(InstructionTranslator& t, const std::vector<ValuePtr>& leaves,
                           const std::vector<int64_t>& shape, const Kwargs& kwargs) {
  if (!std::all_of(leaves.begin(), leaves.end(), is_zero_dim_tensor)) return nullptr;
  const c10::ScalarType dtype = leaves[0]->meta().dtype;
  for (const ValuePtr& leaf : leaves)
    if (leaf->meta().dtype != dtype || !leaf->meta().device.is_cpu()) return nullptr;
  ValuePtr want = dtype_constant(dtype);
  for (const auto& [k, v] : kwargs) {
    PyObject* d = v->is_constant() ? v->obj.get() : nullptr;
    if (k == "dtype" && d != Py_None) {
      want = v;
    } else if (k == "device") {
      auto dev = d ? as_device(d) : std::nullopt;
      if (!(d == Py_None || (dev && dev->is_cpu()) || (d && PyUnicode_Check(d) && PyUnicode_CompareWithASCIIString(d, "cpu") == 0)))
        return nullptr;
    } else if (!(k == "requires_grad" && d == Py_False) && k != "dtype") {
      return nullptr;
    }
  }
  std::vector<ValuePtr> elements;
  for (const ValuePtr& leaf : leaves) {
    ValuePtr detached = call_aten(t, "aten::detach", {leaf});
    ValuePtr element = detached ? call_aten(t, "aten::_to_copy", {detached}, {{"dtype", want}}) : nullptr;
    if (!element) return nullptr;
    elements.push_back(std::move(element));
  }
  return reshaped(t, call_aten(t, "aten::stack", {Value::sequence(ValueKind::list, std::move(elements))}), shape);
}

}  // namespace

ValuePtr tensor_of_data(InstructionTranslator& t, const ValuePtr& data, const Kwargs& kwargs) {
  std::vector<int64_t> shape;
  std::vector<ValuePtr> leaves;
  if (!flatten_tensor_data(data, 0, shape, leaves) || shape.empty()) return nullptr;
  // Each element a 0-d tensor of the whole's dtype (an explicit dtype= wins).
  Kwargs element_kwargs = kwargs;
  bool has_dtype = false;
  for (auto& [k, v] : element_kwargs) has_dtype = has_dtype || (k == "dtype" && !(v->is_constant() && v->obj.get() == Py_None));
  if (!has_dtype) {
    std::erase_if(element_kwargs, [](const auto& kv) { return kv.first == "dtype"; });
    element_kwargs.emplace_back("dtype", dtype_constant(inferred_data_dtype(leaves)));
  }
  if (std::any_of(leaves.begin(), leaves.end(), is_zero_dim_tensor)) return tensor_of_tensors(t, leaves, shape, kwargs);
  std::vector<ValuePtr> elements;
  for (const ValuePtr& leaf : leaves) {
    ValuePtr element = tensor_of_scalar(t, leaf, element_kwargs);
    if (!element) return nullptr;
    elements.push_back(std::move(element));
  }
  return reshaped(t, call_aten(t, "aten::stack", {Value::sequence(ValueKind::list, std::move(elements))}), shape);
}

}  // namespace tj::tracer
