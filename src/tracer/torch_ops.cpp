// Values as ATen arguments, call_aten (overload lookup, autocast casts,
// meta inference, in-place results) and torch callables (torch.X builtins,
// torch._C._nn.X, Tensor method descriptors, torch functions written in
// Python that the tracer models). Tensor methods and operators are in
// tensor_methods.cpp, torch.nn.functional in torch_functional.cpp; see
// torch_ops.h.
#include "tracer/numpy_values.h"
#include "tracer/grad_writes.h"
#include "tracer/attr_writes.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>

#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "support/internal_error.h"
#include "support/py_lookup.h"
#include "tracer/py_str.h"
#include "support/tensor_bridge.h"
#include "tracer/kwargs.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

namespace {

using graph::ArgKind;


// ------------------------------------------------- values -> graph args

std::optional<ArgKind> sequence_kind(const std::vector<ValuePtr>& items) {
  bool all_int = true, all_float = true, all_bool = true, all_tensor = true, tensor_or_none = true;
  for (const auto& v : items) {
    bool is_t = v->is_tensor();
    PyObject* o = v->is_constant() || v->is_symint() ? v->obj.get() : nullptr;  // a symint's obj: its int
    all_tensor &= is_t;
    tensor_or_none &= is_t || o == Py_None;
    all_int &= o && is_int(o);
    all_float &= o && (PyFloat_Check(o) || is_int(o));
    all_bool &= o && PyBool_Check(o);
  }
  if (items.empty() || all_int) return ArgKind::IntList;
  if (all_tensor) return ArgKind::TensorList;
  if (tensor_or_none) return ArgKind::OptionalTensorList;
  if (all_bool) return ArgKind::BoolList;
  if (all_float) return ArgKind::FloatList;
  return std::nullopt;
}

std::optional<ArgKind> arg_kind(const ValuePtr& v) {
  if (v->is_tensor()) return ArgKind::Tensor;
  if (v->is_sequence()) return sequence_kind(v->items);
  if (v->is_symint()) return ArgKind::Int;
  if (!v->is_constant()) return std::nullopt;
  PyObject* o = v->obj.get();
  if (o == Py_None) return ArgKind::None;
  if (PyBool_Check(o)) return ArgKind::Bool;
  if (PyLong_Check(o)) return ArgKind::Int;
  if (PyFloat_Check(o)) return ArgKind::Float;
  if (PyUnicode_Check(o)) return ArgKind::String;
  if (as_dtype(o)) return ArgKind::ScalarType;
  if (as_device(o)) return ArgKind::Device;
  if (as_layout(o)) return ArgKind::Layout;
  if (as_memory_format(o)) return ArgKind::MemoryFormat;
  if (PyTuple_Check(o) || PyList_Check(o)) {
    std::vector<ValuePtr> items;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i) items.push_back(Value::constant(PySequence_Fast_GET_ITEM(o, i)));
    return sequence_kind(items);
  }
  return std::nullopt;
}

std::optional<graph::Arg> to_arg(const ValuePtr& v) {
  if (v->is_tensor() || v->is_symint()) return graph::Arg(v->node);
  if (v->is_sequence()) {
    std::vector<graph::Arg> items;
    for (const auto& item : v->items) {
      auto a = to_arg(item);
      if (!a) return std::nullopt;
      items.push_back(std::move(*a));
    }
    return graph::Arg::list(std::move(items));
  }
  if (!v->is_constant()) return std::nullopt;
  PyObject* o = v->obj.get();
  if (o == Py_None) return graph::Arg();
  if (PyBool_Check(o)) return graph::Arg(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return std::nullopt;
    return graph::Arg(static_cast<int64_t>(x));
  }
  if (PyFloat_Check(o)) return graph::Arg(PyFloat_AS_DOUBLE(o));
  if (PyUnicode_Check(o)) return graph::Arg(utf8(o));
  if (auto d = as_dtype(o)) return graph::Arg(*d);
  if (auto d = as_device(o)) return graph::Arg(*d);
  if (auto l = as_layout(o)) return graph::Arg(*l);
  if (auto m = as_memory_format(o)) return graph::Arg(*m);
  if (PyTuple_Check(o) || PyList_Check(o)) {
    std::vector<graph::Arg> items;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i) {
      auto a = to_arg(Value::constant(PySequence_Fast_GET_ITEM(o, i)));
      if (!a) return std::nullopt;
      items.push_back(std::move(*a));
    }
    return graph::Arg::list(std::move(items));
  }
  return std::nullopt;
}

