// torch.nn.functional calls lowered by table: each row names an F.*
// function, its Python signature (parsed once, defaults evaluated as
// Python) and the ATen call it becomes; a call is bound to the signature
// as Python would bind it, then lowered. See torch_ops_support.h.
#include <cassert>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include "tracer/py_str.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

namespace {

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
      PyRef globals = PyRef::steal(PyDict_New());
      if (globals && PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins()) == 0)
        p.default_value =
            PyRef::steal(PyRun_String(part.substr(eq + 1).c_str(), Py_eval_input, globals.get(), globals.get()));
      PyErr_Clear();  // a default torch spells in a way eval() does not read: none known (best effort, once)
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
    PyRef F = PyRef::steal(PyImport_ImportModule("torch.nn.functional"));
    if (!F) {
      PyErr_Clear();  // the table is made once, best effort: without torch.nn.functional it is empty
      return t;
    }
    auto& table_ref = *t;
    for (const auto& row : functional_rows()) {
      PyObject* fn = PyObject_GetAttrString(F.get(), row.name);
      if (!fn) {
        PyErr_Clear();  // a function this torch does not have (AttributeError): no row
        continue;
      }
      table_ref.emplace(fn, FunctionalEntry{&row, parse_params(row.params)});  // keeps the reference
    }
    return t;
  }();
  return *table;
}

}  // namespace

bool is_lowered_functional(PyObject* fn) { return functional_table().count(fn) != 0; }

ValuePtr call_lowered_functional(InstructionTranslator& t, PyObject* fn, const std::vector<ValuePtr>& args,
                                 const Kwargs& kwargs) {
  const auto& table = functional_table();
  auto it = table.find(fn);
  assert(it != table.end() && "call_lowered_functional of a function is_lowered_functional rejects");
  auto bound = bind_params(t, it->second.params, std::string("torch.nn.functional.") + it->second.row->name, args, kwargs);
  if (!bound) return nullptr;
  return it->second.row->lower(t, *bound);
}

}  // namespace tj::tracer
