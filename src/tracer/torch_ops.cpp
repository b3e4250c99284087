// Tensor operations during tracing; see torch_ops.h.
#include "tracer/torch_ops.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>

#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "tracer/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/tensor_bridge.h"

namespace tj::tracer {

namespace {

using graph::ArgKind;

bool is_int(PyObject* o) { return PyLong_Check(o) && !PyBool_Check(o); }

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

ValuePtr int_constant(int64_t x) { return Value::constant_steal(PyLong_FromLongLong(x)); }
ValuePtr bool_constant(bool b) { return Value::constant(b ? Py_True : Py_False); }
ValuePtr dtype_constant(c10::ScalarType d) { return Value::constant_steal(dtype_object(d)); }

std::optional<int64_t> const_int(const ValuePtr& v) {
  if (!v->is_constant() || !is_int(v->obj.get())) return std::nullopt;
  return PyLong_AsLongLong(v->obj.get());
}

// Python's `input=` is ATen's `self`.
Kwargs aten_kwargs(Kwargs kwargs) {
  for (auto& [name, v] : kwargs)
    if (name == "input") name = "self";
  return kwargs;
}

// ------------------------------------------------- signatures of F.* fns

struct Param {
  std::string name;
  PyRef default_value;  // null: required
};

// "input, dim=None, dtype=None" -> params (defaults evaluated as Python).
std::vector<Param> parse_params(const char* spec) {
  std::vector<Param> out;
  std::string s(spec);
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? s.size() : comma + 1;
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    Param p;
    size_t eq = part.find('=');
    p.name = part.substr(0, eq);
    if (eq != std::string::npos) {
      PyObject* globals = PyDict_New();
      PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
      p.default_value = PyRef::steal(PyRun_String(part.substr(eq + 1).c_str(), Py_eval_input, globals, globals));
      Py_DECREF(globals);
      PyErr_Clear();
    }
    out.push_back(std::move(p));
  }
  return out;
}

using Bound = std::map<std::string, ValuePtr>;

std::optional<Bound> bind_params(InstructionTranslator& t, const std::vector<Param>& params, const std::string& fn,
                          const std::vector<ValuePtr>& args, const Kwargs& kwargs) {
  Bound out;
  if (args.size() > params.size()) {
    t.unsupported(fn + "() takes at most " + std::to_string(params.size()) + " arguments");
    return std::nullopt;
  }
  for (size_t i = 0; i < args.size(); ++i) out[params[i].name] = args[i];
  for (const auto& [name, v] : kwargs) {
    bool known = false;
    for (const auto& p : params) known |= p.name == name;
    if (!known || out.count(name)) {
      t.unsupported(fn + "() got an unexpected or repeated keyword argument '" + name + "'");
      return std::nullopt;
    }
    out[name] = v;
  }
  for (const auto& p : params) {
    if (out.count(p.name)) continue;
    if (!p.default_value) {
      t.unsupported(fn + "() missing argument '" + p.name + "'");
      return std::nullopt;
    }
    out[p.name] = Value::constant(p.default_value.get());
  }
  return out;
}

bool is_none(const ValuePtr& v) { return v->is_constant() && v->obj.get() == Py_None; }

std::optional<bool> const_bool(const ValuePtr& v) {
  if (!v->is_constant() || !PyBool_Check(v->obj.get())) return std::nullopt;
  return v->obj.get() == Py_True;
}

// reduction='none'|'mean'|'sum' -> ATen's int.
std::optional<int64_t> reduction_enum(const ValuePtr& v) {
  if (!v->is_constant() || !PyUnicode_Check(v->obj.get())) return std::nullopt;
  std::string s = utf8(v->obj.get());
  if (s == "none") return 0;
  if (s == "mean") return 1;
  if (s == "sum") return 2;
  return std::nullopt;
}

struct FunctionalRow {
  const char* name;    // attribute of torch.nn.functional
  const char* params;  // its signature
  std::function<ValuePtr(InstructionTranslator&, Bound&)> lower;
};

ValuePtr unary_inplace(InstructionTranslator& t, Bound& b, const std::string& op) {
  auto inplace = const_bool(b["inplace"]);
  if (!inplace) return t.unsupported("inplace must be a constant bool"), nullptr;
  return call_aten(t, "aten::" + op + (*inplace ? "_" : ""), {b["input"]});
}

ValuePtr softmax_like(InstructionTranslator& t, Bound& b, const std::string& op) {
  if (is_none(b["dim"])) return t.unsupported(op + " without dim (implicit dim choice is deprecated)"), nullptr;
  return call_aten(t, "aten::" + op, {b["input"], b["dim"], b["dtype"]});
}

ValuePtr loss_with_reduction(InstructionTranslator& t, Bound& b, const std::string& op, std::vector<ValuePtr> args,
                             std::vector<ValuePtr> tail) {
  if (!is_none(b["size_average"]) || !is_none(b["reduce"]))
    return t.unsupported(op + " with the deprecated size_average/reduce arguments"), nullptr;
  auto r = reduction_enum(b["reduction"]);
  if (!r) return t.unsupported(op + " with an unknown reduction"), nullptr;
  args.push_back(int_constant(*r));
  for (auto& v : tail) args.push_back(v);
  return call_aten(t, "aten::" + op, std::move(args));
}

const std::vector<FunctionalRow>& functional_rows() {
  static const std::vector<FunctionalRow> rows = {
      {"relu", "input, inplace=False", [](auto& t, auto& b) { return unary_inplace(t, b, "relu"); }},
      {"silu", "input, inplace=False", [](auto& t, auto& b) { return unary_inplace(t, b, "silu"); }},
      {"hardswish", "input, inplace=False", [](auto& t, auto& b) { return unary_inplace(t, b, "hardswish"); }},
      {"tanh", "input", [](auto& t, auto& b) { return call_aten(t, "aten::tanh", {b["input"]}); }},
      {"sigmoid", "input", [](auto& t, auto& b) { return call_aten(t, "aten::sigmoid", {b["input"]}); }},
      {"leaky_relu", "input, negative_slope=0.01, inplace=False",
       [](auto& t, auto& b) {
         return call_aten(t, const_bool(b["inplace"]).value_or(false) ? "aten::leaky_relu_" : "aten::leaky_relu",
                          {b["input"], b["negative_slope"]});
       }},
      {"elu", "input, alpha=1.0, inplace=False",
       [](auto& t, auto& b) { return call_aten(t, "aten::elu", {b["input"], b["alpha"]}); }},
      {"softmax", "input, dim=None, _stacklevel=3, dtype=None",
       [](auto& t, auto& b) { return softmax_like(t, b, "softmax"); }},
      {"log_softmax", "input, dim=None, _stacklevel=3, dtype=None",
       [](auto& t, auto& b) { return softmax_like(t, b, "log_softmax"); }},
      {"dropout", "input, p=0.5, training=True, inplace=False",
       [](auto& t, auto& b) -> ValuePtr {
         auto training = const_bool(b["training"]);
         auto inplace = const_bool(b["inplace"]);
         if (!training || !inplace) return t.unsupported("dropout with non-constant training/inplace"), nullptr;
         bool p_zero = b["p"]->is_constant() && PyFloat_Check(b["p"]->obj.get()) && PyFloat_AS_DOUBLE(b["p"]->obj.get()) == 0.0;
         if (!*training || p_zero) return b["input"];
         return call_aten(t, *inplace ? "aten::dropout_" : "aten::dropout", {b["input"], b["p"], bool_constant(true)});
       }},
      {"layer_norm", "input, normalized_shape, weight=None, bias=None, eps=1e-05",
       [](auto& t, auto& b) {
         return call_aten(t, "aten::layer_norm", {b["input"], b["normalized_shape"], b["weight"], b["bias"], b["eps"]});
       }},
      {"batch_norm",
       "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05",
       [](auto& t, auto& b) {
         return call_aten(t, "aten::batch_norm",
                          {b["input"], b["weight"], b["bias"], b["running_mean"], b["running_var"], b["training"],
                           b["momentum"], b["eps"], bool_constant(true)});
       }},
      {"cross_entropy",
       "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', "
       "label_smoothing=0.0",
       [](auto& t, auto& b) {
         return loss_with_reduction(t, b, "cross_entropy_loss", {b["input"], b["target"], b["weight"]},
                                    {b["ignore_index"], b["label_smoothing"]});
       }},
      {"mse_loss", "input, target, size_average=None, reduce=None, reduction='mean'",
       [](auto& t, auto& b) -> ValuePtr {
         if (b["input"]->is_tensor() && b["target"]->is_tensor() && b["input"]->meta().sizes != b["target"]->meta().sizes)
           return t.unsupported("mse_loss with input and target of different sizes (broadcasting)"), nullptr;
         return loss_with_reduction(t, b, "mse_loss", {b["input"], b["target"]}, {});
       }},
      {"max_pool2d",
       "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
       [](auto& t, auto& b) -> ValuePtr {
         if (const_bool(b["return_indices"]).value_or(true)) return t.unsupported("max_pool2d with return_indices"), nullptr;
         ValuePtr stride = is_none(b["stride"]) ? Value::sequence(ValueKind::list, {}) : b["stride"];
         return call_aten(t, "aten::max_pool2d", {b["input"], b["kernel_size"], stride, b["padding"], b["dilation"], b["ceil_mode"]});
       }},
      {"adaptive_avg_pool2d", "input, output_size",
       [](auto& t, auto& b) { return call_aten(t, "aten::adaptive_avg_pool2d", {b["input"], b["output_size"]}); }},
      {"embedding",
       "input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False",
       [](auto& t, auto& b) -> ValuePtr {
         if (!is_none(b["max_norm"])) return t.unsupported("embedding with max_norm (mutates the weight)"), nullptr;
         ValuePtr pad = int_constant(-1);
         if (!is_none(b["padding_idx"])) {
           // F.embedding: a negative padding_idx counts from the end; out of range raises
           auto idx = const_int(b["padding_idx"]);
           const ValuePtr& w = b["weight"];
           const int64_t rows = w->is_tensor() && !w->meta().sizes.empty() ? w->meta().sizes[0] : 0;
           t.note_sizes_read("embedding's padding_idx (counted from the weight's size)");
           if (!idx || *idx >= rows || *idx < -rows) return t.unsupported("embedding: padding_idx not an int in range"), nullptr;
           pad = int_constant(*idx < 0 ? rows + *idx : *idx);
         }
         return call_aten(t, "aten::embedding", {b["weight"], b["input"], pad, b["scale_grad_by_freq"], b["sparse"]});
       }},
  };
  return rows;
}

struct FunctionalEntry {
  const FunctionalRow* row;
  std::vector<Param> params;
};

// torch.nn.functional functions by identity (built on first use; never
// destroyed: it holds Python references that must outlive no interpreter).
const std::unordered_map<PyObject*, FunctionalEntry>& functional_table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<PyObject*, FunctionalEntry>();
    PyObject* F = PyImport_ImportModule("torch.nn.functional");
    if (!F) {
      PyErr_Clear();
      return t;
    }
    auto& table_ref = *t;
    for (const auto& row : functional_rows()) {
      PyObject* fn = PyObject_GetAttrString(F, row.name);
      if (!fn) {
        PyErr_Clear();
        continue;
      }
      table_ref.emplace(fn, FunctionalEntry{&row, parse_params(row.params)});  // keeps the reference
    }
    Py_DECREF(F);
    return t;
  }();
  return *table;
}

