// Freezing an inference graph; see freeze.h. Three parts: choosing the
// frozen inputs (a greedy pass: every float input starts frozen; while a
// constant value meets an activation outside a weight's place, the input
// behind it that looks most like an activation is dropped), folding batch
// norms into the convolutions before them, and the split into the graph of
// constants and the main graph that reads them as inputs.
#include "graph/passes/freeze.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <ATen/core/function_schema.h>

#include "graph/lint.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/passes/dce.h"
#include "graph/sym_ints.h"
#include "support/log.h"

namespace tj::graph {

namespace {

using NodeSet = std::unordered_set<const Node*>;

const OpInfo& op(const char* name) {
  auto found = OpRegistry::instance().get(name);
  assert(found.ok() && "freeze: an ATen op LibTorch always has");
  return **found;
}

std::string name_of(const Node& n) {
  return n.kind() == NodeKind::call_function && n.op() ? n.op()->qualified_name() : std::string();
}

const TensorMeta* float_meta(const Node* n) {
  const TensorMeta* m = n ? n->meta().tensor() : nullptr;
  return m && m->defined && (m->dtype == c10::ScalarType::Float || m->dtype == c10::ScalarType::Double) ? m : nullptr;
}

int64_t numel(const TensorMeta& m) {
  int64_t n = 1;
  for (int64_t s : m.sizes) n *= s;
  return n;
}

bool is_view(const Node& n) {
  return n.kind() == NodeKind::call_function && n.op() && (n.op()->is_getitem || n.op()->traits.view);
}

// An op a constant may be computed with: deterministic, no writes, one tensor result.
bool computable(const Node& n) {
  if (n.kind() != NodeKind::call_function || !n.op() || n.op()->is_getitem || n.op()->is_autograd_function ||
      n.op()->traits.side_effecting() || is_sym(n) || n.op()->schema().returns().size() != 1)
    return false;
  const TensorMeta* m = n.meta().tensor();
  return m && m->defined;
}

// Values the graph returns, or that a returned view aliases: they stay in
// the main graph (a constant handed to the caller could be written by it).
NodeSet returned(const Graph& g) {
  NodeSet seen;
  const Node* out = g.output_node();
  if (!out) return seen;
  std::vector<Node*> work = out->inputs();
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!seen.insert(n).second || !is_view(*n)) continue;
    for (Node* in : n->inputs()) work.push_back(in);
  }
  return seen;
}

// The nodes computed from the frozen placeholders alone (the placeholders included).
NodeSet constant_nodes(const Graph& g, const std::vector<bool>& frozen) {
  NodeSet out;
  const NodeSet kept = returned(g);
  const std::vector<Node*> phs = g.placeholders();
  for (size_t i = 0; i < phs.size(); ++i)
    if (frozen[i]) out.insert(phs[i]);
  for (const Node* n : g.nodes()) {
    if (!computable(*n) || kept.count(n)) continue;
    bool any = false, all = true;
    for (const Node* in : n->inputs()) {
      const bool c = out.count(in) > 0;
      any |= c;
      all &= c;
    }
    if (any && all) out.insert(n);
  }
  return out;
}

// Whether argument `index` of `user` is a weight's place: a convolution's or
// a Linear's weight and bias, a normalization's parameters and statistics,
// an embedding's table, or a pointwise operand broadcast against a larger result.
bool weight_place(const Node& user, size_t index, const Node& value) {
  const std::string name = name_of(user);
  if (name == "aten::convolution" || name == "aten::linear") return index == 1 || index == 2;
  if (name == "aten::addmm") return index == 0 || index == 2;
  if (name == "aten::mm") return index == 1;
  if (name == "aten::embedding") return index == 0;
  if (name == "aten::native_batch_norm" || name == "aten::_native_batch_norm_legit_no_training" ||
      name == "aten::batch_norm" || name == "aten::native_layer_norm" || name == "aten::layer_norm" ||
      name == "aten::native_group_norm" || name == "aten::group_norm")
    return index >= 1;
  if (user.op() && user.op()->traits.pointwise) {
    const TensorMeta *v = value.meta().tensor(), *r = user.meta().tensor();
    return v && r && numel(*v) < numel(*r);
  }
  return false;
}

