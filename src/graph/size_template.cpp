// Size templates: a functional graph generalized over sizes from captures
// at several size points; see size_template.h.
#include "graph/size_template.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include <ATen/ops/equal.h>

#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/printer.h"
#include "graph/sym_ints.h"

namespace tj::graph::aot {

namespace {

using PointSizes = std::vector<std::vector<int64_t>>;  // per placeholder

PointSizes placeholder_sizes(const Graph& g) {
  PointSizes out;
  for (const Node* ph : g.placeholders()) out.push_back(ph->meta().tensor() ? ph->meta().tensor()->sizes : std::vector<int64_t>{});
  return out;
}

std::string join(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out;
}

// Equal non-int, non-node, non-list values (None, bool, float bit for bit,
// string, dtype, device, layout, memory format).
bool same_plain_value(const Arg& a, const Arg& b) {
  if (a.value().index() != b.value().index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ArgList> || std::is_same_v<T, Node*> || std::is_same_v<T, int64_t>) {
          return false;
        } else if constexpr (std::is_same_v<T, double>) {
          const double y = b.as<double>();
          return std::memcmp(&x, &y, sizeof x) == 0 || (std::isnan(x) && std::isnan(y));
        } else {
          return x == b.as<T>();
        }
      },
      a.value());
}

// Equal argument lists: node arguments at the same index of their graphs
// (`ia`, `ib`), ints and every other value equal.
bool same_args(const std::vector<Arg>& a, const std::vector<Arg>& b, const std::unordered_map<const Node*, size_t>& ia,
               const std::unordered_map<const Node*, size_t>& ib) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Arg& x = a[i];
    const Arg& y = b[i];
    if (x.value().index() != y.value().index()) return false;
    if (x.is_node()) {
      if (ia.at(x.node()) != ib.at(y.node())) return false;
    } else if (x.is_list()) {
      if (x.as<ArgList>().is_tuple != y.as<ArgList>().is_tuple || !same_args(x.items(), y.items(), ia, ib))
        return false;
    } else if (x.is<int64_t>()) {
      if (x.as<int64_t>() != y.as<int64_t>()) return false;
    } else if (!same_plain_value(x, y)) {
      return false;
    }
  }
  return true;
}

// Every exponent vector over `n` classes with entries 0..2 and degree 1..3.
void exponent_vectors(size_t n, std::vector<int>& cur, int degree, std::vector<std::vector<int>>& out) {
  if (cur.size() == n) {
    if (degree >= 1) out.push_back(cur);
    return;
  }
  for (int e = 0; e <= 2 && degree + e <= 3; ++e) {
    cur.push_back(e);
    exponent_vectors(n, cur, degree + e, out);
    cur.pop_back();
  }
}

std::optional<int64_t> monomial(const std::vector<std::vector<int64_t>>& class_values, const std::vector<int>& exps,
                                size_t point) {
  int64_t m = 1;
  for (size_t c = 0; c < exps.size(); ++c)
    for (int e = 0; e < exps[c]; ++e)
      if (__builtin_mul_overflow(m, class_values[c][point], &m)) return std::nullopt;
  return m;
}

int64_t floor_div(int64_t a, int64_t b) { return *sym_apply(SymOp::floordiv, a, b); }

// The one form that gives `values` at every point (see the header).
Expected<SizeForm> fit_form(const std::vector<std::vector<int64_t>>& class_values, const std::vector<int64_t>& values,
                            const std::string& what) {
  std::vector<std::vector<int>> exponents;
  std::vector<int> cur;
  exponent_vectors(class_values.size(), cur, 0, exponents);
  const size_t n = values.size();
  std::vector<SizeForm> found;
  for (const std::vector<int>& exps : exponents) {
    std::vector<int64_t> m;
    for (size_t p = 0; p < n; ++p) {
      auto v = monomial(class_values, exps, p);
      if (!v) break;
      m.push_back(*v);
    }
    if (m.size() != n) continue;
    size_t q = 1;
    while (q < n && m[q] == m[0]) ++q;
    if (q == n) continue;
    const int64_t dv = values[q] - values[0], dm = m[q] - m[0];
    if (dv != 0 && dv % dm == 0) {
      SizeForm f{exps, dv / dm, values[0] - dv / dm * m[0], 1};
      bool fits = true;
      for (size_t p = 0; p < n && fits; ++p) fits = f.c * m[p] + f.k == values[p];
      if (fits) found.push_back(f);
    }
    for (int64_t div = 2; div <= 8; ++div)
      for (int64_t k = 0; k < div; ++k) {
        bool fits = true;
        for (size_t p = 0; p < n && fits; ++p) fits = floor_div(m[p] + k, div) == values[p];
        if (fits) found.push_back(SizeForm{exps, 1, k, div});
      }
  }
  if (found.size() == 1) return found[0];
  if (found.empty()) return Error{what + " (" + join(values) + ") has no size form"};
  return Error{what + " (" + join(values) + ") fits " + std::to_string(found.size()) +
               " size forms (other sizes would tell them apart)"};
}

