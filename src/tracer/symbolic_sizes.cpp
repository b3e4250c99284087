// Symbolic sizes in the tracer (dynamic shapes, issue 15).
//
// Where an input has dynamic dims (dynamic_shapes.cpp), a size read into
// Python — x.shape, x.size(d), len(x), x.numel(), on an input or on any
// tensor computed from one — is a symint value: a size node in the graph
// (`sym_size(x, 0)`, graph/sym_ints.h) standing for the int it is in this
// trace. Python's + - * // % on symints and ints make more size nodes;
// tensor ops take them as arguments (`x.view(B * T, C)` is view(x,
// [sym_mul, 32])), so the graph holds for every size.
//
// What Python decides from a size is a fact the entry's guards check: a
// comparison (`if x.shape[0] > 16`) records its answer, and any other use
// of the number itself (range(n), math.sqrt(n), a format, a return value,
// a value live at a graph break) specializes it: `size == value`. The
// SIZE_FACTS guard (runtime/size_facts.h) checks them for each new size
// signature by inferring the graph's metas for those sizes, so a fact on a
// size that never changes (a head dim read from an intermediate) holds for
// every input size, and one that does not hold sends the frame back to the
// tracer.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <unordered_set>

#include <ATen/core/function_schema.h>

#include "graph/op_registry.h"
#include "graph/sym_ints.h"
#include "graph/unbacked_sizes.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/sizes.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

using graph::SymOp;

// An int constant that fits int64 (bigger ones: Python's arithmetic, on the number).
bool is_plain_int(const ValuePtr& v) {
  if (!v->is_constant() || !PyLong_Check(v->obj.get())) return false;
  int overflow = 0;
  PyLong_AsLongLongAndOverflow(v->obj.get(), &overflow);
  return overflow == 0;
}

int64_t int_of(const ValuePtr& v) { return PyLong_AsLongLong(v->obj.get()); }

graph::Arg arg_of(const ValuePtr& v) { return v->is_symint() ? graph::Arg(v->node) : graph::Arg(int_of(v)); }

// A BINARY_OP operator (in-place forms too) as a size op.
std::optional<SymOp> binary_sym_op(bc::BinaryOp op) {
  switch (op) {
    case bc::BinaryOp::add: return SymOp::add;
    case bc::BinaryOp::floor_divide: return SymOp::floordiv;
    case bc::BinaryOp::multiply: return SymOp::mul;
    case bc::BinaryOp::remainder: return SymOp::mod;
    case bc::BinaryOp::subtract: return SymOp::sub;
    default: return std::nullopt;
  }
}

SymOp compare_sym_op(int op) {
  switch (op) {
    case Py_LT: return SymOp::lt;
    case Py_LE: return SymOp::le;
    case Py_EQ: return SymOp::eq;
    case Py_NE: return SymOp::ne;
    case Py_GT: return SymOp::gt;
    default: return SymOp::ge;
  }
}

// Whether the size node `n` is >= 0 for every size: a size, or + * // of
// such nodes and constants >= 0 (numel() of a data-dependent tensor), ** too.
bool never_negative(const graph::Node& n) {
  if (!graph::is_sym(n)) return false;
  const SymOp op = n.op()->sym;
  if (op == SymOp::size) return true;
  if (op != SymOp::add && op != SymOp::mul && op != SymOp::floordiv && op != SymOp::pow) return false;
  for (const graph::Arg& a : n.args()) {
    if (a.is<int64_t>() ? a.as<int64_t>() < 0 : !(a.is_node() && never_negative(*a.node()))) return false;
    if (op == SymOp::floordiv && a.is<int64_t>() && a.as<int64_t>() == 0) return false;
  }
  return true;
}

// `lhs <op> rhs` for one size that is >= 0 and an int, when every such size
// gives the same answer (`idx.numel() >= 0`, `len(y) == -1`): a fact that
// holds without a guard, even for a size known only when the graph runs.
std::optional<bool> decided_for_every_size(SymOp op, const ValuePtr& lhs, const ValuePtr& rhs) {
  const bool size_left = lhs->is_symint() && is_plain_int(rhs);
  if (!size_left && !(rhs->is_symint() && is_plain_int(lhs))) return std::nullopt;
  const ValuePtr& size = size_left ? lhs : rhs;
  if (!size->node || !never_negative(*size->node)) return std::nullopt;
  const int64_t c = int_of(size_left ? rhs : lhs);
  if (!size_left) {  // c <op> n as n <op'> c
    op = op == SymOp::lt ? SymOp::gt : op == SymOp::le ? SymOp::ge : op == SymOp::gt ? SymOp::lt
       : op == SymOp::ge ? SymOp::le : op;
  }
  switch (op) {  // n ranges over [0, inf)
    case SymOp::eq: return c < 0 ? std::optional<bool>(false) : std::nullopt;
    case SymOp::ne: return c < 0 ? std::optional<bool>(true) : std::nullopt;
    case SymOp::lt: return c <= 0 ? std::optional<bool>(false) : std::nullopt;
    case SymOp::le: return c < 0 ? std::optional<bool>(false) : std::nullopt;
    case SymOp::gt: return c < 0 ? std::optional<bool>(true) : std::nullopt;
    case SymOp::ge: return c <= 0 ? std::optional<bool>(true) : std::nullopt;
    default: return std::nullopt;
  }
}

