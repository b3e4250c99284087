// The backward graph's plan-time analyses (declared in backward_node.h):
// what the compiled backward saves and reads per tangent, which of its
// gradients are the incoming gradient passed on through views (with and
// without some tangents absent), and why a plan cannot recompute its
// forward; the strides of values saved through a formula's in-place step,
// and the layout graph a size template's one program is given; the output
// groups the node is split into, and the order their parts are made in.
// The node that runs the backward is backward_node.cpp.
#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "compile/aot/backward_node.h"
#include "compile/aot/partition.h"
#include "compile/aot/view_replay.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"

namespace tj::jit::aot_rt {

std::string why_not_recomputable(const Plan& plan, const graph::Graph& forward) {
  for (const auto& in : plan.inputs) {
    if (in.synthetic_base) return "it reads inputs that share memory";
    if (in.data_mutated || in.meta_mutated || in.version_bumps > 0) return "it writes an input in place";
  }
  if (!plan.mutated.empty() || !plan.meta_mutated.empty() || !plan.versioned.empty())
    return "it writes an input in place";
  for (const graph::Node* n : forward.nodes()) {
    if (n->kind() != graph::NodeKind::call_function || !n->op()) continue;
    if (n->op()->traits.random) return "it draws random numbers, which a recomputation would draw anew";
    if (n->op()->traits.backward || n->op()->traits.mutates) return "it runs a backward or writes a tensor inside";
  }
  return "";
}

// For `backward` (saved..., tangents -> gradients): per tangent, the saved
// values its backward reads, as eager's engine would run it: a node that
// depends on the tangent reads the saved values behind each of its inputs
// that depends on no tangent at all (an input carrying another tangent's
// gradient, summed into an input's gradient, is that tangent's work).
std::vector<std::vector<int>> saved_read_per_tangent(const graph::Graph& backward, int num_tangents) {
  std::vector<graph::Node*> phs = backward.placeholders();
  const size_t n = phs.size();
  const size_t first_tangent = n - static_cast<size_t>(num_tangents);
  std::unordered_map<const graph::Node*, std::vector<bool>> reach;  // per node: the placeholders it reads
  for (size_t i = 0; i < n; ++i) {
    reach[phs[i]].assign(n, false);
    reach[phs[i]][i] = true;
  }
  auto any_tangent = [&](const std::vector<bool>& r) {
    for (size_t t = first_tangent; t < n; ++t)
      if (r[t]) return true;
    return false;
  };
  std::vector<std::vector<bool>> reads(static_cast<size_t>(num_tangents), std::vector<bool>(first_tangent, false));
  for (const graph::Node* node : backward.nodes()) {
    if (node->kind() != graph::NodeKind::call_function) continue;
    std::vector<bool> r(n, false);
    std::vector<bool> plain(first_tangent, false);  // saved values behind the inputs that carry no tangent
    for (const graph::Node* in : node->inputs()) {
      auto it = reach.find(in);
      if (it == reach.end()) continue;
      for (size_t i = 0; i < n; ++i) r[i] = r[i] || it->second[i];
      if (!any_tangent(it->second))
        for (size_t k = 0; k < first_tangent; ++k) plain[k] = plain[k] || it->second[k];
    }
    for (size_t t = first_tangent; t < n; ++t)
      if (r[t])
        for (size_t k = 0; k < first_tangent; ++k)
          reads[t - first_tangent][k] = reads[t - first_tangent][k] || plain[k];
    reach[node] = std::move(r);
  }
  std::vector<std::vector<int>> result;
  for (const auto& m : reads) {
    std::vector<int> saved;
    for (size_t k = 0; k < m.size(); ++k)
      if (m[k]) saved.push_back(static_cast<int>(k));
    result.push_back(std::move(saved));
  }
  return result;
}

namespace {

// A chain of view ops whose result reads the same elements whatever the
// layout of its input: not `as_strided` or `_reshape_alias`, whose
// strides address the storage (run on an expanded gradient they read
// past it: fuzz seed 9954212).
bool layout_independent(const graph::Graph& chain) {
  static const std::set<std::string> ops = {
      "view",      "reshape", "unsqueeze", "squeeze",   "transpose", "t",      "permute",  "expand",
      "expand_as", "select",  "slice",     "narrow",    "alias",     "view_as", "movedim", "diagonal",
      "unbind",    "split",   "chunk",     "split_with_sizes", "unflatten", "flatten", "swapaxes", "swapdims",
      "mT",        "T",       "numpy_T",   "unsafe_split",     "unsafe_chunk"};
  for (const graph::Node* n : chain.nodes()) {
    if (n->kind() != graph::NodeKind::call_function) continue;
    if (!n->op()) return false;
    if (n->op()->is_getitem) continue;
    if (!ops.count(n->op()->base_name())) return false;
  }
  return true;
}

}  // namespace

std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>> gradients_passed_on(const graph::Graph& backward,
                                                                                      int num_tangents) {
  std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>> out;
  const std::vector<graph::Node*> phs = backward.placeholders();
  const size_t first_tangent = phs.size() - static_cast<size_t>(num_tangents);
  for (const graph::Node* g : graph::aot::flat_output_nodes(backward)) {
    out.emplace_back(-1, nullptr);
    if (!g) continue;
    for (size_t t = first_tangent; t < phs.size() && !out.back().second; ++t)
      if (auto chain = graph::aot::view_chain_from(phs[t], g); chain && layout_independent(*chain))
        out.back() = {static_cast<int>(t - first_tangent), std::shared_ptr<const graph::Graph>(std::move(chain))};
  }
  return out;
}

std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>> gradients_passed_on_without(
    const graph::Graph& backward, int num_tangents, const std::vector<bool>& absent) {
  std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>> out;
  const std::vector<graph::Node*> phs = backward.placeholders();
  if (static_cast<size_t>(num_tangents) > phs.size() || absent.size() != static_cast<size_t>(num_tangents)) return out;
  const size_t first_tangent = phs.size() - static_cast<size_t>(num_tangents);
  // derived: reads a tangent; gone: reads tangents only through absent ones
  std::set<const graph::Node*> derived, gone;
  for (size_t t = first_tangent; t < phs.size(); ++t) {
    derived.insert(phs[t]);
    if (absent[t - first_tangent]) gone.insert(phs[t]);
  }
  for (const graph::Node* n : backward.nodes()) {
    if (n->kind() != graph::NodeKind::call_function) continue;
    bool reads_derived = false, reads_present = false;
    for (const graph::Node* in : n->inputs())
      if (derived.count(in)) {
        reads_derived = true;
        reads_present |= !gone.count(in);
      }
    if (!reads_derived) continue;
    derived.insert(n);
    if (!reads_present) gone.insert(n);
  }
  auto same_tensor_meta = [](const graph::Node* a, const graph::Node* b) {
    const graph::TensorMeta* x = a->meta().tensor();
    const graph::TensorMeta* y = b->meta().tensor();
    return x && y && x->sizes == y->sizes && x->dtype == y->dtype;
  };
  for (const graph::Node* g : graph::aot::flat_output_nodes(backward)) {
    out.emplace_back(-1, nullptr);
    const graph::Node* n = g;
    // down through sums with an absent operand (alpha 1: no kwargs)
    while (n && n->kind() == graph::NodeKind::call_function && n->op() && !n->op()->is_builtin() &&
           n->op()->qualified_name() == "aten::add.Tensor" && n->args().size() == 2 && n->kwargs().empty() &&
           n->args()[0].is_node() && n->args()[1].is_node()) {
      const graph::Node* a = n->args()[0].node();
      const graph::Node* b = n->args()[1].node();
      const graph::Node* kept = gone.count(b) && !gone.count(a) ? a : gone.count(a) && !gone.count(b) ? b : nullptr;
      if (!kept || !same_tensor_meta(kept, n)) break;
      n = kept;
    }
    if (!n || n == g) continue;
    for (size_t t = first_tangent; t < phs.size() && !out.back().second; ++t)
      if (!absent[t - first_tangent])
        if (auto chain = graph::aot::view_chain_from(phs[t], n); chain && layout_independent(*chain))
          out.back() = {static_cast<int>(t - first_tangent), std::shared_ptr<const graph::Graph>(std::move(chain))};
  }
  return out;
}

void keep_layout_of_first_argument(graph::Node& n) {
  graph::TensorMeta* m = n.meta().fake_is_sequence || n.meta().fake.size() != 1 ? nullptr : &n.meta().fake[0];
  if (!m || n.args().empty() || !n.args()[0].is_node()) return;
  const graph::TensorMeta* self = n.args()[0].node()->meta().tensor();
  if (!self || self->sizes != m->sizes || self->strides.size() != m->sizes.size()) return;
  m->strides = self->strides;
}


void take_layout_graph(Plan& plan, const std::shared_ptr<const graph::Graph>& forward,
                       const std::shared_ptr<const graph::Graph>& backward) {
  if (!forward || !backward) return;
  plan.layout_graph = backward;
  plan.grad_layout_cache = std::make_shared<Plan::GradLayoutCache>();
  plan.saved_step_strides = saved_inplace_step_strides(*forward, plan.num_fw_outputs);
}

std::vector<std::vector<int64_t>> saved_inplace_step_strides(const graph::Graph& forward, int num_fw_outputs) {
  std::vector<std::vector<int64_t>> out;
  const std::vector<const graph::Node*> outs = graph::aot::flat_output_nodes(forward);
  if (num_fw_outputs < 0 || static_cast<size_t>(num_fw_outputs) > outs.size()) return out;
  out.resize(outs.size() - static_cast<size_t>(num_fw_outputs));
  bool any_step = false;
  for (const graph::Node* n : forward.nodes()) any_step |= n->meta().tags.inplace_step;
  if (!any_step) return out;
  try {
    // the forward's metas again, each in-place step keeping its argument's layout
    std::unique_ptr<graph::Graph> g = forward.clone();
    for (graph::Node* n : g->nodes()) {
      if (n->kind() == graph::NodeKind::placeholder) continue;
      if (!graph::infer_meta(*g, *n).ok()) return out;
      if (n->meta().tags.inplace_step) keep_layout_of_first_argument(*n);
    }
    const std::vector<const graph::Node*> eager_outs = graph::aot::flat_output_nodes(*g);
    for (size_t k = 0; k < out.size() && num_fw_outputs + k < eager_outs.size(); ++k) {
      const graph::Node* a = outs[num_fw_outputs + k];
      const graph::Node* b = eager_outs[num_fw_outputs + k];
      const graph::TensorMeta* ma = a ? a->meta().tensor() : nullptr;
      const graph::TensorMeta* mb = b ? b->meta().tensor() : nullptr;
      if (!ma || !mb || ma->sizes != mb->sizes || ma->strides.size() != mb->strides.size() ||
          mb->strides.size() != mb->sizes.size() || ma->strides == mb->strides)
        continue;
      bool only_size1 = true;
      for (size_t d = 0; d < mb->sizes.size(); ++d)
        only_size1 &= mb->sizes[d] == 1 || ma->strides[d] == mb->strides[d];
      if (only_size1) out[k] = mb->strides;
    }
  } catch (const std::exception&) {
    return std::vector<std::vector<int64_t>>(out.size());  // meta inference cannot run: layouts as they come
  }
  return out;
}

// The groups of differentiable outputs (tangents) joined by the gradient
// edges that read them, per group its outputs and its edges; one group
// where an edge's gradient reads no tangent.
OutputGroups output_groups(const Plan& plan) {
  const size_t n = plan.differentiable.size();
  std::vector<size_t> root(n);
  for (size_t i = 0; i < n; ++i) root[i] = i;
  auto find = [&](size_t i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  for (size_t e = 0; e < plan.grad_inputs.size(); ++e) {
    if (!plan.grad_defined[e]) continue;
    const auto& reads = plan.grad_tangents.at(e);
    if (reads.empty()) return {};
    for (int t : reads) root[find(static_cast<size_t>(t))] = find(static_cast<size_t>(reads[0]));
  }
  OutputGroups groups;
  std::vector<int> group_of(n, -1);
  for (size_t i = 0; i < n; ++i) {
    int& g = group_of[find(i)];
    if (g < 0) {
      g = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    groups[static_cast<size_t>(g)].first.push_back(i);
  }
  for (size_t e = 0; e < plan.grad_inputs.size(); ++e)
    if (plan.grad_defined[e])
      groups[static_cast<size_t>(group_of[find(static_cast<size_t>(plan.grad_tangents[e][0]))])].second.push_back(e);
  return groups;
}

// The nodes made for `groups`, in the order they are made. The engine runs
// the ready node with the highest sequence number first, so the part made
// last delivers first, and a leaf's contributions from several parts are
// added in the order the parts run. Each leaf's contributions (its edges,
// in eager's arrival order: Capture::grad_order) say which part must
// deliver before which; parts whose orders conflict (two leaves whose
// eager orders cross: fuzz by hand, `stack` of x0 and x1 in one output,
// `relu` of each in the other, x0's stack node later than its relu, x1's
// earlier) are merged into one, whose edges hand a leaf its contributions
// in eager's order, as one node's edges in the engine. Otherwise, the part
// handing on the latest op's contribution (Plan::grad_order) runs first,
// as eager's node of that op does (fuzz by hand: `relu(x0) * 3` and
// `stack([x0, x0]).transpose(0, -1)[0] * 0.5` returned, a (3, 1) leaf laid
// out as (1, 3): eager adds relu's contribution first).
OutputGroups in_arrival_order(const Plan& plan, const OutputGroups& groups) {
  const size_t n = groups.size();
  std::vector<size_t> group_of(plan.grad_inputs.size(), n);
  for (size_t g = 0; g < n; ++g)
    for (size_t e : groups[g].second) group_of.at(e) = g;
  // first[a][b]: a part of group a delivers a leaf's contribution before
  // one of group b does (transitively closed below).
  std::vector<std::vector<bool>> first(n, std::vector<bool>(n, false));
  for (size_t e = 0; e < plan.grad_inputs.size(); ++e)
    for (size_t l = e + 1; l < plan.grad_inputs.size(); ++l)
      if (plan.grad_inputs[e] == plan.grad_inputs[l] && group_of[e] < n && group_of[l] < n &&
          group_of[e] != group_of[l])
        first[group_of[e]][group_of[l]] = true;
  for (size_t k = 0; k < n; ++k)
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b)
        if (first[a][k] && first[k][b]) first[a][b] = true;
  // Groups each before the other are one part.
  std::vector<size_t> part_of(n, n);
  OutputGroups parts;
  std::vector<int> latest;
  for (size_t g = 0; g < n; ++g) {
    if (part_of[g] < n) continue;
    part_of[g] = parts.size();
    parts.emplace_back();
    latest.push_back(0);
    for (size_t h = g; h < n; ++h) {
      if (h != g && !(first[g][h] && first[h][g])) continue;
      part_of[h] = part_of[g];
      auto& [outputs, edges] = parts.back();
      outputs.insert(outputs.end(), groups[h].first.begin(), groups[h].first.end());
      edges.insert(edges.end(), groups[h].second.begin(), groups[h].second.end());
      for (size_t e : groups[h].second)
        if (e < plan.grad_order.size()) latest.back() = std::max(latest.back(), plan.grad_order[e]);
    }
    std::sort(parts.back().first.begin(), parts.back().first.end());
    std::sort(parts.back().second.begin(), parts.back().second.end());
  }
  // The delivery order: of the parts no unplaced part must precede, the one
  // with the latest op (the later made of equals) first; made in reverse.
  std::vector<bool> placed(parts.size(), false);
  std::vector<size_t> delivery;
  while (delivery.size() < parts.size()) {
    size_t pick = parts.size();
    for (size_t p = 0; p < parts.size(); ++p) {
      if (placed[p]) continue;
      bool ready = true;
      for (size_t a = 0; a < n && ready; ++a)
        for (size_t b = 0; b < n && ready; ++b)
          ready = !(first[a][b] && part_of[b] == p && part_of[a] != p && !placed[part_of[a]]);
      if (ready && (pick == parts.size() || latest[p] >= latest[pick])) pick = p;
    }
    if (pick == parts.size()) return {};  // cannot happen: merged conflicts leave no cycle
    placed[pick] = true;
    delivery.push_back(pick);
  }
  OutputGroups made;
  for (auto it = delivery.rbegin(); it != delivery.rend(); ++it) made.push_back(std::move(parts[*it]));
  return made;
}

int cut_edge_slot(const Plan& plan, int grad_input) {
  return graph::aot::own_tangent_slot(plan.outputs.at(graph::aot::Capture::cut_output(grad_input)),
                                      plan.mutated.size(), plan.num_fresh);
}

bool cuts_kept_apart(const Plan& plan) {
  bool any = false;
  for (size_t e = 0; e < plan.grad_inputs.size(); ++e)
    any |= plan.grad_defined[e] && graph::aot::Capture::is_cut_edge(plan.grad_inputs[e]);
  if (!any) return true;
  const OutputGroups parts = plan.differentiable.size() > 1 ? in_arrival_order(plan, output_groups(plan)) : OutputGroups{};
  if (parts.size() < 2) return false;
  std::vector<size_t> part_of_tangent(plan.differentiable.size(), parts.size());
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t j : parts[p].first) part_of_tangent.at(j) = p;
  // after[p][q]: part p hands part q a cut output's gradient (q runs after p)
  std::vector<std::vector<bool>> after(parts.size(), std::vector<bool>(parts.size(), false));
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t e : parts[p].second) {
      const int u = plan.grad_inputs[e];
      if (!graph::aot::Capture::is_cut_edge(u)) continue;
      const int slot = cut_edge_slot(plan, u);
      const auto it = std::find(plan.differentiable.begin(), plan.differentiable.end(), slot);
      if (slot < 0 || it == plan.differentiable.end()) return false;
      const size_t q = part_of_tangent[static_cast<size_t>(it - plan.differentiable.begin())];
      if (q == p || q >= parts.size()) return false;
      after[p][q] = true;
    }
  for (size_t k = 0; k < parts.size(); ++k)
    for (size_t a = 0; a < parts.size(); ++a)
      for (size_t b = 0; b < parts.size(); ++b)
        if (after[a][k] && after[k][b]) after[a][b] = true;
  for (size_t p = 0; p < parts.size(); ++p)
    if (after[p][p]) return false;
  return true;
}

}  // namespace tj::jit::aot_rt