class Generalizer {
 public:
  Generalizer(const std::vector<const Graph*>& points, int given, bool bounds)
      : points_(points), given_(given), bounds_(bounds) {}

  Expected<SizeTemplate> run() {
    if (points_.size() < 3) return Error{"fewer than three size points"};
    if (auto st = find_classes(); !st) return st.error();
    if (auto st = derive_inputs(); !st) return st.error();
    for (const Graph* g : points_) {
      nodes_.push_back(g->nodes());
      auto& index = index_.emplace_back();
      for (size_t i = 0; i < nodes_.back().size(); ++i) index[nodes_.back()[i]] = i;
      if (nodes_.back().size() != nodes_[0].size()) return Error{"the captures have different numbers of nodes"};
    }
    tmpl_ = points_[0]->clone();
    tnodes_ = tmpl_->nodes();
    for (size_t i = 0; i < tnodes_.size(); ++i)
      if (auto st = merge_node(i); !st) return st.error();
    tmpl_->set_insert_point(nullptr);
    out_.graph = std::shared_ptr<const Graph>(std::move(tmpl_));
    for (size_t p = 0; p < points_.size(); ++p)
      if (auto st = check_point(p); !st) return st.error();
    return std::move(out_);
  }

 private:
  Status find_classes() {
    std::vector<PointSizes> sizes;
    for (const Graph* g : points_) sizes.push_back(placeholder_sizes(*g));
    for (const PointSizes& s : sizes) {
      if (s.size() != sizes[0].size()) return Error{"the captures have different numbers of inputs"};
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i].size() != sizes[0][i].size()) return Error{"an input's rank differs between the captures"};
    }
    if (given_ < 0 || given_ > static_cast<int>(sizes[0].size())) given_ = static_cast<int>(sizes[0].size());
    for (PointSizes& s : sizes) s.resize(static_cast<size_t>(given_));
    out_.fixed_sizes = sizes[0];
    for (size_t i = 0; i < sizes[0].size(); ++i)
      for (size_t d = 0; d < sizes[0][i].size(); ++d) {
        std::vector<int64_t> values;
        for (const PointSizes& s : sizes) values.push_back(s[i][d]);
        if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; })) continue;
        SizeVar var{static_cast<int>(i), static_cast<int>(d)};
        size_t c = 0;
        while (c < out_.class_values.size() && out_.class_values[c] != values) ++c;
        if (c == out_.class_values.size()) {
          out_.class_values.push_back(values);
          out_.classes.emplace_back();
        }
        out_.classes[c].push_back(var);
      }
    for (size_t c = 0; c < out_.class_values.size(); ++c) {
      std::vector<int64_t> distinct = out_.class_values[c];
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      if (distinct.size() < 3)
        return Error{"dim " + std::to_string(out_.classes[c][0].dim) + " of input " +
                     std::to_string(out_.classes[c][0].placeholder) + " took only " + std::to_string(distinct.size()) +
                     " distinct sizes (" + join(out_.class_values[c]) + "); three are needed"};
    }
    for (size_t a = 0; a < out_.class_values.size(); ++a)
      for (size_t b = 0; b < out_.class_values.size(); ++b) {
        bool below = a != b, tied = false;
        for (size_t p = 0; below && p < points_.size(); ++p) {
          below = out_.class_values[a][p] <= out_.class_values[b][p];
          tied |= out_.class_values[a][p] == out_.class_values[b][p];
        }
        if (below) (tied ? out_.weak_orders : out_.orders).emplace_back(static_cast<int>(a), static_cast<int>(b));
      }
    if (bounds_) find_bounds();
    return ok_status();
  }

  // SizeTemplate::bounds: against the sizes of the dims in no class.
  void find_bounds() {
    std::vector<int64_t> fixed;
    for (size_t i = 0; i < out_.fixed_sizes.size(); ++i)
      for (size_t d = 0; d < out_.fixed_sizes[i].size(); ++d) {
        bool in_class = false;
        for (const auto& cls : out_.classes)
          for (const SizeVar& v : cls) in_class |= v.placeholder == static_cast<int>(i) && v.dim == static_cast<int>(d);
        if (!in_class && out_.fixed_sizes[i][d] >= 2) fixed.push_back(out_.fixed_sizes[i][d]);
      }
    std::sort(fixed.begin(), fixed.end());
    fixed.erase(std::unique(fixed.begin(), fixed.end()), fixed.end());
    for (size_t c = 0; c < out_.class_values.size(); ++c)
      for (int64_t k : fixed) {
        const auto& v = out_.class_values[c];
        const bool tied = std::find(v.begin(), v.end(), k) != v.end();
        if (std::all_of(v.begin(), v.end(), [&](int64_t x) { return x >= k; }))
          out_.bounds.push_back({static_cast<int>(c), k, true, !tied});
        else if (std::all_of(v.begin(), v.end(), [&](int64_t x) { return x <= k; }))
          out_.bounds.push_back({static_cast<int>(c), k, false, !tied});
      }
  }

  // The placeholders after the given ones: contiguous, sizes fitted.
  Status derive_inputs() {
    const std::vector<Node*> phs = points_[0]->placeholders();
    for (size_t i = static_cast<size_t>(given_); i < phs.size(); ++i) {
      DerivedInput d;
      d.placeholder = static_cast<int>(i);
      const std::string what = "input " + std::to_string(i);
      for (const Graph* g : points_) {
        const auto& m = g->placeholders()[i]->meta().tensor();
        if (!m || !m->is_contiguous() || m->storage_offset != 0)
          return Error{what + " (derived from the others) is not a contiguous tensor in every capture"};
      }
      d.meta = *phs[i]->meta().tensor();
      for (size_t dim = 0; dim < d.meta.sizes.size(); ++dim) {
        std::vector<int64_t> values;
        for (const Graph* g : points_) values.push_back(g->placeholders()[i]->meta().tensor()->sizes[dim]);
        auto v = fit_size_int(out_, values, what + " dim " + std::to_string(dim));
        if (!v) return v.error();
        d.sizes.push_back(*v);
      }
      out_.derived.push_back(std::move(d));
    }
    return ok_status();
  }

  // The size node for `f`, made before the node being merged (cached: the
  // nodes merged later come after it).
  Node* size_node(const SizeForm& f) {
    if (auto it = forms_.find(f); it != forms_.end()) return it->second;
    auto& reg = OpRegistry::instance();
    Node* product = nullptr;
    if (auto it = monomials_.find(f.exps); it != monomials_.end()) {
      product = it->second;
    } else {
      for (size_t c = 0; c < f.exps.size(); ++c) {
        if (f.exps[c] == 0) continue;
        if (!class_nodes_.count(c)) {
          const SizeVar& v = out_.classes[c][0];
          Node* ph = tnodes_[index_[0].at(points_[0]->placeholders()[static_cast<size_t>(v.placeholder)])];
          class_nodes_[c] = tmpl_->call(reg.sym(SymOp::size), {Arg(ph), Arg(int64_t{v.dim})}, {}, "size");
        }
        for (int e = 0; e < f.exps[c]; ++e)
          product = product ? tmpl_->call(reg.sym(SymOp::mul), {Arg(product), Arg(class_nodes_[c])}) : class_nodes_[c];
      }
      monomials_[f.exps] = product;
    }
    Node* n = product;
    if (f.c != 1) n = tmpl_->call(reg.sym(SymOp::mul), {Arg(n), Arg(f.c)});
    if (f.k != 0) n = tmpl_->call(reg.sym(SymOp::add), {Arg(n), Arg(f.k)});
    if (f.q != 1) n = tmpl_->call(reg.sym(SymOp::floordiv), {Arg(n), Arg(f.q)});
    forms_[f] = n;
    ++out_.symbolic_ints;
    return n;
  }

  Expected<Arg> merge(const std::vector<const Arg*>& args, const Node& user) {
    const Arg& a0 = *args[0];
    for (const Arg* a : args)
      if (a->value().index() != a0.value().index())
        return Error{"an argument of " + user.name() + " (" + user.target() + ") changes kind between the captures"};
    if (a0.is<int64_t>()) {
      std::vector<int64_t> values;
      for (const Arg* a : args) values.push_back(a->as<int64_t>());
      if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; })) return a0;
      auto f = fit_form(out_.class_values, values, "the int argument of " + user.name() + " (" + user.target() + ")");
      if (!f) return f.error();
      return Arg(size_node(*f));
    }
    if (a0.is_node()) {
      const size_t i = index_[0].at(a0.node());
      for (size_t p = 1; p < args.size(); ++p)
        if (index_[p].at(args[p]->node()) != i)
          return Error{"an argument of " + user.name() + " reads another node between the captures"};
      return Arg(tnodes_[i]);
    }
    if (a0.is_list()) {
      ArgList out{{}, a0.as<ArgList>().is_tuple};
      for (const Arg* a : args)
        if (a->items().size() != a0.items().size() || a->as<ArgList>().is_tuple != out.is_tuple)
          return Error{"a list argument of " + user.name() + " (" + user.target() + ") changes length between the captures"};
      for (size_t j = 0; j < a0.items().size(); ++j) {
        std::vector<const Arg*> items;
        for (const Arg* a : args) items.push_back(&a->items()[j]);
        auto m = merge(items, user);
        if (!m) return m.error();
        out.items.push_back(std::move(*m));
      }
      return Arg(std::move(out));
    }
    for (const Arg* a : args)
      if (!same_plain_value(*a, a0))
        return Error{"a non-int argument of " + user.name() + " (" + user.target() + ") differs between the captures"};
    return a0;
  }

  Status merge_node(size_t i) {
    Node* t = tnodes_[i];
    for (size_t p = 1; p < points_.size(); ++p) {
      const Node* n = nodes_[p][i];
      if (n->kind() != t->kind() || n->target() != t->target() || n->op() != t->op() ||
          n->args().size() != t->args().size() || n->kwargs().size() != t->kwargs().size())
        return Error{"node " + t->name() + " (" + t->target() + ") differs between the captures"};
      if (t->kind() == NodeKind::get_attr) {
        const at::Tensor* a = points_[0]->attr(t->target());
        const at::Tensor* b = points_[p]->attr(n->target());
        if (!a || !b || a->sizes() != b->sizes() || a->scalar_type() != b->scalar_type() || !at::equal(*a, *b))
          return Error{"the tensor constant " + t->target() + " differs between the captures"};
      }
    }
    if (t->kind() == NodeKind::placeholder || t->kind() == NodeKind::get_attr) return ok_status();
    tmpl_->set_insert_point(t);
    std::vector<Arg> args;
    for (size_t j = 0; j < t->args().size(); ++j) {
      std::vector<const Arg*> at_points;
      for (size_t p = 0; p < points_.size(); ++p) at_points.push_back(&nodes_[p][i]->args()[j]);
      auto m = merge(at_points, *t);
      if (!m) return m.error();
      args.push_back(std::move(*m));
    }
    std::vector<Kwarg> kwargs;
    for (size_t j = 0; j < t->kwargs().size(); ++j) {
      std::vector<const Arg*> at_points;
      for (size_t p = 0; p < points_.size(); ++p) {
        const Kwarg& kw = nodes_[p][i]->kwargs()[j];
        if (kw.first != t->kwargs()[j].first) return Error{"the keyword arguments of " + t->name() + " differ"};
        at_points.push_back(&kw.second);
      }
      auto m = merge(at_points, *t);
      if (!m) return m.error();
      kwargs.emplace_back(t->kwargs()[j].first, std::move(*m));
    }
    t->set_args(std::move(args), std::move(kwargs));
    return ok_status();
  }

  // The template specialized for point `p` is that capture, metas included.
  Status check_point(size_t p) {
    std::vector<TensorMeta> metas;
    for (const Node* ph : points_[p]->placeholders())
      metas.push_back(ph->meta().tensor() ? *ph->meta().tensor() : TensorMeta{});
    metas.resize(static_cast<size_t>(given_));
    auto g = specialize_sizes(out_, metas);
    const std::string where = "the template specialized for capture " + std::to_string(p + 1);
    if (!g) return Error{where + " fails: " + g.error().message};
    if (std::string why = graph_difference(**g, *points_[p]); !why.empty()) return Error{where + " " + why};
    return ok_status();
  }

  const std::vector<const Graph*>& points_;
  int given_;
  bool bounds_;
  std::vector<std::vector<Node*>> nodes_;                         // per point
  std::vector<std::unordered_map<const Node*, size_t>> index_;    // per point
  std::unique_ptr<Graph> tmpl_;
  std::vector<Node*> tnodes_;  // the template's own nodes, before size nodes
  SizeTemplate out_;
  std::map<size_t, Node*> class_nodes_;
  std::map<std::vector<int>, Node*> monomials_;
  std::map<SizeForm, Node*> forms_;
};

}  // namespace

