// Data-dependent sizes in the tracer (issue 43, item 2).
//
// With tracejit.config.capture_dynamic_output_shape_ops (the default), an op
// whose result's size depends on tensor data (nonzero, x[mask],
// masked_select, unique, repeat_interleave with a tensor, torch.where(cond))
// stays in the graph: meta inference describes its data-dependent dims with
// a placeholder size (graph/unbacked_sizes.h) and the ops after it are
// traced on that description. Python must never decide anything from the
// placeholder: a size of such a dim read into Python is a symint
// (tensor_size), and a fact on it (`if idx.numel() == 0`), a specialization
// (range(n), a size used as a constant), or a read of the exact sizes
// (strides, contiguity, a view shaped by the sizes) breaks the graph there
// with a reason — the graph before it runs compiled, and the Python after
// it sees the real tensor. The runtime runs a graph with data-dependent
// sizes op by op (runtime/backend_step.cpp).
#include <algorithm>
#include <map>
#include <optional>

#include "graph/op_registry.h"
#include "graph/unbacked_sizes.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "tracer/torch_ops_support.h"
#include "tracer/translator.h"

namespace tj::tracer {

bool unbacked(TraceContext cx, const ValuePtr& v) {
  if (cx.shared().unbacked_ops == 0 || !v || !v->node) return false;
  if (!v->is_tensor() && !v->is_symint()) return false;
  return graph::depends_on_unbacked(*v->node);
}

bool unbacked_size_read(TraceContext cx, const ValuePtr& tensor, const std::string& what) {
  if (!tensor || !tensor->is_tensor() || !unbacked(cx, tensor)) return false;
  const int64_t rank = static_cast<int64_t>(tensor->meta().sizes.size());
  for (int64_t d = 0; d < rank; ++d)
    if (graph::unbacked_dim(*tensor->node, d)) {
      cx.unsupported(what + " of a tensor whose sizes depend on data (" + tensor->node->name() +
                  "): its sizes are known only when the graph runs");
      return true;
    }
  return false;
}

bool refuse_unbacked_fact(TraceContext cx, const ValuePtr& lhs, const ValuePtr& rhs, const char* what) {
  const ValuePtr& sym = lhs && lhs->is_symint() && unbacked(cx, lhs) ? lhs : rhs;
  if (!sym || !sym->is_symint() || !unbacked(cx, sym)) return false;
  cx.unsupported(std::string(what) + " a size that depends on tensor data (" + sym->node->name() +
              ", known only when the graph runs)");
  return true;
}

bool note_unbacked_op(TraceContext cx, const graph::Node& node) {
  if (!cx.shared().capture_dynamic_output_shape_ops) {
    cx.unsupported(node.op()->qualified_name() +
                ": the output's shape depends on tensor data (data-dependent; "
                "tracejit.config.capture_dynamic_output_shape_ops is False)");
    return false;
  }
  ++cx.shared().unbacked_ops;
  return true;
}

ValuePtr unbacked_int(TraceContext cx, const ValuePtr& v) {
  if (!v || !v->is_tensor() || !v->meta().sizes.empty() || !c10::isIntegralType(v->meta().dtype, /*includeBool=*/true))
    return v;
  if (!cx.shared().capture_dynamic_output_shape_ops)
    return cx.unsupported("a tensor's value used as an int (data-dependent; "
                       "tracejit.config.capture_dynamic_output_shape_ops is False)"),
           nullptr;
  graph::Node* n = cx.graph().call(graph::OpRegistry::instance().sym(graph::SymOp::item), {graph::Arg(v->node)}, {}, "item");
  n->meta().sym_value = graph::kUnbackedHint;
  n->meta().unbacked = true;
  n->meta().loc = cx.current_loc();
  ++cx.shared().unbacked_ops;
  return Value::symint(n, graph::kUnbackedHint);
}

void narrow_bounds(InstructionTranslator& t, std::vector<ValuePtr>& args, Kwargs& kwargs) {
  auto bound = [&](ValuePtr& v) {
    if (v && v->is_tensor() && v->meta().sizes.empty() && c10::isIntegralType(v->meta().dtype, /*includeBool=*/false))
      if (ValuePtr n = unbacked_int(t, v)) v = n;
  };
  for (size_t i = 2; i < args.size() && i < 4; ++i) bound(args[i]);
  for (auto& [name, v] : kwargs)
    if (name == "start" || name == "length") bound(v);
}

void factory_size_numbers(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr>& args,
                          Kwargs& kwargs) {
  // The positional arguments that are sizes: all of them for zeros(n, m),
  // the first for full(size, value), all but self for new_zeros, self's
  // next for new_full.
  static const std::map<std::string, std::pair<size_t, size_t>> kSizeArgs = {
      {"aten::zeros", {0, 64}}, {"aten::ones", {0, 64}},     {"aten::empty", {0, 64}},
      {"aten::rand", {0, 64}},  {"aten::randn", {0, 64}},    {"aten::full", {0, 1}},
      {"aten::new_zeros", {1, 64}}, {"aten::new_ones", {1, 64}}, {"aten::new_empty", {1, 64}},
      {"aten::new_full", {1, 2}}};
  auto it = kSizeArgs.find(name);
  if (it == kSizeArgs.end()) return;
  auto size = [&](ValuePtr& v) {
    if (!is_python_number(v) || !v->is_tensor() || !c10::isIntegralType(v->meta().dtype, /*includeBool=*/false))
      return false;
    ValuePtr n = unbacked_int(t, v);
    if (!n) return false;
    v = std::move(n);
    return true;
  };
  auto sizes = [&](ValuePtr& v) {
    if (!v) return;
    if (v->kind == ValueKind::list || v->kind == ValueKind::tuple) {
      std::vector<ValuePtr> items = v->items;  // a copy: the user's list keeps its numbers
      bool any = false;
      for (ValuePtr& item : items) any = size(item) || any;
      if (any) v = Value::sequence(v->kind, std::move(items));
      return;
    }
    size(v);
  };
  for (size_t i = it->second.first; i < args.size() && i < it->second.second; ++i) sizes(args[i]);
  for (auto& [key, v] : kwargs)
    if (key == "size") sizes(v);
  // torch.zeros(n, 2): the varargs the caller could not pack while n was a number
  if (it->second.second > it->second.first + 1) args = pack_ints(std::move(args), it->second.first);
}

ValuePtr call_unique(InstructionTranslator& t, const std::string& name, const std::vector<ValuePtr>& args,
                     const Kwargs& kwargs, bool& handled) {
  handled = false;
  const bool consecutive = name.find("consecutive") != std::string::npos;
  // torch.unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None)
  // torch.unique_consecutive(input, return_inverse=False, return_counts=False, dim=None)
  const std::vector<std::string> params = consecutive
                                              ? std::vector<std::string>{"input", "return_inverse", "return_counts", "dim"}
                                              : std::vector<std::string>{"input", "sorted", "return_inverse", "return_counts", "dim"};
  std::map<std::string, ValuePtr> bound;
  if (args.size() > params.size()) return nullptr;
  for (size_t i = 0; i < args.size(); ++i) bound[params[i]] = args[i];
  for (const auto& [key, v] : kwargs) {
    if (std::find(params.begin(), params.end(), key) == params.end() || bound.count(key)) return nullptr;
    bound[key] = v;
  }
  auto flag = [&](const char* key, bool otherwise) -> std::optional<bool> {
    auto it = bound.find(key);
    if (it == bound.end()) return otherwise;
    if (!it->second->is_constant() || !PyBool_Check(it->second->obj.get())) return std::nullopt;
    return it->second->obj.get() == Py_True;
  };
  auto sorted = flag("sorted", true), inverse = flag("return_inverse", false), counts = flag("return_counts", false);
  auto dim_it = bound.find("dim");
  ValuePtr dim = dim_it == bound.end() ? Value::constant(Py_None) : dim_it->second;
  if (!sorted || !inverse || !counts || !bound.count("input") || !bound["input"]->is_tensor()) return nullptr;
  if (!dim->is_constant() || (dim->obj.get() != Py_None && !PyLong_Check(dim->obj.get()))) return nullptr;
  handled = true;
  auto boolean = [](bool b) { return Value::constant(b ? Py_True : Py_False); };
  const ValuePtr& input = bound["input"];
  const bool by_dim = dim->obj.get() != Py_None;
  ValuePtr all;
  if (consecutive)
    all = call_aten(t, "aten::unique_consecutive", {input, boolean(*inverse), boolean(*counts), dim});
  else if (by_dim)
    all = call_aten(t, "aten::unique_dim", {input, dim, boolean(*sorted), boolean(*inverse), boolean(*counts)});
  else
    all = call_aten(t, "aten::_unique2", {input, boolean(*sorted), boolean(*inverse), boolean(*counts)});
  if (!all) return nullptr;
  if (!all->is_sequence() || all->items.size() != 3)
    return t.unsupported("torch." + name + ": an unexpected result"), nullptr;
  if (name == "_unique_impl") return Value::sequence(ValueKind::tuple, std::vector<ValuePtr>(all->items));
  if (!*inverse && !*counts) return all->items[0];
  std::vector<ValuePtr> out{all->items[0]};
  if (*inverse) out.push_back(all->items[1]);
  if (*counts) out.push_back(all->items[2]);
  return Value::sequence(ValueKind::tuple, std::move(out));
}

ValuePtr nonzero_as_tuple(InstructionTranslator& t, const std::vector<ValuePtr>& args, const Kwargs& kwargs,
                          bool& handled) {
  handled = false;
  if (args.size() != 1 || kwargs.size() != 1 || kwargs[0].first != "as_tuple" || !kwargs[0].second->is_constant() ||
      !PyBool_Check(kwargs[0].second->obj.get()))
    return nullptr;
  handled = true;
  if (kwargs[0].second->obj.get() == Py_False) return call_aten(t, "aten::nonzero", {args[0]});
  ValuePtr indices = call_aten(t, "aten::nonzero_numpy", {args[0]});
  if (!indices) return nullptr;
  if (!indices->is_sequence()) return t.unsupported("torch.nonzero(as_tuple=True): an unexpected result"), nullptr;
  return Value::sequence(ValueKind::tuple, std::vector<ValuePtr>(indices->items));
}

}  // namespace tj::tracer
