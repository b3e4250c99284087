// Size builtins: evaluation, meta values and folding; see sym_ints.h.
#include "graph/sym_ints.h"
#include "graph/unbacked_sizes.h"

#include <limits>
#include <unordered_map>

namespace tj::graph {

bool is_sym(const Node& node) { return node.op() && node.op()->sym != SymOp::none; }

bool has_sym_nodes(const Graph& graph) {
  for (const Node* n : graph.nodes())
    if (is_sym(*n)) return true;
  return false;
}

std::optional<int64_t> sym_apply(SymOp op, int64_t a, int64_t b) {
  switch (op) {
    case SymOp::add:
    case SymOp::sub:
    case SymOp::mul: {
      int64_t r = 0;  // beyond int64: no value (Python's ints do not wrap)
      bool overflow = op == SymOp::add ? __builtin_add_overflow(a, b, &r)
                      : op == SymOp::sub ? __builtin_sub_overflow(a, b, &r)
                                         : __builtin_mul_overflow(a, b, &r);
      if (overflow) return std::nullopt;
      return r;
    }
    case SymOp::floordiv:
    case SymOp::mod: {
      if (b == 0 || (b == -1 && a == std::numeric_limits<int64_t>::min())) return std::nullopt;
      int64_t q = a / b, r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) {  // C++ truncates; Python floors
        --q;
        r += b;
      }
      return op == SymOp::floordiv ? q : r;
    }
    case SymOp::pow: {  // int ** int >= 0 (a negative exponent gives a float in Python: no int value)
      if (b < 0) return std::nullopt;
      if (a == 0) return b == 0 ? 1 : 0;
      if (a == 1) return 1;
      if (a == -1) return b & 1 ? -1 : 1;
      int64_t r = 1;
      for (int64_t e = 0; e < b; ++e)  // |a| >= 2: past int64 within 64 steps
        if (__builtin_mul_overflow(r, a, &r)) return std::nullopt;
      return r;
    }
    case SymOp::eq: return a == b;
    case SymOp::ne: return a != b;
    case SymOp::lt: return a < b;
    case SymOp::le: return a <= b;
    case SymOp::gt: return a > b;
    case SymOp::ge: return a >= b;
    default: return std::nullopt;
  }
}

Expected<int64_t> eval_sym(const Node& node, const SizeOf& size_of, const IntOf& int_of, const ItemOf& item_of) {
  const SymOp op = node.op()->sym;
  auto fail = [&](const std::string& what) { return Error{node.name() + " (" + node.target() + "): " + what}; };
  if (op == SymOp::item) {
    if (node.args().size() != 1 || !node.args()[0].is_node()) return fail("takes (tensor)");
    auto v = item_of ? item_of(*node.args()[0].node()) : std::nullopt;
    if (!v) return fail("reads a tensor's value, known only when the graph runs");
    return *v;
  }
  if (node.args().size() != 2) return fail("takes two arguments");
  auto int_arg = [&](const Arg& a) -> std::optional<int64_t> {
    if (a.is<int64_t>()) return a.as<int64_t>();
    if (a.is<bool>()) return a.as<bool>() ? 1 : 0;
    if (a.is_node()) return int_of(*a.node());
    return std::nullopt;
  };
  if (op == SymOp::size) {
    const Arg& dim = node.args()[1];
    if (!node.args()[0].is_node() || !dim.is<int64_t>()) return fail("takes (tensor, int)");
    auto size = size_of(*node.args()[0].node(), dim.as<int64_t>());
    if (!size) return fail("no size " + std::to_string(dim.as<int64_t>()) + " of " + node.args()[0].node()->name());
    return *size;
  }
  auto a = int_arg(node.args()[0]), b = int_arg(node.args()[1]);
  if (!a || !b) return fail("an argument has no int value");
  auto v = sym_apply(op, *a, *b);
  if (!v) return fail("no int value (a division by zero, a negative power, or beyond int64)");
  return *v;
}

std::unordered_set<const Node*> nodes_feeding(const std::vector<const Node*>& roots) {
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> work(roots.begin(), roots.end());
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!n || !seen.insert(n).second) continue;
    for (Node* in : n->inputs()) work.push_back(in);
  }
  return seen;
}

Status infer_sym(Node& node) {
  if (node.op()->sym == SymOp::item) {  // a value known when the graph runs: the placeholder
    node.meta().sym_value = kUnbackedHint;
    node.meta().unbacked = true;
    return ok_status();
  }
  SizeOf size_of = [](const Node& t, int64_t dim) -> std::optional<int64_t> {
    const TensorMeta* m = t.meta().tensor();
    if (!m) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(m->sizes.size());
    if (dim < -rank || dim >= rank) return std::nullopt;
    return m->sizes[static_cast<size_t>(dim < 0 ? dim + rank : dim)];
  };
  IntOf int_of = [](const Node& n) { return n.meta().sym_value; };
  auto v = eval_sym(node, size_of, int_of);
  if (!v) return v.error();
  node.meta().sym_value = *v;
  return ok_status();
}