bool SizeForm::operator<(const SizeForm& o) const { return std::tie(exps, c, k, q) < std::tie(o.exps, o.c, o.k, o.q); }

Expected<SizeInt> fit_size_int(const SizeTemplate& t, const std::vector<int64_t>& values, const std::string& what) {
  if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; })) return SizeInt{values[0], {}};
  if (values.size() != (t.class_values.empty() ? 0 : t.class_values[0].size()))
    return Error{what + ": another number of points"};
  auto f = fit_form(t.class_values, values, what);
  if (!f) return f.error();
  return SizeInt{0, *f};
}

int64_t eval_size_int(const SizeTemplate& t, const SizeInt& v, const std::vector<TensorMeta>& inputs) {
  if (!v.form) return v.constant;
  const SizeForm& f = *v.form;
  int64_t m = 1;
  for (size_t c = 0; c < f.exps.size(); ++c) {
    const SizeVar& var = t.classes[c][0];
    for (int e = 0; e < f.exps[c]; ++e) m *= inputs[static_cast<size_t>(var.placeholder)].sizes[static_cast<size_t>(var.dim)];
  }
  return floor_div(f.c * m + f.k, f.q);
}

namespace {

// A node's arguments and its metas' sizes and strides, for graph_difference's messages.
std::string args_text(const Node& n) {
  std::string s = "(";
  for (const Arg& a : n.args()) s += (s.size() > 1 ? ", " : "") + format_arg(a);
  for (const auto& [name, a] : n.kwargs()) s += (s.size() > 1 ? ", " : "") + name + "=" + format_arg(a);
  return s + ")";
}

std::string metas_text(const NodeMeta& m) {
  std::string s;
  for (const TensorMeta& t : m.fake)
    s += (s.empty() ? "" : "; ") + c10::str("sizes ", c10::IntArrayRef(t.sizes), " strides ", c10::IntArrayRef(t.strides));
  return s.empty() ? "no tensor" : s;
}

}  // namespace