// Python's `input=` is ATen's `self`, except for ops whose ATen schema
// names its argument `input` too (aten::linear, aten::layer_norm, ...).
bool schema_names_input(const std::string& op_name) {
  auto& registry = graph::OpRegistry::instance();
  for (const std::string& overload : registry.overloads(op_name)) {
    auto op = registry.get(overload.empty() ? op_name : op_name + "." + overload);
    if (op.ok() && (*op)->schema().argumentIndexWithName("input")) return true;
  }
  return false;
}

// Also the numpy spellings torch's Python binding takes for `dim` and
// `keepdim` (`torch.stack(xs, axis=-1)`, `x.sum(axis=1, keepdims=True)`),
// where the call does not name the torch argument too.
Kwargs aten_kwargs(const std::string& op_name, Kwargs kwargs) {
  bool dim_named = names_kwarg(kwargs, "dim"), keepdim_named = names_kwarg(kwargs, "keepdim");
  for (auto& [name, v] : kwargs) {
    if (name == "axis" && !dim_named) name = "dim";
    if (name == "keepdims" && !keepdim_named) name = "keepdim";
  }
  if (!names_kwarg(kwargs, "input") || schema_names_input(op_name)) return kwargs;
  for (auto& [name, v] : kwargs)
    if (name == "input") name = "self";
  return kwargs;
}

// The ATen name of a torch builtin (torch.add, torch._C._nn.linear) or a
// Tensor method descriptor (torch.Tensor.add), or "".
std::string builtin_aten_name(PyObject* fn, bool* is_method) {
  *is_method = false;
  if (PyCFunction_Check(fn)) {
    std::string m = utf8(PyRef::steal(PyObject_GetAttrString(fn, "__module__")).get());
    clear_expected_error({PyExc_AttributeError});  // a builtin without __module__
    // F.pad is torch._C._nn.pad under torch.nn.functional's name
    if (m != "torch" && m != "torch._C._nn" && m != "torch._C._special" && m != "torch._C._linalg" &&
        m != "torch.nn.functional" && m != "torch._C._sparse")
      return "";
    std::string n = utf8(PyRef::steal(PyObject_GetAttrString(fn, "__name__")).get());
    clear_expected_error({PyExc_AttributeError});  // as above
    // torch.special.erf is named special_erf already, like its ATen op.
    if (m == "torch._C._special" && !n.starts_with("special_")) return "special_" + n;
    if (m == "torch._C._linalg" && !n.starts_with("linalg_")) return "linalg_" + n;
    // torch.sparse.mm is torch._C._sparse._sparse_mm (aten::_sparse_mm, an
    // extern ATen op on the sparse input); torch.spmm is Python's name for mm.
    if (m == "torch._C._sparse" && n != "_sparse_mm") return "";
    if (m == "torch" && n == "spmm") return "mm";
    return n;
  }
  if (PyObject_TypeCheck(fn, &PyMethodDescr_Type)) {
    auto* descr = reinterpret_cast<PyMethodDescrObject*>(fn);
    if (reinterpret_cast<PyObject*>(descr->d_common.d_type) != cached_module_attr("torch._C", "_TensorBase")) return "";
    *is_method = true;
    return utf8(descr->d_common.d_name);
  }
  return "";
}