const char* sym_op_text(SymOp op) {
  static const char* const text[] = {"", "", "", "+", "-", "*", "//", "%", "**", "==", "!=", "<", "<=", ">", ">="};
  return text[static_cast<size_t>(op)];
}

}  // namespace

// Whether the sizes of `node` may differ between calls the entry serves:
// a dynamic input's dynamic dims, and anything computed from such an input.
static bool placeholder_dim_dynamic(const std::vector<DynamicInput>& dynamic, const std::string& source, int64_t dim) {
  for (const DynamicInput& d : dynamic)
    if (d.source == source) return dim < static_cast<int64_t>(d.dims.size()) && d.dims[static_cast<size_t>(dim)];
  return false;
}

ValuePtr tensor_size(TraceContext cx, const ValuePtr& tensor, int64_t dim) {
  const graph::TensorMeta& m = tensor->meta();
  const int64_t size = m.sizes[static_cast<size_t>(dim)];
  graph::Node* node = tensor->node;
  // A dim that depends on data (data_dependent.cpp): Python may only see
  // its real value, after the graph: the graph breaks at the read.
  // It is a size node whose value (the placeholder) no fact, specialization
  // or output may use (refuse_unbacked_fact): a fact every size satisfies
  // (`numel() >= 0`) is decided, arithmetic and tensor arguments stay
  // symbolic, anything else breaks at that use.
  // the size node of (node, dim), made once per trace
  auto size_node = [&] {
    graph::Node*& sym = cx.shared().size_nodes[{node, dim}];
    if (!sym) {
      sym = cx.graph().call(graph::OpRegistry::instance().sym(SymOp::size), {graph::Arg(node), graph::Arg(dim)}, {}, "size");
      sym->meta().sym_value = size;
      sym->meta().loc = cx.current_loc();
    }
    return Value::symint(sym, size);
  };
  if (cx.shared().unbacked_ops > 0 && !is_python_number(tensor) && graph::unbacked_dim(*node, dim)) {
    return size_node();
  }
  bool varies = false;
  if (!cx.shared().dynamic_inputs.empty() && !is_python_number(tensor)) {
    if (node->kind() == graph::NodeKind::placeholder) {
      auto index = cx.shared().placeholder_index.find(node);
      varies = index != cx.shared().placeholder_index.end() &&
               placeholder_dim_dynamic(cx.shared().dynamic_inputs,
                                       cx.shared().input_sources[static_cast<size_t>(index->second)]->to_string(), dim);
    } else {
      // Depth-first over the inputs, memoized: does a dynamic input reach it?
      std::vector<std::pair<const graph::Node*, bool>> stack{{node, false}};
      while (!stack.empty()) {
        auto [n, expanded] = stack.back();
        if (cx.shared().sizes_vary.count(n)) {
          stack.pop_back();
          continue;
        }
        if (n->kind() == graph::NodeKind::placeholder || n->kind() == graph::NodeKind::get_attr) {
          bool dynamic = false;
          auto index = cx.shared().placeholder_index.find(const_cast<graph::Node*>(n));
          if (index != cx.shared().placeholder_index.end()) {
            const std::string source = cx.shared().input_sources[static_cast<size_t>(index->second)]->to_string();
            for (const DynamicInput& d : cx.shared().dynamic_inputs) dynamic |= d.source == source;
          }
          cx.shared().sizes_vary[n] = dynamic;
          stack.pop_back();
          continue;
        }
        if (!expanded) {
          stack.back().second = true;
          for (graph::Node* in : n->inputs())
            if (!cx.shared().sizes_vary.count(in)) stack.emplace_back(in, false);
          continue;
        }
        bool any = false;
        for (graph::Node* in : n->inputs()) any |= cx.shared().sizes_vary[in];
        cx.shared().sizes_vary[n] = any;
        stack.pop_back();
      }
      varies = cx.shared().sizes_vary[node];
    }
  }
  if (!varies) return Value::constant_steal(PyLong_FromLongLong(size));
  return size_node();
}

