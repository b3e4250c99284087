// Helpers shared by the files that map torch calls to ATen nodes
// (torch_ops.cpp: arguments and call_aten, torch callables;
// torch_functional.cpp: torch.nn.functional; tensor_methods.cpp: Tensor
// methods, attributes and operators): Python constants as values, constant
// ints read back, varargs sizes packed into one list. Internal to them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/tensor_bridge.h"
#include "tracer/torch_ops.h"

namespace tj::tracer {

inline bool is_int(PyObject* o) { return PyLong_Check(o) && !PyBool_Check(o); }

inline ValuePtr int_constant(int64_t x) { return Value::constant_steal(PyLong_FromLongLong(x)); }
inline ValuePtr bool_constant(bool b) { return Value::constant(b ? Py_True : Py_False); }
inline ValuePtr dtype_constant(c10::ScalarType d) { return Value::constant_steal(dtype_object(d)); }

// torch.result_type(number, tensor) for a Python number and a tensor of this
// description (support/tensor_bridge.h); nullopt for anything else.
inline std::optional<c10::ScalarType> result_type(const graph::TensorMeta& tensor, PyObject* number) {
  return tj::result_type(tensor.dtype, tensor.sizes.size(), number);
}

inline std::optional<int64_t> const_int(const ValuePtr& v) {
  if (!v->is_constant() || !is_int(v->obj.get())) return std::nullopt;
  return PyLong_AsLongLong(v->obj.get());
}

inline int64_t normalize_dim(int64_t dim, int64_t ndim) { return dim < 0 ? dim + ndim : dim; }

// The constant ints (or symints) of args[from...] packed into one list
// argument (t.view(2, 3) is view(t, [2, 3])); args unchanged otherwise.
std::vector<ValuePtr> pack_ints(std::vector<ValuePtr> args, size_t from);

// torch.nn.functional functions the tracer lowers itself, by a table of
// their signatures (torch_functional.cpp): whether `fn` is one, and its
// call bound to that signature and lowered to ATen.
bool is_lowered_functional(PyObject* fn);
ValuePtr call_lowered_functional(InstructionTranslator& t, PyObject* fn, const std::vector<ValuePtr>& args,
                                 const Kwargs& kwargs);

}  // namespace tj::tracer
