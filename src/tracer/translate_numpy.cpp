// numpy arrays made in the traced frame from constants (issue 42: PointNet's
// `torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32))`,
// `torch.tensor(np.eye(k))`). numpy's array-making functions and ufuncs called
// on constants, and the pure methods of an array made so, run at trace time:
// the array is a constant of the trace (deterministic, as eager's per call).
// torch.from_numpy / torch.tensor / torch.as_tensor of such an array is a
// tensor built from its values in the graph (tensor_of_data), of the dtype
// torch gives the array. Only an allow-list is folded: numpy.random and
// functions with effects (I/O, global settings) are calls the tracer does not
// model. An array read from an input (a source) is never folded: its values
// may change between calls.
//
// Such an array cannot leave the graph (output_planner.cpp: eager makes a new
// one per call). One thing eager does that the graph does not:
// torch.from_numpy shares the array's memory, so an in-place write to the
// tensor would reach the array, while the trace's array keeps its values; a
// frame reading the array again after writing its tensor in place is the one
// program this misses.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "support/py_ref.h"
#include "tracer/numpy_values.h"
#include "tracer/py_str.h"
#include "tracer/torch_ops.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// numpy functions that make an array from their arguments and do nothing else.
constexpr const char* kArrayFunctions[] = {
    "array",     "asarray",  "ascontiguousarray", "asanyarray", "eye",    "identity", "zeros",   "ones",
    "full",      "arange",   "linspace",          "concatenate", "stack", "hstack",   "vstack",  "diag",
    "tile",      "repeat",   "reshape",           "transpose",  "expand_dims", "squeeze", "flip", "zeros_like",
    "ones_like", "full_like", "outer",            "dot",        "matmul", "sum",      "mean",    "prod",
    "cumsum",    "clip",     "where",             "round",      "deg2rad", "rad2deg"};

// Methods of an array that return a new array or a number.
constexpr std::string_view kArrayMethods[] = {"astype", "reshape", "copy", "transpose", "flatten", "ravel",
                                              "squeeze", "sum",     "mean", "max",       "min",     "prod",
                                              "item",    "dot",     "clip", "round",     "cumsum",  "repeat"};

bool is_ufunc(PyObject* f) {
  PyObject* ufunc = cached_module_attr("numpy", "ufunc");
  return ufunc && PyObject_TypeCheck(f, reinterpret_cast<PyTypeObject*>(ufunc));
}

// A cheap first look: a function of module numpy, a ufunc, or a builtin
// method bound to an array.
bool maybe_numpy(PyObject* f) {
  PyObject* module = PyFunction_Check(f)    ? PyFunction_GET_MODULE(f)
                     : PyCFunction_Check(f) ? reinterpret_cast<PyCFunctionObject*>(f)->m_module
                                            : nullptr;
  if (module && PyUnicode_Check(module) && PyUnicode_CompareWithASCIIString(module, "numpy") == 0) return true;
  if (PyCFunction_Check(f)) return PyCFunction_GET_SELF(f) && is_numpy_array(PyCFunction_GET_SELF(f));
  return !PyFunction_Check(f) && is_ufunc(f);
}

bool is_numpy_array_function(PyObject* f) {
  return std::any_of(std::begin(kArrayFunctions), std::end(kArrayFunctions),
                     [f](const char* name) { return f == cached_module_attr("numpy", name); });
}

// A method of an array made in the frame: `a.astype` read from a constant
// array (no source: an input's array is read through one).
bool is_frame_array_method(const ValuePtr& fn, PyObject* f) {
  if (fn->source || !PyCFunction_Check(f)) return false;
  PyObject* self = PyCFunction_GET_SELF(f);
  if (!self || !is_numpy_array(self)) return false;
  std::string_view name = reinterpret_cast<PyCFunctionObject*>(f)->m_ml->ml_name;
  return std::find(std::begin(kArrayMethods), std::end(kArrayMethods), name) != std::end(kArrayMethods);
}

// Constants all through (a class too: `a.astype(np.float32)`), with no
// array read from an input among them.
bool foldable(const ValuePtr& v) {
  if (v->kind == ValueKind::callable && v->obj && PyType_Check(v->obj.get())) return true;
  if (!v->is_python_constant()) return false;
  if (v->is_constant()) return !(v->source && is_numpy_array(v->obj.get()));
  return std::all_of(v->items.begin(), v->items.end(), foldable);
}