// The sizes a size node of a placeholder shares a symbol by: its size here,
// and, under the compiler collective, its size on every rank.
static std::vector<int64_t> duck_key(TraceContext cx, const graph::Node& size_node) {
  const int64_t local = *size_node.meta().sym_value;
  auto index = cx.shared().placeholder_index.find(size_node.args()[0].node());
  if (!cx.rank_sizes() || index == cx.shared().placeholder_index.end() || !size_node.args()[1].is<int64_t>())
    return {local};
  const SourcePtr& source = cx.shared().input_sources.at(static_cast<size_t>(index->second));
  auto ranks = source ? cx.rank_sizes()->find(source->to_string()) : cx.rank_sizes()->end();
  if (ranks == cx.rank_sizes()->end()) return {local};
  const auto dim = static_cast<size_t>(size_node.args()[1].as<int64_t>());
  std::vector<int64_t> key{local};
  for (int64_t size : size_on_every_rank(ranks->second, dim)) key.push_back(size);
  return key;
}

void duck_size_inputs(TraceContext cx) {
  // sizes -> the first input size node the trace uses with them
  std::map<std::vector<int64_t>, graph::Node*> symbol_of;
  std::vector<std::pair<graph::Node*, graph::Node*>> shared;
  for (graph::Node* n : cx.graph().nodes()) {
    if (!graph::is_sym(*n) || n->op()->sym != SymOp::size || !n->args()[0].is_node() ||
        n->args()[0].node()->kind() != graph::NodeKind::placeholder || !n->meta().sym_value)
      continue;
    // Used: read by the graph or by a fact. A size read but never used
    // (`B, T, C = x.shape` with C unused) stays its own, unguarded.
    if (n->users().empty()) continue;
    auto [first, inserted] = symbol_of.emplace(duck_key(cx, *n), n);
    if (!inserted) shared.emplace_back(n, first->second);
  }
  if (shared.empty()) return;
  for (auto [size, symbol] : shared) {
    size->replace_all_uses_with(symbol);
    graph::Node* equal = cx.graph().call(graph::OpRegistry::instance().sym(SymOp::eq), {graph::Arg(size), graph::Arg(symbol)});
    equal->meta().sym_value = 1;
    equal->meta().loc = size->meta().loc;
    cx.shared().size_facts.emplace_back(equal, 1);
  }
  // A comparison of two sizes now one symbol (`if n == m`) is no fact any more.
  auto same_symbol = [](const std::pair<graph::Node*, int64_t>& fact) {
    const graph::Node& n = *fact.first;
    return n.op()->sym >= SymOp::eq && n.args()[0].is_node() && n.args()[1].is_node() &&
           n.args()[0].node() == n.args()[1].node();
  };
  auto& facts = cx.shared().size_facts;
  facts.erase(std::remove_if(facts.begin(), facts.end(), same_symbol), facts.end());
}

ValuePtr tensor_shape(TraceContext cx, const ValuePtr& tensor) {
  const auto& sizes = tensor->meta().sizes;
  std::vector<ValuePtr> items;
  bool any = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    items.push_back(tensor_size(cx, tensor, static_cast<int64_t>(d)));
    any |= items.back()->is_symint();
  }
  if (!any) return Value::constant_steal(size_object(sizes));
  ValuePtr shape = Value::sequence(ValueKind::tuple, std::move(items));
  shape->obj = PyRef::borrow(size_type());  // type(x.shape) is torch.Size
  return shape;
}

ValuePtr tensor_numel(TraceContext cx, const ValuePtr& tensor) {
  std::vector<ValuePtr> sizes;
  for (size_t d = 0; d < tensor->meta().sizes.size(); ++d) sizes.push_back(tensor_size(cx, tensor, static_cast<int64_t>(d)));
  return size_product(cx, sizes);
}

ValuePtr size_product(TraceContext cx, const std::vector<ValuePtr>& sizes) {
  ValuePtr n = Value::constant_steal(PyLong_FromLong(1));
  for (const ValuePtr& size : sizes) {
    bool handled = false;
    ValuePtr product = symint_binary(cx, bc::BinaryOp::multiply, n, size, handled);
    if (handled) {
      n = product;
      continue;
    }
    ValuePtr a = specialize(cx, n), b = specialize(cx, size);  // numbers (or beyond int64)
    if (!a->is_constant() || !b->is_constant()) return nullptr;
    n = Value::constant_steal(PyNumber_Multiply(a->obj.get(), b->obj.get()));
    if (!n->obj) return clear_expected_error({PyExc_OverflowError}), nullptr;  // a MemoryError stays set
  }
  return n;
}