Expected<SizeExpr> size_expr_of(const Node& node, const InputOf& input_of) {
  SizeExpr expr;
  std::unordered_map<const Node*, SizeExpr::Operand> done;
  using Operand = SizeExpr::Operand;
  std::function<Expected<Operand>(const Arg&)> operand = [&](const Arg& arg) -> Expected<Operand> {
    if (arg.is<int64_t>()) return Operand{Operand::Kind::constant, arg.as<int64_t>(), -1};
    if (arg.is<bool>()) return Operand{Operand::Kind::constant, arg.as<bool>() ? 1 : 0, -1};
    if (!arg.is_node()) return Error{"a size expression with an argument that is not an int"};
    const Node& n = *arg.node();
    if (auto it = done.find(&n); it != done.end()) return it->second;
    if (!is_sym(n) || n.args().size() != 2) return Error{n.name() + " is not a size node"};
    const SymOp op = n.op()->sym;
    Operand out;
    if (op == SymOp::size) {
      auto input = n.args()[0].is_node() ? input_of(*n.args()[0].node()) : std::nullopt;
      if (!input || !n.args()[1].is<int64_t>())
        return Error{n.name() + " reads a size of " + (n.args()[0].is_node() ? n.args()[0].node()->name() : "?") +
                     ", not of a graph input"};
      out = Operand{Operand::Kind::input_size, n.args()[1].as<int64_t>(), *input};
    } else if (op >= SymOp::add && op <= SymOp::pow) {
      auto a = operand(n.args()[0]);
      if (!a) return a.error();
      auto b = operand(n.args()[1]);
      if (!b) return b.error();
      expr.steps.push_back({op, *a, *b});
      out = Operand{Operand::Kind::step, static_cast<int64_t>(expr.steps.size() - 1), -1};
    } else {
      return Error{n.name() + " is a comparison, not a number"};
    }
    done.emplace(&n, out);
    return out;
  };
  auto result = operand(Arg(const_cast<Node*>(&node)));
  if (!result) return result.error();
  expr.result = *result;
  return expr;
}

std::optional<int64_t> eval_size_expr(const SizeExpr& expr, const InputSize& input_size) {
  // Steps are few (a handful): values on the stack for the common case.
  int64_t small[16];
  std::vector<int64_t> large;
  int64_t* values = small;
  if (expr.steps.size() > 16) {
    large.resize(expr.steps.size());
    values = large.data();
  }
  auto value = [&](const SizeExpr::Operand& o) -> std::optional<int64_t> {
    switch (o.kind) {
      case SizeExpr::Operand::Kind::constant: return o.value;
      case SizeExpr::Operand::Kind::input_size: return input_size(o.input, o.value);
      case SizeExpr::Operand::Kind::step: return values[o.value];
    }
    return std::nullopt;
  };
  for (size_t i = 0; i < expr.steps.size(); ++i) {
    const SizeExpr::Step& s = expr.steps[i];
    auto a = value(s.a), b = value(s.b);
    if (!a || !b) return std::nullopt;
    auto v = sym_apply(s.op, *a, *b);
    if (!v) return std::nullopt;
    values[i] = *v;
  }
  return value(expr.result);
}

std::string print_size_expr(const SizeExpr& expr, const std::function<std::string(int)>& name_of) {
  static const char* const text[] = {"", "", "", "+", "-", "*", "//", "%", "**"};  // by SymOp (none, size, item: none)
  std::function<std::string(const SizeExpr::Operand&)> show = [&](const SizeExpr::Operand& o) -> std::string {
    switch (o.kind) {
      case SizeExpr::Operand::Kind::constant: return std::to_string(o.value);
      case SizeExpr::Operand::Kind::input_size: return name_of(o.input) + ".size(" + std::to_string(o.value) + ")";
      case SizeExpr::Operand::Kind::step: {
        const SizeExpr::Step& s = expr.steps[static_cast<size_t>(o.value)];
        return "(" + show(s.a) + " " + text[static_cast<size_t>(s.op)] + " " + show(s.b) + ")";
      }
    }
    return "?";
  };
  std::string out = show(expr.result);
  if (out.size() > 2 && out.front() == '(' && out.back() == ')' && expr.result.kind == SizeExpr::Operand::Kind::step)
    out = out.substr(1, out.size() - 2);
  return out;
}

namespace {

Arg with_constant(const Arg& arg, const Node* node, int64_t value) {
  if (arg.is_node()) return arg.node() == node ? Arg(value) : arg;
  if (!arg.is_list()) return arg;
  std::vector<Arg> items;
  for (const Arg& item : arg.items()) items.push_back(with_constant(item, node, value));
  return Arg(ArgList{std::move(items), arg.as<ArgList>().is_tuple});
}

}  // namespace

void erase_unused_sym_nodes(Graph& graph) {
  std::vector<Node*> nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)
    if (is_sym(**it) && (*it)->users().empty()) graph.erase(*it);
}

Status fold_sym_nodes(Graph& graph) {
  for (const Node* n : graph.nodes())  // a value known when the graph runs has only its placeholder here
    if (is_sym(*n) && n->meta().unbacked)
      return Error{n->name() + " (" + n->target() + "): a data-dependent value cannot be folded"};
  for (Node* n : graph.nodes()) {
    if (!is_sym(*n)) continue;
    if (!n->meta().sym_value) return Error{n->name() + " (" + n->target() + "): no value to fold"};
    fold_sym_node(graph, n, *n->meta().sym_value);
  }
  return ok_status();
}

void fold_sym_node(Graph& graph, Node* node, int64_t value) {
  for (Node* user : std::vector<Node*>(node->users())) {
    std::vector<Arg> args;
    std::vector<Kwarg> kwargs;
    for (const Arg& a : user->args()) args.push_back(with_constant(a, node, value));
    for (const Kwarg& kw : user->kwargs()) kwargs.emplace_back(kw.first, with_constant(kw.second, node, value));
    user->set_args(std::move(args), std::move(kwargs));
  }
  graph.erase(node);
}

}  // namespace tj::graph