// Where `n` is read by `user` (argument positions; a keyword argument counts as past the last).
std::vector<size_t> positions(const Node& user, const Node* n) {
  std::vector<size_t> out;
  for (size_t i = 0; i < user.args().size(); ++i) {
    bool found = false;
    user.args()[i].for_each_node([&](const Node* m) { found |= m == n; });
    if (found) out.push_back(i);
  }
  for (const auto& [key, value] : user.kwargs()) {
    bool found = false;
    value.for_each_node([&](const Node* m) { found |= m == n; });
    if (found) out.push_back(user.args().size() + 100);
  }
  return out;
}

// The frozen placeholders behind `n` (through constant nodes).
std::vector<size_t> frozen_behind(const Node* n, const NodeSet& consts, const std::vector<Node*>& phs) {
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < phs.size(); ++i) index[phs[i]] = i;
  std::vector<size_t> out;
  NodeSet seen;
  std::vector<const Node*> work = {n};
  while (!work.empty()) {
    const Node* m = work.back();
    work.pop_back();
    if (!seen.insert(m).second || !consts.count(m)) continue;
    if (auto it = index.find(m); it != index.end()) out.push_back(it->second);
    for (const Node* in : m->inputs()) work.push_back(in);
  }
  return out;
}

// A placeholder some weight's place reads (directly or through views): it stays frozen longest.
bool read_as_weight(const Node* p) {
  std::vector<const Node*> work = {p};
  NodeSet seen;
  while (!work.empty()) {
    const Node* m = work.back();
    work.pop_back();
    if (!seen.insert(m).second) continue;
    for (const Node* u : m->users()) {
      if (is_view(*u)) {
        work.push_back(u);
        continue;
      }
      for (size_t i : positions(*u, m))
        if (weight_place(*u, i, *m) && !(u->op() && u->op()->traits.pointwise)) return true;
    }
  }
  return false;
}

std::vector<bool> choose_frozen(const Graph& g) {
  const std::vector<Node*> phs = g.placeholders();
  std::vector<bool> frozen(phs.size()), sure(phs.size()), weight(phs.size());
  for (size_t i = 0; i < phs.size(); ++i) {
    const TensorMeta* m = float_meta(phs[i]);
    frozen[i] = m != nullptr;
    sure[i] = m && phs[i]->meta().tags.grad_unused;
    weight[i] = m && read_as_weight(phs[i]);
  }
  // module state is known for sure only where AOT tagged a parameter: without one, nothing is frozen
  if (std::find(sure.begin(), sure.end(), true) == sure.end()) return std::vector<bool>(phs.size());
  for (;;) {
    const NodeSet consts = constant_nodes(g, frozen);
    const Node* violating = nullptr;
    for (const Node* c : g.nodes()) {  // in order: the same choice every time
      if (!consts.count(c)) continue;
      for (const Node* u : c->users()) {
        if (consts.count(u) || u->kind() == NodeKind::output) continue;
        for (size_t i : positions(*u, c))
          if (!weight_place(*u, i, *c)) violating = c;
      }
      if (violating) break;
    }
    if (!violating) return frozen;
    // drop the input behind it most like an activation: not read as a weight, then the largest
    int drop = -1;
    for (size_t i : frozen_behind(violating, consts, phs)) {
      if (sure[i]) continue;
      auto key = [&](size_t k) { return std::pair<bool, int64_t>(!weight[k], numel(*phs[k]->meta().tensor())); };
      if (drop < 0 || key(i) > key(static_cast<size_t>(drop))) drop = static_cast<int>(i);
    }
    if (drop < 0) {  // only parameters behind it: the value stays in the main graph
      for (size_t i : frozen_behind(violating, consts, phs)) frozen[i] = false;
      continue;
    }
    frozen[static_cast<size_t>(drop)] = false;
  }
}

// A [C, 1, ..., 1] (or [1, C, 1, ...]) tensor of the per-channel values of a rank-`rank` result.
bool per_channel(const TensorMeta& m, size_t rank, int64_t channels) {
  if (m.sizes.size() != rank - 1 && m.sizes.size() != rank) return false;
  const size_t c = m.sizes.size() == rank ? 1 : 0;
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (m.sizes[d] != (d == c ? channels : 1)) return false;
  return true;
}