ValuePtr symint_binary(TraceContext cx, bc::BinaryOp op, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled) {
  handled = false;
  if (op == bc::BinaryOp::power) return symint_power(cx, lhs, rhs, handled);
  auto sym = binary_sym_op(op);
  if (!sym || !(lhs->is_symint() || rhs->is_symint())) return nullptr;
  if (!(lhs->is_symint() || is_plain_int(lhs)) || !(rhs->is_symint() || is_plain_int(rhs))) return nullptr;
  auto value = graph::sym_apply(*sym, int_of(lhs), int_of(rhs));
  if (!value) return nullptr;  // a division by zero: Python raises, with the number itself
  handled = true;
  // x + 0, x - 0, x * 1, x // 1 are x
  if (rhs->is_constant() && ((int_of(rhs) == 0 && (*sym == SymOp::add || *sym == SymOp::sub)) ||
                             (int_of(rhs) == 1 && (*sym == SymOp::mul || *sym == SymOp::floordiv))))
    return lhs;
  if (lhs->is_constant() && ((int_of(lhs) == 0 && *sym == SymOp::add) || (int_of(lhs) == 1 && *sym == SymOp::mul)))
    return rhs;
  if (*sym == SymOp::sub && lhs->is_symint() && rhs->is_symint() && lhs->node == rhs->node)
    return Value::constant_steal(PyLong_FromLong(0));  // s - s
  graph::Node* n = cx.graph().call(graph::OpRegistry::instance().sym(*sym), {arg_of(lhs), arg_of(rhs)});
  n->meta().sym_value = *value;
  n->meta().loc = cx.current_loc();
  return Value::symint(n, *value);
}

bool size_holds(TraceContext cx, int op, const ValuePtr& v, int64_t c) {
  ValuePtr bound = Value::constant_steal(PyLong_FromLongLong(c));
  if (!v->is_symint()) return *graph::sym_apply(compare_sym_op(op), int_of(v), c) != 0;
  bool handled = false;
  ValuePtr answer = symint_compare(cx, op, v, bound, handled);
  return handled && answer && answer->obj.get() == Py_True;
}

