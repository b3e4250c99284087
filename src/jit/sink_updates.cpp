// See sink_updates.h.
#include "jit/sink_updates.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <c10/core/ScalarType.h>

#include "graph/effects.h"
#include "graph/op_registry.h"
#include "jit/fusion_group.h"

namespace tj::jit {

using graph::Arg;
using graph::Node;

namespace {

bool pure_pointwise(const Node* n) {
  return n->kind() == graph::NodeKind::call_function && n->op() && !n->op()->traits.side_effecting() &&
         n->op()->traits.pointwise && pointwise_emitter(n) != nullptr;
}

int64_t bytes_of(const Node* n) {
  const graph::TensorMeta* m = n->meta().tensor();
  if (!m) return 0;
  int64_t elements = 1;
  for (int64_t s : m->sizes) elements *= s;
  return elements * static_cast<int64_t>(c10::elementSize(m->dtype));
}

// What a recomputed chain reads without keeping it alive longer than the
// graph does: inputs, results, scalars and non-tensors.
bool free_to_read(const Node* n, const std::unordered_set<const Node*>& results) {
  const graph::TensorMeta* m = n->meta().tensor();
  return n->kind() == graph::NodeKind::placeholder || n->kind() == graph::NodeKind::get_attr || results.count(n) ||
         !m || m->sizes.empty();
}

// A value to compute again after the check: its chain of pure pointwise
// nodes (graph order) and what else the chain reads (kept alive to the end).
struct Sunk {
  size_t result = 0;
  std::vector<const Node*> chain;
  std::vector<const Node*> held;
};

// `value`'s chain: the pure pointwise nodes only the chain reads, up to the
// free reads; what else it reads is held (a node read elsewhere too is made
// there anyway: read, not computed again).
Sunk chain_of(const Node* value, const std::unordered_set<const Node*>& others,
              const std::unordered_map<const Node*, size_t>& position) {
  Sunk s;
  s.chain = {value};
  std::unordered_set<const Node*> seen = {value};
  std::unordered_set<const Node*> in_chain = {value};
  for (size_t i = 0; i < s.chain.size(); ++i)
    for (const Node* in : s.chain[i]->inputs()) {
      if (!seen.insert(in).second || free_to_read(in, others)) continue;
      bool only_chain_reads = pure_pointwise(in);
      for (const Node* u : in->users()) only_chain_reads &= in_chain.count(u) > 0;
      if (only_chain_reads) in_chain.insert(in);
      (only_chain_reads ? s.chain : s.held).push_back(in);
    }
  std::sort(s.chain.begin(), s.chain.end(),
            [&](const Node* a, const Node* b) { return position.at(a) < position.at(b); });
  return s;
}

// The values worth computing again: each qualifies (sink_updates.h), and
// the bytes they free before the check exceed those of what their chains
// keep alive to the end (an optimizer's moments read a gradient that
// autograd's accumulation into `.grad` read too).
std::vector<Sunk> values_to_sink(const graph::Graph& graph) {
  const Node* out = graph.output_node();
  if (!out || out->args().empty() || !out->args()[0].is_list()) return {};
  const std::vector<Node*> nodes = graph.nodes();
  std::unordered_map<const Node*, size_t> position;
  size_t last_raise = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    position[nodes[i]] = i;
    if (nodes[i]->kind() == graph::NodeKind::call_function && graph::may_raise_on_data(*nodes[i])) last_raise = i;
  }
  const std::vector<Arg>& results = out->args()[0].items();
  std::unordered_set<const Node*> result_nodes;
  for (const Arg& r : results) r.for_each_node([&](Node* n) { result_nodes.insert(n); });
  std::vector<Sunk> sunk;
  std::unordered_set<const Node*> held;
  int64_t freed = 0, kept = 0;
  for (const Node* p : graph.placeholders()) {
    if (!p->meta().tags.donated_to_output || p->users().empty()) continue;
    const auto i = static_cast<size_t>(*p->meta().tags.donated_to_output);
    if (i >= results.size() || !results[i].is_node()) continue;
    const Node* value = results[i].node();
    bool fused_readers = pure_pointwise(value) && position.at(value) < last_raise;
    for (const Node* u : value->users()) fused_readers &= u->kind() == graph::NodeKind::output || pure_pointwise(u);
    if (!fused_readers) continue;
    std::unordered_set<const Node*> others = result_nodes;
    others.erase(value);
    Sunk s = chain_of(value, others, position);
    s.result = i;
    freed += bytes_of(value);
    for (const Node* h : s.held)
      if (held.insert(h).second) kept += bytes_of(h);
    sunk.push_back(std::move(s));
  }
  if (kept >= freed) return {};
  return sunk;
}

}  // namespace

std::shared_ptr<const graph::Graph> sink_written_back_updates(const graph::Graph& graph) {
  const std::vector<Sunk> sunk = values_to_sink(graph);
  if (sunk.empty()) return nullptr;
  std::shared_ptr<graph::Graph> copy(graph.clone());
  Node* out = copy->output_node();
  std::vector<Arg> results = out->args()[0].items();
  std::vector<Node*> moved;  // the copy's nodes computed again
  copy->set_insert_point(out);
  for (const Sunk& s : sunk) {
    std::unordered_map<Node*, Node*> again;
    auto map = [&](Node* in) {
      auto c = again.find(in);
      return c == again.end() ? in : c->second;
    };
    for (const Node* original : s.chain) {
      Node* n = copy->find(original->name());
      std::vector<Arg> args;
      for (const Arg& a : n->args()) args.push_back(a.map_nodes(map));
      std::vector<graph::Kwarg> kwargs;
      for (const auto& [name, a] : n->kwargs()) kwargs.emplace_back(name, a.map_nodes(map));
      Node* c = copy->call(*n->op(), std::move(args), std::move(kwargs), n->name());
      c->meta() = n->meta();
      again[n] = c;
      moved.push_back(n);
    }
    results[s.result] = Arg(again.at(copy->find(s.chain.back()->name())));
  }
  copy->set_insert_point(nullptr);
  out->set_args({Arg(graph::ArgList{std::move(results), out->args()[0].as<graph::ArgList>().is_tuple})});
  // the originals nothing reads now, last first
  std::vector<Node*> order = copy->nodes();
  std::unordered_set<Node*> is_moved(moved.begin(), moved.end());
  for (auto n = order.rbegin(); n != order.rend(); ++n)
    if (is_moved.count(*n) && (*n)->users().empty()) copy->erase(*n);
  return copy;
}

}  // namespace tj::jit