// torch factory functions taking sizes as varargs: torch.zeros(2, 3).
bool is_factory(const std::string& name) {
  static const char* kNames[] = {"zeros", "ones", "empty", "rand", "randn"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

}  // namespace

std::vector<ValuePtr> pack_ints(std::vector<ValuePtr> args, size_t from) {
  if (args.size() <= from) return args;
  for (size_t i = from; i < args.size(); ++i)
    if (!const_int(args[i]) && !args[i]->is_symint()) return args;
  if (args.size() == from + 1) {
    // A single int is still a list for these ops.
    args[from] = Value::sequence(ValueKind::list, {args[from]});
    return args;
  }
  std::vector<ValuePtr> items(args.begin() + static_cast<long>(from), args.end());
  args.resize(from);
  args.push_back(Value::sequence(ValueKind::list, std::move(items)));
  return args;
}

// ------------------------------------------------------------ call_aten

// A numpy scalar constant passed to an op is the Python number it holds
// (as torch's argument parser takes it); other values are themselves.
static ValuePtr without_numpy_scalar(ValuePtr v) {
  if (!v->is_constant() || !is_numpy_scalar(v->obj.get())) return v;
  PyObject* number = PyObject_CallMethod(v->obj.get(), "item", nullptr);
  if (!number) {
    clear_unless_interruption();  // left as it was: the op lookup names it
    return v;
  }
  return Value::constant_steal(number);
}

// A device given as a string ("cpu", "cuda:0") is the torch.device it
// names, as torch's argument parser reads it; null when the string names
// no device (the op lookup then names the string).
ValuePtr device_of_string(const ValuePtr& v) {
  if (!v->is_constant() || !PyUnicode_Check(v->obj.get())) return nullptr;
  PyObject* device_type = cached_module_attr("torch", "device");
  PyObject* device = device_type ? PyObject_CallOneArg(device_type, v->obj.get()) : nullptr;
  if (!device) {
    clear_unless_interruption();
    return nullptr;
  }
  return Value::constant_steal(device);
}

// An integer (or bool) tensor divided by a zero Python int or bool
// constant with `//`, `%`, fmod or div(rounding_mode=...), in-place or not:
// eager raises ZeroDivisionError there (a tensor with elements), which a
// meta tensor cannot see. Traced, the op raised only at run time, after the
// graph's earlier ops, whose input writes cannot always be undone (an input
// that requires grad), so inside `try` eager's exception escaped (fuzz
// seeds 9906417, 9965876, 9957380). The graph breaks before it instead, and
// the op runs eagerly after the graph.
static std::optional<std::string> divides_integers_by_zero_constant(const graph::OpInfo& op,
                                                                    const std::vector<ValuePtr>& args,
                                                                    const Kwargs& kwargs) {
  static const std::set<std::string, std::less<>> kDivisions = {
      "floor_divide", "floor_divide_", "remainder", "remainder_", "fmod", "fmod_", "div", "div_"};
  const std::string base = op.base_name();
  if (!kDivisions.count(base) || args.empty() || !args[0]->is_tensor()) return std::nullopt;
  if (!c10::isIntegralType(args[0]->meta().dtype, /*includeBool=*/true)) return std::nullopt;
  ValuePtr divisor = args.size() > 1 ? args[1] : nullptr;
  bool rounds = base != "div" && base != "div_";  // true division of integers gives floats
  for (const auto& [kname, a] : kwargs) {
    if (kname == "other") divisor = a;
    if (kname == "rounding_mode") rounds = a->is_constant() && a->obj.get() != Py_None;
  }
  if (!rounds || !divisor || !divisor->is_constant() || !PyLong_Check(divisor->obj.get()))
    return std::nullopt;  // (bool is an int; a float divisor gives a float result, no error)
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(divisor->obj.get(), &overflow);
  if (value == -1 && PyErr_Occurred()) PyErr_Clear();
  if (value != 0 || overflow != 0) return std::nullopt;
  return op.qualified_name() +
         " of an integer tensor by a zero constant: eager raises ZeroDivisionError, so the op runs eagerly "
         "after the graph";
}

namespace {
// The graph arguments of `args` and `kwargs`, with their kinds for the
// overload lookup; false (unsupported) for a value no argument can be.
bool graph_arguments(InstructionTranslator& t, const std::string& name, const std::vector<ValuePtr>& args,
                     const Kwargs& kwargs, std::vector<ArgKind>& kinds, std::vector<graph::Arg>& gargs,
                     std::vector<std::pair<std::string, ArgKind>>& kwkinds, std::vector<graph::Kwarg>& gkwargs) {
  for (const auto& a : args) {
    auto k = arg_kind(a);
    auto g = k ? to_arg(a) : std::nullopt;
    if (!g) return t.unsupported(name + ": cannot pass a " + a->type_name() + " argument");
    kinds.push_back(*k);
    gargs.push_back(std::move(*g));
  }
  for (const auto& [kname, a] : kwargs) {
    auto k = arg_kind(a);
    auto g = k ? to_arg(a) : std::nullopt;
    if (!g) return t.unsupported(name + ": cannot pass a " + a->type_name() + " as '" + kname + "'");
    kwkinds.emplace_back(kname, *k);
    gkwargs.emplace_back(kname, std::move(*g));
  }
  return true;
}

// Inside `with torch.no_grad():` (or enable_grad) the node runs under
// that mode (the interpreter reads the tag). Without grad mode no new
// tensor requires grad; a tensor written in place keeps its flag, and a
// view made by a differentiable view op requires grad when its base does
// (LibTorch 1.13: `with torch.no_grad(): v = y[0]` gives v.requires_grad).
// In grad mode, an input that requires grad only because the graph wrote
// values requiring grad into its memory through another view (its meta
// does not say so: grad_writes.cpp) makes the results require grad, as
// meta inference would have had it known; then this node, when in place,
// is such a write itself.
void set_grad_mode_facts(InstructionTranslator& t, const graph::OpInfo& op, const std::vector<ValuePtr>& args,
                         graph::Node* node) {
  if (grad_mode_enabled() != t.entry_grad_enabled()) node->meta().tags.grad_enabled = grad_mode_enabled();
  auto can_require_grad = [](const graph::TensorMeta& m) {
    return c10::isFloatingType(m.dtype) || c10::isComplexType(m.dtype);
  };
  if (!grad_mode_enabled()) {
    bool keeps = !args.empty() && args[0]->is_tensor() &&
                 (args[0]->meta().requires_grad || requires_grad_by_write(t, args[0]->node)) &&
                 (op.traits.inplace || is_differentiable_view(op));
    for (auto& m : node->meta().fake) m.requires_grad = keeps && can_require_grad(m);
    return;
  }
  if (!graph::makes_tensors_outside_autograd(op.base_name()) && grad_written_input_read(t, *node))
    for (auto& m : node->meta().fake) m.requires_grad = m.requires_grad || can_require_grad(m);
  note_grad_write(t, *node);
}

// The value of a tensor result: the tensor an in-place or `out=` op wrote
// (now standing for `node`), or a new tensor value.
ValuePtr tensor_result(InstructionTranslator& t, const graph::OpInfo& op, const std::vector<ValuePtr>& args,
                       const Kwargs& kwargs, graph::Node* node) {
  // An in-place op (`unsqueeze_`, `add_`, `set_`) or an `out=` op returns
  // the very tensor it wrote: that value now stands for this node, so
  // later reads see its new sizes, strides and dtype, and `is` holds.
  ValuePtr written;
  const auto& params = op.schema().arguments();
  if (op.traits.inplace && !args.empty() && args[0]->is_tensor()) written = args[0];
  for (const auto& [kname, a] : kwargs) {
    auto index = op.schema().argumentIndexWithName(kname);
    if (op.traits.out && a->is_tensor() && index && params[*index].is_out()) written = a;
  }
  if (!written) return Value::tensor(node);
  t.journal(written);
  written->node = node;
  return written;
}

// The value of a sequence result: a tuple of getitem nodes (a
// torch.return_types structseq for ops with named returns).
ValuePtr sequence_result(InstructionTranslator& t, graph::Graph& g, const graph::OpInfo& op, graph::Node* node) {
  const graph::NodeMeta& meta = node->meta();
  // Ops with named returns give a torch.return_types structseq in Python.
  PyRef structseq;
  const auto& returns = op.schema().returns();
  if (returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType) fix_result_count(t, *node);
  bool named = !returns.empty();
  for (const auto& r : returns) named &= !r.name().empty();
  if (named) {
    PyRef types = PyRef::steal(PyImport_ImportModule("torch.return_types"));
    structseq = PyRef::steal(types ? PyObject_GetAttrString(types.get(), op.base_name().c_str()) : nullptr);
    clear_expected_error({PyExc_ImportError, PyExc_AttributeError});  // no structseq for it: a plain tuple
  }
  std::vector<ValuePtr> items;
  for (size_t i = 0; i < meta.fake.size(); ++i) {
    if (!meta.fake[i].defined) {  // an undefined tensor is None in Python, as eager returns it
      items.push_back(Value::constant(Py_None));
      continue;
    }
    graph::Node* item = g.call(graph::OpRegistry::instance().getitem(), {graph::Arg(node), graph::Arg(static_cast<int64_t>(i))});
    item->meta().set_tensor(meta.fake[i]);
    item->meta().loc = node->meta().loc;
    items.push_back(Value::tensor(item));
  }
  ValuePtr result = Value::sequence(ValueKind::tuple, std::move(items));
  if (structseq) result->obj = std::move(structseq);
  return result;
}
}  // namespace

namespace {
// call_aten; `user_call`: the user's code called it (call_aten_from_user).
ValuePtr call_aten_as(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr> args, Kwargs kwargs,
                      bool user_call);
}  // namespace

ValuePtr call_aten_from_user(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr> args,
                             Kwargs kwargs) {
  return call_aten_as(t, name, std::move(args), std::move(kwargs), /*user_call=*/true);
}

ValuePtr call_aten(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr> args, Kwargs kwargs) {
  return call_aten_as(t, name, std::move(args), std::move(kwargs), /*user_call=*/false);
}

namespace {
ValuePtr call_aten_as(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr> args, Kwargs kwargs,
                      bool user_call) {
  if (TraceContext(t).shared().inference.closed)
    return t.unsupported("tensor work after a torch.inference_mode block in the same graph (the graph runs in inference mode)"),
           nullptr;
  if (name == "aten::nonzero" && !kwargs.empty()) {  // nonzero(x, as_tuple=...): Python's binding, not an overload
    bool handled = false;
    if (ValuePtr v = nonzero_as_tuple(t, args, kwargs, handled); handled || t.failed()) return v;
  }
  if (name == "aten::narrow") narrow_bounds(t, args, kwargs);
  factory_size_numbers(t, name, args, kwargs);  // torch.zeros(n) of an int from .item() / .tolist()
  if (t.failed()) return nullptr;
  kwargs = aten_kwargs(name, std::move(kwargs));
  for (auto& a : args) a = without_numpy_scalar(std::move(a));
  for (auto& [kname, a] : kwargs) {
    a = without_numpy_scalar(std::move(a));
    if (kname == "device")
      if (ValuePtr device = device_of_string(a)) a = device;
  }
  specialize_dim_args(t, name, args, kwargs);
  if (data_replaced_leaf_used(t, name, args)) return nullptr;
  for (const auto& [kname, a] : kwargs)
    if (data_replaced_leaf_used(t, name, {a})) return nullptr;
  // numbers left after the sizes and dims above are operands
  if (user_call && !numbers_as_operands(t, name, args, kwargs)) return nullptr;
  std::vector<ArgKind> kinds;
  std::vector<graph::Arg> gargs;
  std::vector<std::pair<std::string, ArgKind>> kwkinds;
  std::vector<graph::Kwarg> gkwargs;
  if (!graph_arguments(t, name, args, kwargs, kinds, gargs, kwkinds, gkwargs)) return nullptr;
  auto op = graph::OpRegistry::instance().lookup(name, kinds, kwkinds);
  if (!op.ok()) return t.unsupported(op.error().message), nullptr;
  static thread_local bool casts_added = false;  // set while the op is emitted again, after its casts
  if (t.autocast_state().enabled && !casts_added && autocast_applies(**op)) {
    if (!autocast_casts(t, **op, args, kwargs)) return nullptr;
    casts_added = true;
    ValuePtr result = call_aten(t, name, std::move(args), std::move(kwargs));
    casts_added = false;
    return result;
  }
  if (auto why = divides_integers_by_zero_constant(**op, args, kwargs)) return t.unsupported(*why), nullptr;
  graph::Graph& g = t.graph();
  graph::Node* node = g.call(**op, std::move(gargs), std::move(gkwargs));
  node->meta().loc = t.current_loc();
  auto status = graph::infer_meta(g, *node);
  if (!status.ok()) {
    g.erase(node);
    if (status.error().kind == ErrorKind::data_dependent)  // boolean masks, torch.nonzero, ...
      return t.unsupported((*op)->qualified_name() + ": the output's shape depends on tensor data (data-dependent)"), nullptr;
    if (status.error().kind == ErrorKind::internal)  // a bug of ours in meta inference: reported as one
      return t.unsupported(report_internal_error("inferring the meta of " + (*op)->qualified_name(), status.error().message)), nullptr;
    return t.unsupported(status.error().message), nullptr;
  }
  if (node->meta().unbacked && !note_unbacked_op(t, *node)) {  // nonzero, x[mask], unique, ...
    g.erase(node);
    return nullptr;
  }
  if ((*op)->traits.inplace && !args.empty() && args[0]->is_tensor() && !t.inplace_allowed_by_autograd(*node)) {
    g.erase(node);
    return nullptr;
  }
  set_grad_mode_facts(t, **op, args, node);
  // requires_grad_ sets the flag in any grad mode; meta inference keeps the old one.
  if ((*op)->base_name() == "squeeze" || (*op)->base_name() == "squeeze_") fix_squeezed_dims(t, *node);
  if ((*op)->base_name() == "requires_grad_") {
    const graph::Arg* flag = node->kwarg("requires_grad");
    if (!flag && node->args().size() > 1) flag = &node->args()[1];
    bool value = !flag || !flag->is<bool>() || flag->as<bool>();
    for (auto& m : node->meta().fake) m.requires_grad = value;
  }
  const graph::NodeMeta& meta = node->meta();
  if (meta.tensor()) return tensor_result(t, **op, args, kwargs, node);
  if (meta.fake_is_sequence) return sequence_result(t, g, **op, node);
  g.erase(node);
  return t.unsupported((*op)->qualified_name() + " returns a non-tensor value known only at run time"), nullptr;
}
}  // namespace

// ------------------------------------------------------- torch callables

bool is_torch_callable(PyObject* fn) {
  if (is_lowered_functional(fn)) return true;
  bool is_method = false;
  return !builtin_aten_name(fn, &is_method).empty();
}

ValuePtr call_torch_python_function(InstructionTranslator& t, PyObject* fn, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  PyRef module = PyRef::steal(PyObject_GetAttrString(fn, "__module__"));
  PyRef name = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
  std::string m = utf8(module.get()), n = utf8(name.get());
  if (!clear_expected_error({PyExc_AttributeError})) return nullptr;  // a callable raising for its name: named by the trace
  if (m == "torch.jit" && n == "annotate" && args.size() == 2 && kwargs.empty()) return args[1];  // annotate(T, v) is v
  if (m != "torch" && m != "torch.functional") return nullptr;
  if ((n == "unique" || n == "unique_consecutive" || n == "_return_output" || n == "_return_inverse" ||
       n == "_return_counts" || n == "_unique_impl" || n == "_consecutive_return_output") && !args.empty() && args[0]->is_tensor()) {
    bool handled = false;
    if (ValuePtr r = call_unique(t, n, args, kwargs, handled); handled) return r;
    if (t.failed()) return nullptr;
    return t.unsupported("torch." + n + ": the output's shape depends on tensor data (data-dependent)"), nullptr;
  }
  if (n == "is_tensor" && args.size() == 1 && kwargs.empty()) return bool_constant(args[0]->is_tensor());
  if (n == "_assert" && !args.empty() && args[0]->is_python_constant()) {
    // torch._assert(cond, message) on a condition known at trace time: a
    // true one is nothing; a false one raises in CPython (a graph break).
    int truth = PyObject_IsTrue(args[0]->obj.get());
    clear_expected_error({PyExc_TypeError});  // a constant without a truth value: CPython raises it in _assert
    if (truth == 1) return Value::constant(Py_None);
    return t.unsupported("torch._assert on a condition that is false at trace time"), nullptr;
  }
  if (n == "einsum" && !args.empty() && kwargs.empty()) {
    std::vector<ValuePtr> operands(args.begin() + 1, args.end());
    if (operands.size() == 1 && operands[0]->is_sequence()) operands = operands[0]->items;
    return call_aten(t, "aten::einsum", {args[0], Value::sequence(ValueKind::list, std::move(operands))});
  }
  return nullptr;
}

namespace {

// torch.<name>(...) the tracer answers itself before ATen's op of that
// name: the answer (null: failed, the reason set), or nullopt to call
// ATen's `aten::<name>` with these arguments.
using TorchAnswer = std::optional<ValuePtr>;
using TorchFunction = TorchAnswer (*)(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr>& args,
                                      Kwargs& kwargs);

TorchAnswer refuse_python_data(InstructionTranslator& t, const std::string& name) {
  if (t.failed()) return nullptr;
  return t.unsupported("torch." + name + " (a tensor built from Python data)"), nullptr;
}

// A numpy array read from an input (an argument, an attribute, a global):
// its values change between calls, so it is converted in CPython at a
// graph break and the graph resumes with the tensor (issue 42: RL code's
// `torch.from_numpy(state)`; the frame compiles once, not per call).
TorchAnswer refuse_input_array(InstructionTranslator& t, const std::string& name, const std::vector<ValuePtr>& args) {
  if (args.empty() || !args[0]->source || !args[0]->obj || !has_exact_type(args[0]->obj.get(), "numpy", "ndarray"))
    return refuse_python_data(t, name);
  return t.unsupported("torch." + name + "() of a numpy array read from an input (" + args[0]->source->to_string() +
                       "): converted in CPython at this break, the graph resumes with the tensor"),
         nullptr;
}

// torch.tensor(0.) (Adam's step), torch.tensor([1.0, n]): built from its elements.
TorchAnswer tensor_from_elements(InstructionTranslator& t, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  if (args.size() != 1) return std::nullopt;
  if (ValuePtr v = tensor_of_scalar(t, args[0], kwargs)) return v;
  if (t.failed()) return nullptr;
  if (ValuePtr v = tensor_of_data(t, args[0], kwargs)) return v;
  return std::nullopt;
}

// torch.tensor / as_tensor / from_numpy of a numpy array made in the frame
// from constants (translate_numpy.cpp).
TorchAnswer tensor_from_array(InstructionTranslator& t, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  bool handled = false;
  if (args.size() != 1) return std::nullopt;
  ValuePtr v = tensor_of_frame_array(t, args[0], kwargs, handled);
  return handled ? TorchAnswer(v) : std::nullopt;
}

TorchAnswer torch_tensor(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  if (TorchAnswer a = tensor_from_array(t, args, kwargs)) return a;
  if (TorchAnswer a = tensor_from_elements(t, args, kwargs)) return a;
  return refuse_python_data(t, name);
}

TorchAnswer torch_as_tensor(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  if (TorchAnswer a = tensor_from_array(t, args, kwargs)) return a;
  if (TorchAnswer a = tensor_from_elements(t, args, kwargs)) return a;
  if (args.size() == 1 && args[0]->is_tensor())  // itself, or a copy of another dtype
    return kwargs.empty() ? args[0] : call_tensor_method(t, args[0], "to", {}, std::move(kwargs));
  return refuse_python_data(t, name);
}

TorchAnswer torch_from_numpy(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  if (kwargs.empty())
    if (TorchAnswer a = tensor_from_array(t, args, kwargs)) return a;
  return refuse_input_array(t, name, args);
}

TorchAnswer torch_broadcast_tensors(InstructionTranslator& t, const std::string&, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  bool handled = false;
  if (ValuePtr v = broadcast_tensors(t, args, kwargs, handled); handled || t.failed()) return v;
  return std::nullopt;
}

// torch.full(size, a number from sizes or Tensor.item())
TorchAnswer torch_full(InstructionTranslator& t, const std::string&, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  bool handled = false;
  if (ValuePtr v = full_of_number(t, nullptr, args, kwargs, handled); handled || t.failed()) return v;
  return std::nullopt;
}

// torch.numel(x), torch.is_floating_point(x): the tensor method.
TorchAnswer torch_as_method(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr>& args, Kwargs&) {
  if (args.size() != 1 || !args[0]->is_tensor()) return std::nullopt;
  return call_tensor_method(t, args[0], name, {}, {});
}

TorchAnswer torch_is_tensor(InstructionTranslator&, const std::string&, std::vector<ValuePtr>& args, Kwargs&) {
  if (args.size() != 1) return std::nullopt;
  return bool_constant(args[0]->is_tensor());
}

TorchAnswer torch_is_complex(InstructionTranslator&, const std::string&, std::vector<ValuePtr>& args, Kwargs&) {
  if (args.size() != 1 || !args[0]->is_tensor()) return std::nullopt;
  return bool_constant(c10::isComplexType(args[0]->meta().dtype));
}

const std::unordered_map<std::string_view, TorchFunction> kTorchFunctions = {
    {"tensor", torch_tensor},
    {"as_tensor", torch_as_tensor},
    {"from_numpy", torch_from_numpy},
    {"broadcast_tensors", torch_broadcast_tensors},
    {"full", torch_full},
    {"numel", torch_as_method},
    {"is_tensor", torch_is_tensor},
    {"is_complex", torch_is_complex},
    {"is_floating_point", torch_as_method},
};

}  // namespace

ValuePtr call_torch_callable(InstructionTranslator& t, PyObject* fn, std::vector<ValuePtr> args, Kwargs kwargs) {
  if (refuse_dynamic_int_arguments(t, nullptr, args, kwargs, "a torch function's argument")) return nullptr;
  if (is_lowered_functional(fn)) return call_lowered_functional(t, fn, args, kwargs);
  bool is_method = false;
  std::string name = builtin_aten_name(fn, &is_method);
  if (name.empty()) return t.unsupported("not a traceable torch callable"), nullptr;
  if (is_method) {
    if (args.empty() || !args[0]->is_tensor()) return t.unsupported("Tensor." + name + " called without a tensor"), nullptr;
    ValuePtr self = args[0];
    args.erase(args.begin());
    return call_tensor_method(t, self, name, std::move(args), std::move(kwargs));
  }
  if (auto it = kTorchFunctions.find(name); it != kTorchFunctions.end())
    if (TorchAnswer answer = it->second(t, name, args, kwargs)) return *answer;
  if (t.failed()) return nullptr;
  if (is_factory(name)) args = pack_ints(std::move(args), 0);
  return call_aten_from_user(t, "aten::" + name, std::move(args), std::move(kwargs));
}

}  // namespace tj::tracer