namespace {

// The largest m with m ** k within int64 (k >= 2): n ** k of a size stays
// an int64 for -m <= n <= m.
int64_t power_base_bound(int64_t k) {
  int64_t lo = 1, hi = 3037000499;  // floor(sqrt(2**63 - 1))
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (graph::sym_apply(SymOp::pow, mid, k)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The largest e with c ** e within int64 (|c| >= 2): every smaller power fits too.
int64_t power_exponent_bound(int64_t c) {
  int64_t e = 0;
  while (graph::sym_apply(SymOp::pow, c, e + 1)) ++e;
  return e;
}

}  // namespace

// n ** m of two sizes: an int for m >= 0 (a fact). Its bound is not one
// fact per operand, so the fact is on the power itself: `n ** m >=
// INT64_MIN` holds exactly where the sym_pow node has a value (a power
// beyond int64 has none, and a fact without a value fails: the frame is
// traced again, and Python's big int is specialized there).
static ValuePtr size_power_of_sizes(TraceContext cx, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled) {
  handled = false;
  if (unbacked(cx, lhs) || unbacked(cx, rhs)) return nullptr;  // facts on them would break the graph
  const std::optional<int64_t> value = graph::sym_apply(SymOp::pow, int_of(lhs), int_of(rhs));
  if (!value || !size_holds(cx, Py_GE, rhs, 0)) return nullptr;  // a float, or beyond int64: specialized
  handled = true;
  auto& reg = graph::OpRegistry::instance();
  graph::Node* n = cx.graph().call(reg.sym(SymOp::pow), {arg_of(lhs), arg_of(rhs)});
  n->meta().sym_value = *value;
  n->meta().loc = cx.current_loc();
  graph::Node* within = cx.graph().call(reg.sym(SymOp::ge), {graph::Arg(n), graph::Arg(std::numeric_limits<int64_t>::min())});
  within->meta().sym_value = 1;
  within->meta().loc = cx.current_loc();
  cx.shared().size_facts.emplace_back(within, 1);
  return Value::symint(n, *value);
}

ValuePtr symint_power(TraceContext cx, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled) {
  handled = false;
  if (lhs->is_symint() && rhs->is_symint()) return size_power_of_sizes(cx, lhs, rhs, handled);
  if (!lhs->is_symint() && !rhs->is_symint()) return nullptr;
  if (!(lhs->is_symint() || is_plain_int(lhs)) || !(rhs->is_symint() || is_plain_int(rhs))) return nullptr;
  if (unbacked(cx, lhs->is_symint() ? lhs : rhs)) return nullptr;  // facts on it would break the graph
  const int64_t a = int_of(lhs), b = int_of(rhs);
  // A negative exponent gives a float, a power beyond int64 Python's big
  // int: size_number_binary's or the constants' (specialized).
  const std::optional<int64_t> value = graph::sym_apply(SymOp::pow, a, b);
  if (!value) return nullptr;
  if (rhs->is_constant()) {  // n ** k
    if (b == 0 || b == 1) {  // n ** 0 is 1 for every n (0 ** 0 too), n ** 1 is n
      handled = true;
      return b == 0 ? Value::constant_steal(PyLong_FromLong(1)) : lhs;
    }
    const int64_t bound = power_base_bound(b);
    if (!size_holds(cx, Py_LE, lhs, bound) || !size_holds(cx, Py_GE, lhs, -bound)) return nullptr;
  } else {  // c ** n: an int for n >= 0, within int64 up to the bound
    if (!size_holds(cx, Py_GE, rhs, 0)) return nullptr;
    if (a == 1) {
      handled = true;
      return Value::constant_steal(PyLong_FromLong(1));
    }
    if (a != 0 && a != -1 && !size_holds(cx, Py_LE, rhs, power_exponent_bound(a))) return nullptr;
  }
  handled = true;
  graph::Node* n = cx.graph().call(graph::OpRegistry::instance().sym(SymOp::pow), {arg_of(lhs), arg_of(rhs)});
  n->meta().sym_value = *value;
  n->meta().loc = cx.current_loc();
  return Value::symint(n, *value);
}

ValuePtr symint_compare(TraceContext cx, int op, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled) {
  handled = false;
  if (!(lhs->is_symint() || rhs->is_symint())) return nullptr;
  if (!(lhs->is_symint() || is_plain_int(lhs)) || !(rhs->is_symint() || is_plain_int(rhs))) return nullptr;
  handled = true;
  const SymOp sym = compare_sym_op(op);
  const bool answer = *graph::sym_apply(sym, int_of(lhs), int_of(rhs)) != 0;
  // true for every size (`numel() >= 0`): no guard, and no break for a data-dependent size
  if (auto always = decided_for_every_size(sym, lhs, rhs)) return Value::constant(*always ? Py_True : Py_False);
  // a fact on a data-dependent size: the graph breaks here (never a branch taken on its placeholder)
  const bool refused = refuse_unbacked_fact(cx, lhs, rhs, "a comparison of");
  if (!refused && !(lhs->is_symint() && rhs->is_symint() && lhs->node == rhs->node)) {
    graph::Node* n = cx.graph().call(graph::OpRegistry::instance().sym(sym), {arg_of(lhs), arg_of(rhs)});
    n->meta().sym_value = answer ? 1 : 0;
    n->meta().loc = cx.current_loc();
    cx.shared().size_facts.emplace_back(n, answer ? 1 : 0);
  }
  return Value::constant(answer ? Py_True : Py_False);
}

ValuePtr call_on_sizes(TraceContext cx, PyObject* fn, const std::vector<ValuePtr>& args, bool& handled) {
  handled = false;
  if (!std::any_of(args.begin(), args.end(), [](const ValuePtr& a) { return shows_sizes(a); })) return nullptr;
  auto is = [&](const char* module, const char* name) { return fn == cached_module_attr(module, name); };
  ValuePtr zero = Value::constant_steal(PyLong_FromLong(0));
  if (args.size() == 1 && args[0]->is_symint()) {
    if (fn == reinterpret_cast<PyObject*>(&PyLong_Type) || is("operator", "index") || is("operator", "pos")) {
      handled = true;
      return args[0];
    }
    if (is("operator", "neg")) return symint_binary(cx, bc::BinaryOp::subtract, zero, args[0], handled);
    if (fn == reinterpret_cast<PyObject*>(&PyBool_Type) || is("operator", "truth")) {
      ValuePtr nonzero = symint_compare(cx, Py_NE, args[0], zero, handled);
      return nonzero;
    }
  }
  if (args.size() == 1 && args[0]->is_sequence() && is("math", "prod")) {
    ValuePtr n = size_product(cx, args[0]->items);
    handled = n != nullptr;
    return n;
  }
  if (args.size() != 2) return nullptr;
  if (is("builtins", "max") || is("builtins", "min")) {
    // max(a, b) is a unless b > a, min(a, b) a unless b < a: the comparison is the fact
    ValuePtr first = symint_compare(cx, is("builtins", "max") ? Py_GE : Py_LE, args[0], args[1], handled);
    return handled ? (first->obj.get() == Py_True ? args[0] : args[1]) : nullptr;
  }
  for (const bc::BinaryOpInfo& row : bc::all_binary_ops())  // operator.add(a, b) ...
    if (binary_sym_op(row.op) && is("operator", std::string(row.function).c_str()))
      return symint_binary(cx, row.op, args[0], args[1], handled);
  static const std::pair<const char*, int> compares[] = {{"lt", Py_LT}, {"le", Py_LE}, {"eq", Py_EQ},
                                                         {"ne", Py_NE}, {"gt", Py_GT}, {"ge", Py_GE}};
  for (const auto& [name, op] : compares)
    if (is("operator", name)) return symint_compare(cx, op, args[0], args[1], handled);
  return nullptr;
}

ValuePtr compare_sizes(TraceContext cx, int op, const ValuePtr& lhs, const ValuePtr& rhs) {
  bool handled = false;
  if (ValuePtr r = symint_compare(cx, op, lhs, rhs, handled); handled) return r;
  auto items_of = [](const ValuePtr& v) -> std::optional<std::vector<ValuePtr>> {
    if (v->is_sequence()) return v->items;
    if (!v->is_constant() || !PyTuple_Check(v->obj.get())) return std::nullopt;  // torch.Size too
    std::vector<ValuePtr> out;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v->obj.get()); ++i) out.push_back(Value::constant(PyTuple_GET_ITEM(v->obj.get(), i)));
    return out;
  };
  if ((op != Py_EQ && op != Py_NE) || !(shows_sizes(lhs) || shows_sizes(rhs))) return nullptr;
  auto a = items_of(lhs), b = items_of(rhs);
  if (!a || !b || lhs->kind == ValueKind::list || rhs->kind == ValueKind::list) return nullptr;
  bool equal = a->size() == b->size();
  for (size_t i = 0; equal && i < a->size(); ++i) {
    const ValuePtr& x = (*a)[i];
    const ValuePtr& y = (*b)[i];
    if (!x->is_symint() && !y->is_symint()) {
      if (!is_plain_int(x) || !is_plain_int(y)) return nullptr;
      equal = int_of(x) == int_of(y);
      continue;
    }
    ValuePtr r = symint_compare(cx, Py_EQ, x, y, handled);
    if (!handled) return nullptr;
    equal = r->obj.get() == Py_True;
  }
  return Value::constant(equal == (op == Py_EQ) ? Py_True : Py_False);
}