// The ATen name of a torch builtin (torch.add, torch._C._nn.linear) or a
// Tensor method descriptor (torch.Tensor.add), or "".
std::string builtin_aten_name(PyObject* fn, bool* is_method) {
  *is_method = false;
  if (PyCFunction_Check(fn)) {
    PyObject* module = PyObject_GetAttrString(fn, "__module__");
    std::string m = utf8(module);
    Py_XDECREF(module);
    PyErr_Clear();
    // F.pad is torch._C._nn.pad under torch.nn.functional's name
    if (m != "torch" && m != "torch._C._nn" && m != "torch._C._special" && m != "torch._C._linalg" && m != "torch.nn.functional")
      return "";
    PyObject* name = PyObject_GetAttrString(fn, "__name__");
    std::string n = utf8(name);
    Py_XDECREF(name);
    PyErr_Clear();
    // torch.special.erf is named special_erf already, like its ATen op.
    if (m == "torch._C._special" && !n.starts_with("special_")) return "special_" + n;
    if (m == "torch._C._linalg" && !n.starts_with("linalg_")) return "linalg_" + n;
    return n;
  }
  if (PyObject_TypeCheck(fn, &PyMethodDescr_Type)) {
    auto* descr = reinterpret_cast<PyMethodDescrObject*>(fn);
    if (std::string(descr->d_common.d_type->tp_name) != "torch._C._TensorBase") return "";
    *is_method = true;
    return utf8(descr->d_common.d_name);
  }
  return "";
}