Node* emit(Graph& g, const char* target, std::vector<Arg> args, bool* ok) {
  if (!*ok) return nullptr;
  Node* n = g.call(op(target), std::move(args));
  if (auto st = infer_meta(g, *n); !st) *ok = false;
  return n;
}

// addcmul(shift, conv(x, w, b), scale) -> conv(x, w * scale, b * scale + shift), scale and shift constants.
int fold_batch_norms(Graph& g, const NodeSet& consts) {
  int folded = 0;
  for (Node* n : g.nodes()) {
    if (name_of(*n) != "aten::addcmul" || n->args().size() != 3 || !n->kwargs().empty()) continue;
    const auto& a = n->args();
    if (!a[0].is_node() || !a[1].is_node() || !a[2].is_node()) continue;
    Node *shift = a[0].node(), *conv = a[1].node(), *scale = a[2].node();
    if (name_of(*conv) != "aten::convolution" || conv->users().size() != 1 || !consts.count(shift) ||
        !consts.count(scale) || conv->args().size() != 9)
      continue;
    const auto& c = conv->args();
    if (!c[1].is_node() || !consts.count(c[1].node()) || !(c[2].is_none() || (c[2].is_node() && consts.count(c[2].node()))) ||
        !c[6].is<bool>() || c[6].as<bool>())
      continue;
    const TensorMeta *out = float_meta(conv), *w = float_meta(c[1].node()), *sm = float_meta(scale),
                     *hm = float_meta(shift), *res = float_meta(n);
    if (!out || !w || !sm || !hm || !res || sm->dtype != out->dtype || hm->dtype != out->dtype ||
        w->dtype != out->dtype || out->sizes.size() < 3)
      continue;
    const size_t rank = out->sizes.size();
    const int64_t channels = out->sizes[1];
    if (!per_channel(*sm, rank, channels) || !per_channel(*hm, rank, channels) || w->sizes.size() != rank ||
        w->sizes[0] != channels)
      continue;
    std::vector<Arg> column = {Arg(channels)};
    for (size_t d = 1; d < rank; ++d) column.emplace_back(int64_t{1});
    bool ok = true;
    g.set_insert_point(n);
    Node* s = emit(g, "aten::reshape", {scale, Arg::ints({channels})}, &ok);
    Node* h = emit(g, "aten::reshape", {shift, Arg::ints({channels})}, &ok);
    Node* s_col = emit(g, "aten::reshape", {s, Arg::list(column)}, &ok);
    Node* weight = emit(g, "aten::mul.Tensor", {c[1].node(), s_col}, &ok);
    Node* bias = c[2].is_node() ? emit(g, "aten::addcmul", {h, c[2].node(), s}, &ok) : h;
    std::vector<Arg> args = c;
    args[1] = weight;
    args[2] = bias;
    Node* replacement = emit(g, "aten::convolution", args, &ok);
    g.set_insert_point(nullptr);
    const TensorMeta* rm = ok ? replacement->meta().tensor() : nullptr;
    if (!rm || rm->sizes != res->sizes || rm->strides != res->strides) {
      // another layout than the batch norm's result: left as it is (the new nodes go with DCE)
      for (Node* fresh : {replacement, bias == h ? nullptr : bias, weight, s_col, h, s})
        if (fresh && fresh->users().empty()) g.erase(fresh);
      continue;
    }
    replacement->meta().loc = n->meta().loc;
    n->replace_all_uses_with(replacement);
    g.erase(n);
    g.erase(conv);
    ++folded;
  }
  return folded;
}

// Whether computing `n` does any work (not only views of inputs).
bool computes(const Node* n, const NodeSet& consts) {
  std::vector<const Node*> work = {n};
  NodeSet seen;
  while (!work.empty()) {
    const Node* m = work.back();
    work.pop_back();
    if (!seen.insert(m).second || !consts.count(m) || m->kind() != NodeKind::call_function) continue;
    if (!is_view(*m)) return true;
    for (const Node* in : m->inputs()) work.push_back(in);
  }
  return false;
}