bool shows_sizes(const ValuePtr& v) {
  if (v->is_symint() || v->kind == ValueKind::size_text) return true;
  if (!v->is_sequence() && v->kind != ValueKind::slice) return false;
  return std::any_of(v->items.begin(), v->items.end(), [](const ValuePtr& i) { return shows_sizes(i); });
}

ValuePtr size_numbers(TraceContext cx, const ValuePtr& v, bool guard) {
  if (v->is_symint()) {
    if (guard && refuse_unbacked_fact(cx, v, nullptr, "a Python number made of")) return Value::constant(v->obj.get());
    if (guard) {
      cx.shared().size_facts.emplace_back(v->node, int_of(v));
      note_specialized(cx, v);
    }
    return Value::constant(v->obj.get());
  }
  if (v->kind == ValueKind::size_text) {  // the text itself is used: the sizes it shows are facts
    if (guard)
      for (const auto& item : v->items) size_numbers(cx, item, true);
    return Value::constant(v->obj.get());
  }
  if (v->kind == ValueKind::slice) {
    std::vector<ValuePtr> parts;
    for (const auto& item : v->items) parts.push_back(size_numbers(cx, item, guard));
    for (const auto& p : parts)
      if (!p->is_constant()) {
        // a tensor bound (x[:lengths[0]]) is tensor indexing's alone: anything else breaks before it
        if (!guard) return v;
        cx.unsupported("slice bound of type " + p->type_name());
        return Value::constant_steal(PySlice_New(nullptr, nullptr, nullptr));
      }
    return Value::constant_steal(PySlice_New(parts[0]->obj.get(), parts[1]->obj.get(), parts[2]->obj.get()));
  }
  if (!v->is_sequence() || v->kind == ValueKind::list) return v;  // a list keeps its identity: its sizes stay
  // A tuple of sizes (x.shape) as numbers: a new tuple, the original unchanged (an undo
  // after a graph break must find it symbolic, its facts dropped with the failed span).
  bool any = false;
  std::vector<ValuePtr> items;
  for (const auto& item : v->items) {
    items.push_back(shows_sizes(item) ? size_numbers(cx, item, guard) : item);
    any |= items.back() != item;
  }
  if (!any) return v;
  ValuePtr copy = std::make_shared<Value>(*v);
  copy->items = std::move(items);
  copy->source = nullptr;
  return copy;
}