bool has_frame_array(const std::vector<ValuePtr>& args) { return std::any_of(args.begin(), args.end(), is_frame_array); }

std::string name_of(PyObject* f) {
  PyRef name = PyRef::steal(PyObject_GetAttrString(f, "__name__"));
  std::string n = name && PyUnicode_Check(name.get()) ? utf8(name.get()) : "?";
  PyErr_Clear();  // a callable without a str __name__: named "?" in the reason
  return "numpy " + n;
}

}  // namespace

bool is_numpy_array(PyObject* o) {
  PyObject* ndarray = cached_module_attr("numpy", "ndarray");
  return ndarray && PyType_Check(ndarray) && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(ndarray));
}

bool is_frame_array(const ValuePtr& v) { return v->is_constant() && !v->source && is_numpy_array(v->obj.get()); }

ValuePtr call_numpy(InstructionTranslator& t, const ValuePtr& fn, PyObject* f, const std::vector<ValuePtr>& args,
                    const std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled) {
  handled = maybe_numpy(f) && (is_numpy_array_function(f) || is_frame_array_method(fn, f) ||
                               (is_ufunc(f) && has_frame_array(args)));
  if (!handled) return nullptr;
  const std::string name = name_of(f);
  for (const auto& a : args)
    if (!foldable(a)) return t.unsupported("call to " + name + " with traced values or arrays read from inputs"), nullptr;
  for (const auto& [k, a] : kwargs)
    if (k == "out" || !foldable(a))
      return t.unsupported("call to " + name + " with traced values, arrays read from inputs or out="), nullptr;
  PyRef r = call_with_constants(f, args, kwargs);
  if (!r) return t.unsupported("calling " + name + " at trace time failed"), nullptr;  // the trace names its error
  PyObject* o = r.get();
  const bool number = PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyBool_Check(o) || is_numpy_scalar(o);
  if (!number && !is_numpy_array(o))
    return t.unsupported(name + " made a " + std::string(Py_TYPE(o)->tp_name) + " (only arrays and numbers are kept)"),
           nullptr;
  return Value::constant(o);
}

ValuePtr tensor_of_frame_array(InstructionTranslator& t, const ValuePtr& array,
                               const std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled) {
  handled = is_frame_array(array);
  if (!handled) return nullptr;
  PyObject* from_numpy = cached_module_attr("torch", "from_numpy");
  PyRef real = PyRef::steal(from_numpy ? PyObject_CallOneArg(from_numpy, array->obj.get()) : nullptr);
  if (!real) {
    clear_expected_error({PyExc_TypeError, PyExc_ValueError, PyExc_RuntimeError});  // a dtype torch lacks
    return t.unsupported("a tensor from a numpy array of a dtype torch does not take"), nullptr;
  }
  PyRef dtype = PyRef::steal(PyObject_GetAttrString(real.get(), "dtype"));
  PyRef data = PyRef::steal(PyObject_CallMethod(array->obj.get(), "tolist", nullptr));
  if (!dtype || !data) return t.unsupported("reading a numpy array made in the frame failed"), nullptr;
  std::vector<std::pair<std::string, ValuePtr>> with_dtype = kwargs;
  const bool has_dtype = std::any_of(kwargs.begin(), kwargs.end(), [](const auto& kv) {
    return kv.first == "dtype" && !(kv.second->is_constant() && kv.second->obj.get() == Py_None);
  });
  if (!has_dtype) {
    std::erase_if(with_dtype, [](const auto& kv) { return kv.first == "dtype"; });
    with_dtype.emplace_back("dtype", Value::constant(dtype.get()));
  }
  ValuePtr values = Value::constant(data.get());
  const bool scalar = !PyList_Check(data.get());  // a 0-d array's tolist() is its number
  ValuePtr v = scalar ? tensor_of_scalar(t, values, with_dtype) : tensor_of_data(t, values, with_dtype);
  if (v || t.failed()) return v;
  return t.unsupported("a tensor from a numpy array made in the frame that is empty or has more than 256 elements"),
         nullptr;
}

}  // namespace tj::tracer