std::string graph_difference(const Graph& got, const Graph& want) {
  std::vector<Node*> a_nodes = got.nodes(), b_nodes = want.nodes();
  if (a_nodes.size() != b_nodes.size()) return "has another number of nodes";
  std::unordered_map<const Node*, size_t> ia, ib;
  for (size_t i = 0; i < a_nodes.size(); ++i) {
    ia[a_nodes[i]] = i;
    ib[b_nodes[i]] = i;
  }
  for (size_t i = 0; i < a_nodes.size(); ++i) {
    const Node* a = a_nodes[i];
    const Node* b = b_nodes[i];
    const std::string at = b->name() + " (" + b->target() + ")";
    if (a->kind() != b->kind() || a->target() != b->target() || !same_args(a->args(), b->args(), ia, ib) ||
        a->kwargs().size() != b->kwargs().size())
      return "differs at " + at + ": " + args_text(*a) + " against " + args_text(*b);
    for (size_t k = 0; k < a->kwargs().size(); ++k)
      if (a->kwargs()[k].first != b->kwargs()[k].first ||
          !same_args({a->kwargs()[k].second}, {b->kwargs()[k].second}, ia, ib))
        return "differs at " + at + ": " + args_text(*a) + " against " + args_text(*b);
    const NodeMeta& ma = a->meta();
    const NodeMeta& mb = b->meta();
    bool same = ma.fake_is_sequence == mb.fake_is_sequence && ma.fake.size() == mb.fake.size();
    for (size_t k = 0; same && k < ma.fake.size(); ++k) {
      const TensorMeta& x = ma.fake[k];
      const TensorMeta& y = mb.fake[k];
      same = x.sizes == y.sizes && x.strides == y.strides && x.storage_offset == y.storage_offset &&
             x.dtype == y.dtype && x.device == y.device && x.defined == y.defined;
    }
    if (!same) return "infers other metas at " + at + ": " + metas_text(ma) + " against " + metas_text(mb);
  }
  return "";
}