void specialize_dim_args(TraceContext cx, const std::string& op, std::vector<ValuePtr>& args,
                                                std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  bool any = std::any_of(args.begin(), args.end(), shows_sizes);
  for (const auto& kw : kwargs) any |= shows_sizes(kw.second);
  if (!any) return;
  // The dim parameters of every overload of `op` (positions and names).
  std::set<size_t> positions;
  std::set<std::string> names;
  for (const std::string& overload : graph::OpRegistry::instance().overloads(op)) {
    auto info = graph::OpRegistry::instance().get(overload.empty() ? op : op + "." + overload);
    if (!info.ok()) continue;
    const auto& params = (*info)->schema().arguments();
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].name().find("dim") != std::string::npos) {
        positions.insert(i);
        names.insert(params[i].name());
      }
  }
  auto numbers = [&](const ValuePtr& v) {  // a list argument is read, not kept: its numbers in a new list
    if (v->kind != ValueKind::list) return specialize(cx, v);
    std::vector<ValuePtr> items;
    for (const auto& item : v->items) items.push_back(specialize(cx, item));
    return Value::sequence(ValueKind::list, std::move(items));
  };
  for (size_t i = 0; i < args.size(); ++i)
    if (positions.count(i) && shows_sizes(args[i])) args[i] = numbers(args[i]);
  for (auto& [name, v] : kwargs)
    if (names.count(name) && shows_sizes(v)) v = numbers(v);
}

void fix_squeezed_dims(TraceContext cx, const graph::Node& node) {
  if ((cx.shared().dynamic_inputs.empty() && cx.shared().unbacked_ops == 0) || node.args().empty() || !node.args()[0].is_node())
    return;
  graph::Node* input = node.args()[0].node();
  const graph::TensorMeta* m = input->meta().tensor();
  if (!m) return;
  const int64_t rank = static_cast<int64_t>(m->sizes.size());
  const graph::Arg* dim = node.kwarg("dim");
  if (!dim && node.args().size() > 1) dim = &node.args()[1];
  std::vector<int64_t> dims;
  if (!dim || dim->is_none()) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  } else if (dim->is<int64_t>()) {
    dims.push_back(dim->as<int64_t>());
  } else if (dim->is_list()) {
    for (const graph::Arg& d : dim->items())
      if (d.is<int64_t>()) dims.push_back(d.as<int64_t>());
  }
  ValuePtr one = Value::constant_steal(PyLong_FromLong(1));
  ValuePtr tensor = Value::tensor(input);
  for (int64_t d : dims) {
    if (d < -rank || d >= rank) continue;  // eager raises (or a 0-d tensor): meta inference said so already
    bool handled = false;
    symint_compare(cx, Py_EQ, tensor_size(cx, tensor, d < 0 ? d + rank : d), one, handled);
  }
}

// chunk's and split's number of pieces as the fact (below).
static bool piece_count_fact(TraceContext cx, const graph::Node& node, const ValuePtr& size);

void fix_result_count(TraceContext cx, const graph::Node& node) {
  const char* why = "an op returning a list of tensors (split, chunk, unbind: their number follows the sizes)";
  const auto& params = node.op()->schema().arguments();
  auto dim_index = node.op()->schema().argumentIndexWithName("dim");
  const graph::Arg* dim = node.kwarg("dim");
  if (!dim && dim_index && static_cast<size_t>(*dim_index) < node.args().size()) dim = &node.args()[*dim_index];
  graph::Arg default_dim;
  if (!dim && dim_index && params[*dim_index].default_value() && params[*dim_index].default_value()->isInt()) {
    default_dim = graph::Arg(params[*dim_index].default_value()->toInt());
    dim = &default_dim;
  }
  if (node.meta().unbacked) return;  // where(condition): one index tensor per dim of the condition
  const graph::TensorMeta* input = node.args().empty() || !node.args()[0].is_node() ? nullptr : node.args()[0].node()->meta().tensor();
  auto sizes_read = [&] {
    if (!input || !unbacked_size_read(cx, Value::tensor(node.args()[0].node()), "an op returning a list of tensors"))
      cx.note_sizes_read(why);
  };
  if (!dim || !dim->is<int64_t>() || !input) return sizes_read();
  const int64_t rank = static_cast<int64_t>(input->sizes.size());
  int64_t d = dim->as<int64_t>();
  if (d < -rank || d >= rank) return sizes_read();
  ValuePtr size = tensor_size(cx, Value::tensor(node.args()[0].node()), d < 0 ? d + rank : d);
  if (piece_count_fact(cx, node, size)) return;
  specialize(cx, size);
  // the split sizes, when they are sizes themselves
  for (size_t i = 1; i < node.args().size(); ++i)
    node.args()[i].for_each_node([&](graph::Node* n) {
      if (graph::is_sym(*n)) cx.shared().size_facts.emplace_back(n, *n->meta().sym_value);
    });
}