// Methods whose ints after self are one shape/dims list: t.view(2, 3).
bool packs_varargs(const std::string& name) {
  static const char* kNames[] = {"view", "reshape", "expand", "repeat", "permute", "tile", "flip", "new_zeros",
                                 "new_ones", "new_empty"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

// torch factory functions taking sizes as varargs: torch.zeros(2, 3).
bool is_factory(const std::string& name) {
  static const char* kNames[] = {"zeros", "ones", "empty", "rand", "randn"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

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

const std::map<std::string, c10::ScalarType>& dtype_methods() {
  static const std::map<std::string, c10::ScalarType> m = {
      {"float", c10::ScalarType::Float}, {"double", c10::ScalarType::Double}, {"half", c10::ScalarType::Half},
      {"bfloat16", c10::ScalarType::BFloat16}, {"int", c10::ScalarType::Int}, {"long", c10::ScalarType::Long},
      {"short", c10::ScalarType::Short}, {"char", c10::ScalarType::Char}, {"byte", c10::ScalarType::Byte},
      {"bool", c10::ScalarType::Bool}};
  return m;
}

int64_t normalize_dim(int64_t dim, int64_t ndim) { return dim < 0 ? dim + ndim : dim; }

}  // namespace

// ------------------------------------------------------------ call_aten

ValuePtr call_aten(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr> args, Kwargs kwargs) {
  kwargs = aten_kwargs(std::move(kwargs));
  t.specialize_dim_args(name, args, kwargs);
  std::vector<ArgKind> kinds;
  std::vector<graph::Arg> gargs;
  for (const auto& a : args) {
    auto k = arg_kind(a);
    auto g = k ? to_arg(a) : std::nullopt;
    if (!g) return t.unsupported(name + ": cannot pass a " + a->type_name() + " argument"), nullptr;
    kinds.push_back(*k);
    gargs.push_back(std::move(*g));
  }
  std::vector<std::pair<std::string, ArgKind>> kwkinds;
  std::vector<graph::Kwarg> gkwargs;
  for (const auto& [kname, a] : kwargs) {
    auto k = arg_kind(a);
    auto g = k ? to_arg(a) : std::nullopt;
    if (!g) return t.unsupported(name + ": cannot pass a " + a->type_name() + " as '" + kname + "'"), nullptr;
    kwkinds.emplace_back(kname, *k);
    gkwargs.emplace_back(kname, std::move(*g));
  }
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
  graph::Graph& g = t.graph();
  graph::Node* node = g.call(**op, std::move(gargs), std::move(gkwargs));
  node->meta().loc = t.current_loc();
  auto status = graph::infer_meta(g, *node);
  if (!status.ok()) {
    g.erase(node);
    if (status.error().kind == ErrorKind::data_dependent)  // boolean masks, torch.nonzero, ...
      return t.unsupported((*op)->qualified_name() + ": the output's shape depends on tensor data (data-dependent)"), nullptr;
    return t.unsupported(status.error().message), nullptr;
  }
  // Inside `with torch.no_grad():` (or enable_grad) the node runs under
  // that mode (the interpreter reads the tag); without grad mode no output
  // requires grad.
  if (grad_mode_enabled() != t.entry_grad_enabled()) node->meta().tags["grad_enabled"] = grad_mode_enabled() ? "1" : "0";
  if (!grad_mode_enabled())
    for (auto& m : node->meta().fake) m.requires_grad = false;
  // requires_grad_ sets the flag in any grad mode; meta inference keeps the old one.
  if ((*op)->base_name() == "squeeze" || (*op)->base_name() == "squeeze_") t.fix_squeezed_dims(*node);
  if ((*op)->base_name() == "requires_grad_") {
    const graph::Arg* flag = node->kwarg("requires_grad");
    if (!flag && node->args().size() > 1) flag = &node->args()[1];
    bool value = !flag || !flag->is<bool>() || flag->as<bool>();
    for (auto& m : node->meta().fake) m.requires_grad = value;
  }
  const graph::NodeMeta& meta = node->meta();
  if (meta.tensor()) {
    // An in-place op (`unsqueeze_`, `add_`, `set_`) or an `out=` op returns
    // the very tensor it wrote: that value now stands for this node, so
    // later reads see its new sizes, strides and dtype, and `is` holds.
    ValuePtr written;
    const auto& params = (*op)->schema().arguments();
    if ((*op)->traits.inplace && !args.empty() && args[0]->is_tensor()) written = args[0];
    for (const auto& [kname, a] : kwargs) {
      auto index = (*op)->schema().argumentIndexWithName(kname);
      if ((*op)->traits.out && a->is_tensor() && index && params[*index].is_out()) written = a;
    }
    if (!written) return Value::tensor(node);
    t.journal(written);
    written->node = node;
    return written;
  }
  if (meta.fake_is_sequence) {
    // Ops with named returns give a torch.return_types structseq in Python.
    PyObject* structseq = nullptr;
    const auto& returns = (*op)->schema().returns();
    if (returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType) t.fix_result_count(*node);
    bool named = !returns.empty();
    for (const auto& r : returns) named &= !r.name().empty();
    if (named) {
      PyObject* types = PyImport_ImportModule("torch.return_types");
      structseq = types ? PyObject_GetAttrString(types, (*op)->base_name().c_str()) : nullptr;
      Py_XDECREF(types);
      PyErr_Clear();
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
    if (structseq) result->obj = PyRef::steal(structseq);
    return result;
  }
  g.erase(node);
  return t.unsupported((*op)->qualified_name() + " returns a non-tensor value known only at run time"), nullptr;
}

// ------------------------------------------------------- torch callables

bool is_torch_callable(PyObject* fn) {
  if (functional_table().count(fn)) return true;
  bool is_method = false;
  return !builtin_aten_name(fn, &is_method).empty();
}

ValuePtr call_torch_python_function(InstructionTranslator& t, PyObject* fn, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  PyObject* module = PyObject_GetAttrString(fn, "__module__");
  PyObject* name = PyObject_GetAttrString(fn, "__name__");
  std::string m = utf8(module), n = utf8(name);
  Py_XDECREF(module);
  Py_XDECREF(name);
  PyErr_Clear();
  if (m == "torch.jit" && n == "annotate" && args.size() == 2 && kwargs.empty()) return args[1];  // annotate(T, v) is v
  if (m != "torch" && m != "torch.functional") return nullptr;
  if ((n == "unique" || n == "unique_consecutive" || n == "_return_output" || n == "_return_inverse" ||
       n == "_return_counts" || n == "_unique_impl" || n == "_consecutive_return_output") && !args.empty() && args[0]->is_tensor())
    return t.unsupported("torch." + n + ": the output's shape depends on tensor data (data-dependent)"), nullptr;
  if (n == "is_tensor" && args.size() == 1 && kwargs.empty()) return bool_constant(args[0]->is_tensor());
  if (n == "_assert" && !args.empty() && args[0]->is_python_constant()) {
    // torch._assert(cond, message) on a condition known at trace time: a
    // true one is nothing; a false one raises in CPython (a graph break).
    int truth = PyObject_IsTrue(args[0]->obj.get());
    PyErr_Clear();
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

ValuePtr call_torch_callable(InstructionTranslator& t, PyObject* fn, std::vector<ValuePtr> args, Kwargs kwargs) {
  if (refuse_dynamic_int_arguments(t, nullptr, args, kwargs, "a torch function's argument")) return nullptr;
  const auto& table = functional_table();
  if (auto it = table.find(fn); it != table.end()) {
    auto bound = bind_params(t, it->second.params, std::string("torch.nn.functional.") + it->second.row->name, args, kwargs);
    if (!bound) return nullptr;
    return it->second.row->lower(t, *bound);
  }
  bool is_method = false;
  std::string name = builtin_aten_name(fn, &is_method);
  if (name.empty()) return t.unsupported("not a traceable torch callable"), nullptr;
  if (is_method) {
    if (args.empty() || !args[0]->is_tensor()) return t.unsupported("Tensor." + name + " called without a tensor"), nullptr;
    ValuePtr self = args[0];
    args.erase(args.begin());
    return call_tensor_method(t, self, name, std::move(args), std::move(kwargs));
  }
  if (name == "tensor" && args.size() == 1)  // torch.tensor(0.): a 0-d constant (Adam's step)
    if (ValuePtr v = tensor_of_scalar(t, args[0], kwargs)) return v;
  if (t.failed()) return nullptr;
  if (name == "tensor" || name == "as_tensor" || name == "from_numpy")
    return t.unsupported("torch." + name + " (a tensor built from Python data)"), nullptr;
  if (bool handled = false; name == "broadcast_tensors")
    if (ValuePtr v = broadcast_tensors(t, args, kwargs, handled); handled || t.failed()) return v;
  if (is_factory(name)) args = pack_ints(std::move(args), 0);
  if (name == "numel" && args.size() == 1 && args[0]->is_tensor()) return call_tensor_method(t, args[0], "numel", {}, {});
  if (name == "is_tensor" && args.size() == 1) return bool_constant(args[0]->is_tensor());
  if (name == "is_complex" && args.size() == 1 && args[0]->is_tensor())
    return bool_constant(c10::isComplexType(args[0]->meta().dtype));
  if (name == "is_floating_point" && args.size() == 1 && args[0]->is_tensor())
    return call_tensor_method(t, args[0], "is_floating_point", {}, {});
  return call_aten(t, "aten::" + name, std::move(args), std::move(kwargs));
}

// --------------------------------------------------------- tensor methods

ValuePtr call_tensor_method(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                            std::vector<ValuePtr> args, Kwargs kwargs) {
  if (refuse_dynamic_int_arguments(t, self, args, kwargs, "Tensor." + name + "'s argument")) return nullptr;
  if (is_python_number(self)) return t.unsupported("method '" + name + "' of a Python number from Tensor.item()"), nullptr;
  if (name == "item" && args.empty() && kwargs.empty()) return tensor_item(t, self);
  bool handled = false;
  if (ValuePtr r = addc_with_number_value(t, self, name, args, kwargs, handled); handled) return r;
  const graph::TensorMeta& m = self->meta();
  const int64_t ndim = static_cast<int64_t>(m.sizes.size());
  if (name == "size" || name == "stride") {
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
    t.note_sizes_read("Tensor.is_contiguous()");
    return bool_constant(m.is_contiguous());
  }
  if (name == "is_floating_point") return bool_constant(c10::isFloatingType(m.dtype));
  if (name == "is_complex") return bool_constant(c10::isComplexType(m.dtype));
  if (name == "element_size") return int_constant(static_cast<int64_t>(c10::elementSize(m.dtype)));
  if (name == "item" || name == "tolist" || name == "numpy" || name == "__bool__" || name == "__int__" ||
      name == "__float__" || name == "data_ptr")
    return t.unsupported("Tensor." + name + "() needs the tensor's data (data-dependent)"), nullptr;
  if (name == "backward" || name == "register_hook" || name == "retain_grad" || name == "cuda")
    return t.unsupported("Tensor." + name + "() is not traceable"), nullptr;
  // Calls that change nothing return the tensor itself in eager (an alias
  // whose metadata follows later in-place changes of the original): so
  // does the tracer, with no node.
  if (name == "contiguous" && args.empty() && kwargs.empty() && m.is_contiguous()) {
    t.note_sizes_read("Tensor.contiguous() of a contiguous tensor (no copy)");
    return self;
  }
  if (auto it = dtype_methods().find(name); it != dtype_methods().end() && args.empty()) {
    if (kwargs.empty() && it->second == m.dtype) return self;
    return call_aten(t, "aten::to", {self, dtype_constant(it->second)}, std::move(kwargs));
  }
  if (name == "type_as" && args.size() == 1 && args[0]->is_tensor()) {
    if (args[0]->meta().dtype == m.dtype) return self;
    return call_aten(t, "aten::to", {self, dtype_constant(args[0]->meta().dtype)});
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
  if (name == "requires_grad") return bool_constant(m.requires_grad);
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
  if ((name == "grad" || name == "grad_fn") && self->source) {
    // Of an input tensor (a parameter's .grad in optimizer.step()): the
    // real attribute, read through its source and guarded like any input.
    if (PyObject* real = t.input_tensor_object(self)) {
      PyObject* attr = PyObject_GetAttrString(real, name.c_str());
      if (!attr) return PyErr_Clear(), t.unsupported("Tensor." + name + " could not be read"), nullptr;
      ValuePtr v = t.wrap_input(attr, Source::attr(self->source, name));
      Py_DECREF(attr);
      return v;
    }
  }
  if (name == "data" || name == "grad" || name == "grad_fn" || name == "_version")
    return t.unsupported("Tensor." + name + " is not traceable"), nullptr;
  // Only methods become bound methods; any other attribute (a property)
  // is not modelled.
  PyObject* tensor_type = cached_module_attr("torch", "Tensor");
  PyObject* attr = tensor_type ? PyObject_GetAttrString(tensor_type, name.c_str()) : nullptr;
  bool is_method = attr && (PyObject_TypeCheck(attr, &PyMethodDescr_Type) || PyFunction_Check(attr) ||
                            PyCFunction_Check(attr));
  Py_XDECREF(attr);
  PyErr_Clear();
  if (!is_method) return t.unsupported("the tensor attribute '" + name + "' is not modelled"), nullptr;
  return Value::tensor_method(self, name);  // a bound method, called later
}

// --------------------------------------------------------- operators

ValuePtr tensor_binary_op(InstructionTranslator& t, int op, const ValuePtr& lhs, const ValuePtr& rhs) {
  // << and >> are the bitwise_*_shift ops (the __lshift__ overloads have no meta kernels).
  static const char* kNames[13] = {"add", "bitwise_and", "floor_divide", "bitwise_left_shift", "matmul", "mul", "remainder",
                                   "bitwise_or", "pow", "bitwise_right_shift", "sub", "div", "bitwise_xor"};
  static const char* kInplace[13] = {"add_", "bitwise_and_", "floor_divide_", "bitwise_left_shift_", nullptr, "mul_",
                                     "remainder_", "bitwise_or_", "pow_", "bitwise_right_shift_", "sub_", "div_", "bitwise_xor_"};
  bool inplace = op >= 13;
  int base = inplace ? op - 13 : op;
  if (lhs->is_tensor()) {
    if (inplace && kInplace[base]) return call_aten(t, std::string("aten::") + kInplace[base], {lhs, rhs});
    return call_aten(t, std::string("aten::") + kNames[base], {lhs, rhs});
  }
  // A number (or list) on the left of a tensor: Tensor.__r<op>__.
  switch (base) {
    case 0:  // add
    case 1:  // and
    case 5:  // mul
    case 7:  // or
    case 12: return call_aten(t, std::string("aten::") + kNames[base], {rhs, lhs});
    case 10: return call_aten(t, "aten::rsub", {rhs, lhs});
    case 11: {
      ValuePtr r = call_aten(t, "aten::reciprocal", {rhs});
      return r ? call_aten(t, "aten::mul", {r, lhs}) : nullptr;
    }
    case 8: {
      // Tensor.__rpow__: torch.tensor(lhs, dtype=torch.result_type(lhs, rhs)) ** rhs.
      auto dtype = lhs->is_constant() ? result_type(rhs->meta(), lhs->obj.get()) : std::nullopt;
      if (!dtype) return t.unsupported(std::string("a ") + lhs->type_name() + " to the power of a tensor"), nullptr;
      ValuePtr base = call_aten(t, "aten::scalar_tensor", {lhs},
                                {{"dtype", dtype_constant(*dtype)},
                                 {"device", Value::constant_steal(device_object(rhs->meta().device))}});
      return base ? call_aten(t, "aten::pow", {base, rhs}) : nullptr;
    }
    case 6: return call_aten(t, "aten::remainder", {lhs, rhs});
    case 2: return call_aten(t, "aten::floor_divide", {lhs, rhs});
    default: return t.unsupported(std::string("a ") + lhs->type_name() + " on the left of a tensor operator"), nullptr;
  }
}

ValuePtr tensor_compare(InstructionTranslator& t, int op, const ValuePtr& lhs, const ValuePtr& rhs) {
  static const char* kNames[6] = {"lt", "le", "eq", "ne", "gt", "ge"};
  static const int kSwapped[6] = {Py_GT, Py_GE, Py_EQ, Py_NE, Py_LT, Py_LE};
  if (lhs->is_tensor()) return call_aten(t, std::string("aten::") + kNames[op], {lhs, rhs});
  return call_aten(t, std::string("aten::") + kNames[kSwapped[op]], {rhs, lhs});
}

ValuePtr tensor_unary(InstructionTranslator& t, const std::string& opname, const ValuePtr& operand) {
  if (opname == "UNARY_NEGATIVE") return call_aten(t, "aten::neg", {operand});
  if (opname == "UNARY_POSITIVE") return call_aten(t, "aten::positive", {operand});
  if (opname == "UNARY_INVERT") return call_aten(t, "aten::bitwise_not", {operand});
  return t.unsupported(opname + " on a tensor (data-dependent)"), nullptr;
}

}  // namespace tj::tracer