Expected<SizeTemplate> generalize_sizes(const std::vector<const Graph*>& points, int given, bool bounds) {
  return Generalizer(points, given, bounds).run();
}

std::string template_mismatch(const SizeTemplate& t, const std::vector<TensorMeta>& inputs) {
  if (inputs.size() != t.fixed_sizes.size()) return "another number of inputs";
  std::vector<std::vector<bool>> varies(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].sizes.size() != t.fixed_sizes[i].size()) return "input " + std::to_string(i) + " has another rank";
    varies[i].assign(inputs[i].sizes.size(), false);
  }
  for (const auto& cls : t.classes) {
    const int64_t size = inputs[static_cast<size_t>(cls[0].placeholder)].sizes[static_cast<size_t>(cls[0].dim)];
    for (const SizeVar& v : cls) {
      varies[static_cast<size_t>(v.placeholder)][static_cast<size_t>(v.dim)] = true;
      if (inputs[static_cast<size_t>(v.placeholder)].sizes[static_cast<size_t>(v.dim)] != size)
        return "dims that were equal in every capture differ (input " + std::to_string(v.placeholder) + " dim " +
               std::to_string(v.dim) + ")";
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t d = 0; d < inputs[i].sizes.size(); ++d)
      if (!varies[i][d] && inputs[i].sizes[d] != t.fixed_sizes[i][d])
        return "input " + std::to_string(i) + " dim " + std::to_string(d) + " had one size in every capture";
  auto size_of = [&](int c) {
    const SizeVar& v = t.classes[static_cast<size_t>(c)][0];
    return inputs[static_cast<size_t>(v.placeholder)].sizes[static_cast<size_t>(v.dim)];
  };
  auto name = [&](int c) {
    const SizeVar& v = t.classes[static_cast<size_t>(c)][0];
    return "input " + std::to_string(v.placeholder) + " dim " + std::to_string(v.dim);
  };
  for (const auto& [smaller, larger] : t.orders)
    if (size_of(smaller) >= size_of(larger))
      return name(smaller) + " was smaller than " + name(larger) + " in every capture";
  for (const auto& [smaller, larger] : t.weak_orders)
    if (size_of(smaller) > size_of(larger))
      return name(smaller) + " was at most " + name(larger) + " in every capture";
  for (const SizeTemplate::Bound& b : t.bounds) {
    const int64_t n = size_of(b.cls);
    if (b.above ? (b.strict ? n <= b.size : n < b.size) : (b.strict ? n >= b.size : n > b.size))
      return name(b.cls) + " was " + (b.above ? "larger" : "smaller") + " than " + (b.strict ? "" : "or equal to ") +
             std::to_string(b.size) + " in every capture";
  }
  return "";
}

Expected<std::unique_ptr<Graph>> specialize_sizes(const SizeTemplate& t, const std::vector<TensorMeta>& inputs) {
  if (std::string why = template_mismatch(t, inputs); !why.empty()) return Error{why};
  std::unique_ptr<Graph> g = t.graph->clone();
  std::vector<Node*> phs = g->placeholders();
  if (phs.size() != inputs.size() + t.derived.size()) return Error{"another number of inputs"};
  for (size_t i = 0; i < inputs.size(); ++i) phs[i]->meta().set_tensor(inputs[i]);
  for (const DerivedInput& d : t.derived) {
    std::vector<int64_t> sizes;
    for (const SizeInt& v : d.sizes) sizes.push_back(eval_size_int(t, v, inputs));
    TensorMeta m = TensorMeta::contiguous(std::move(sizes), d.meta.dtype);
    m.device = d.meta.device;
    phs[static_cast<size_t>(d.placeholder)]->meta().set_tensor(m);
  }
  if (auto st = infer_meta_all(*g); !st) return st.error();
  if (auto st = fold_sym_nodes(*g); !st) return st.error();
  return g;
}

}  // namespace tj::graph::aot