// chunk(c) and split(s) with a constant c or s: what the trace relies on is
// their number of pieces, not the size T they cut: (T + s - 1) // s pieces
// of s = (T + c - 1) // c for chunk. That number is the fact and T stays
// symbolic, so a loop over the chunks of a variable batch is traced once
// (the pieces' own sizes are read from the tensors when used). False when
// the op is another or its count is not a constant int.
static bool piece_count_fact(TraceContext cx, const graph::Node& node, const ValuePtr& size) {
  const std::string base = node.op()->base_name();
  if (!size->is_symint() || (base != "chunk" && base != "split") || node.args().size() < 2 ||
      !node.args()[1].is<int64_t>() || node.args()[1].as<int64_t>() <= 0)
    return false;
  auto constant = [](int64_t v) { return Value::constant_steal(PyLong_FromLongLong(v)); };
  // a op b as a size expression (one of them symbolic), or null
  auto apply = [&](bc::BinaryOp op, const ValuePtr& a, const ValuePtr& b) -> ValuePtr {
    bool ok = false;
    ValuePtr r = a && b ? symint_binary(cx, op, a, b, ok) : nullptr;
    return ok ? r : nullptr;
  };
  auto ceil_div = [&](const ValuePtr& a, const ValuePtr& b) {  // (a + b - 1) // b
    ValuePtr b_less_one = b->is_symint() ? apply(bc::BinaryOp::subtract, b, constant(1)) : constant(int_of(b) - 1);
    return apply(bc::BinaryOp::floor_divide, apply(bc::BinaryOp::add, a, b_less_one), b);
  };
  ValuePtr piece = constant(node.args()[1].as<int64_t>());
  if (base == "chunk") piece = ceil_div(size, piece);
  ValuePtr count = piece ? ceil_div(size, piece) : nullptr;
  if (!count) return false;
  bool compared = false;
  symint_compare(cx, Py_EQ, count, constant(static_cast<int64_t>(node.meta().fake.size())), compared);
  return compared;
}

namespace {

// "L['x'].size(0)", "(L['x'].size(0) * 2)", "linear.size(1)".
std::string describe_size(const graph::Arg& arg, const std::unordered_map<graph::Node*, int>& placeholders,
                          const std::vector<SourcePtr>& sources) {
  if (!arg.is_node()) return arg.is<int64_t>() ? std::to_string(arg.as<int64_t>()) : "?";
  const graph::Node* n = arg.node();
  if (!graph::is_sym(*n)) {
    auto it = placeholders.find(const_cast<graph::Node*>(n));
    return it != placeholders.end() ? sources[static_cast<size_t>(it->second)]->to_string() : n->name();
  }
  std::string a = describe_size(n->args()[0], placeholders, sources);
  std::string b = describe_size(n->args()[1], placeholders, sources);
  if (n->op()->sym == SymOp::size) return a + ".size(" + b + ")";
  std::string text = a + " " + sym_op_text(n->op()->sym) + " " + b;
  return n->op()->sym >= SymOp::eq ? text : "(" + text + ")";
}

}  // namespace

void add_size_facts_guard(TraceContext cx) {
  if (cx.shared().size_facts.empty()) return;
  auto facts = std::make_shared<SizeFacts>();
  for (const auto& [node, value] : cx.shared().size_facts) {
    facts->facts.emplace_back(node->name(), value);
    std::string text = describe_size(graph::Arg(node), cx.shared().placeholder_index, cx.shared().input_sources);
    if (node->op()->sym >= SymOp::eq) text = value ? text : "not " + text;
    else text += " == " + std::to_string(value);
    facts->descriptions.push_back(std::move(text));
  }
  facts->graph = cx.shared().graph->clone();
  const std::vector<graph::Node*> placeholders = facts->graph->placeholders();
  facts->inputs.assign(cx.shared().input_sources.begin(),
                       cx.shared().input_sources.begin() + static_cast<long>(std::min(placeholders.size(), cx.shared().input_sources.size())));
  // Only the inputs the facts depend on are read by the guard.
  for (const auto& [name, value] : facts->facts) facts->fact_nodes.push_back(facts->graph->find(name));
  const std::unordered_set<const graph::Node*> seen = graph::nodes_feeding(facts->fact_nodes);
  for (size_t i = 0; i < placeholders.size() && i < facts->inputs.size(); ++i)
    if (seen.count(placeholders[i])) {
      facts->used_inputs.push_back(i);
      facts->used_placeholders.push_back(placeholders[i]);
    }
  facts->direct = std::all_of(seen.begin(), seen.end(), [&](const graph::Node* n) {
    return graph::is_sym(*n) || std::find(placeholders.begin(), placeholders.end(), n) != placeholders.end();
  });
  Guard g{GuardKind::size_facts, nullptr};
  g.size_facts = std::move(facts);
  cx.shared().guards.add(std::move(g));
}

}  // namespace tj::tracer