// Erases every node the output does not need, side-effecting ones too: the
// constants' graph is a clone of the main graph, and DCE would keep its
// random ops and writes, which must run once, in the main graph (a kept
// multinomial or rand drew from the generator when the constants were
// computed, so the main graph's draws were other than eager's).
void keep_only_needed(Graph& g) {
  NodeSet needed;
  std::vector<const Node*> work = {g.output_node()};
  while (!work.empty()) {
    const Node* m = work.back();
    work.pop_back();
    if (!m || !needed.insert(m).second) continue;
    for (const Node* in : m->inputs()) work.push_back(in);
  }
  std::vector<Node*> nodes = g.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)  // users before what they read
    if ((*it)->kind() != NodeKind::placeholder && !needed.count(*it)) g.erase(*it);
}

}  // namespace

bool is_inference_graph(const Graph& graph) {
  for (const Node* p : graph.placeholders()) {
    const TensorMeta* m = p->meta().tensor();
    if (!m || !m->requires_grad) continue;
    if (!p->meta().tags.grad_unused) return false;
  }
  return true;
}

std::optional<Frozen> freeze(const Graph& graph) {
  std::vector<bool> frozen = choose_frozen(graph);
  if (std::find(frozen.begin(), frozen.end(), true) == frozen.end()) return std::nullopt;
  std::shared_ptr<Graph> main = graph.clone();
  Frozen out;
  out.batch_norms_folded = fold_batch_norms(*main, constant_nodes(*main, frozen));
  if (out.batch_norms_folded) eliminate_dead_code(*main);
  const NodeSet consts = constant_nodes(*main, frozen);
  // the constants the main graph reads: computed ones only (an input, or a view of one, it reads itself)
  std::vector<Node*> read;
  for (Node* n : main->nodes()) {
    if (!consts.count(n) || n->kind() != NodeKind::call_function || !computes(n, consts)) continue;
    bool outside = false;
    for (const Node* u : n->users()) outside |= !consts.count(u);
    if (outside) read.push_back(n);
  }
  if (read.empty()) return std::nullopt;
  // the constants' graph: the main graph's nodes, returning the constants
  std::shared_ptr<Graph> constants = main->clone();
  {
    std::vector<Arg> results;
    for (const Node* n : read) results.emplace_back(constants->find(n->name()));
    if (Node* old_out = constants->output_node()) constants->erase(old_out);
    constants->output(Arg::tuple(std::move(results)));
    keep_only_needed(*constants);
  }
  const std::vector<Node*> phs = main->placeholders();
  const NodeSet behind = [&] {
    NodeSet s;
    for (const Node* n : read)
      for (size_t i : frozen_behind(n, consts, phs)) s.insert(phs[i]);
    return s;
  }();
  for (size_t i = 0; i < phs.size(); ++i)
    if (behind.count(phs[i])) out.frozen_inputs.push_back(static_cast<int>(i));
  // the main graph reads each constant as a new input, placed after the others
  for (Node* n : read) {
    Node* first_non_placeholder = nullptr;
    for (Node* m : main->nodes())
      if (m->kind() != NodeKind::placeholder) {
        first_non_placeholder = m;
        break;
      }
    main->set_insert_point(first_non_placeholder);
    TensorMeta m = *n->meta().tensor();
    m.requires_grad = false;  // computed under no_grad
    Node* ph = main->placeholder("frozen_" + n->name(), m);
    main->set_insert_point(nullptr);
    ph->meta().tags.frozen_constant = true;
    n->replace_all_uses_with(ph);
  }
  eliminate_dead_code(*main);
  lint_in_debug(*main, "freeze (main graph)");
  lint_in_debug(*constants, "freeze (constants)");
  TJ_LOG(output_code, "freeze: {} constant(s) computed once from {} input(s), {} batch norm(s) folded", read.size(),
         out.frozen_inputs.size(), out.batch_norms_folded);
  out.main = std::move(main);
  out.constants = std::move(constants);
  return out;
}

}  // namespace tj::graph
