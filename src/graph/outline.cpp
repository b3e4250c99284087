// Outlining a graph suffix; see outline.h.
#include "graph/outline.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace tj::graph {

Expected<OutlinedRegion> outline_region(Graph& graph, size_t start, const std::vector<Node*>& stand_ins,
                                        const std::vector<Node*>& results) {
  std::vector<Node*> all = graph.nodes();
  std::vector<Node*> region;
  for (size_t i = start; i < all.size(); ++i)
    if (all[i]->kind() != NodeKind::placeholder) region.push_back(all[i]);
  std::unordered_set<const Node*> in_region(region.begin(), region.end());
  for (const Node* s : stand_ins)
    if (!in_region.count(s)) return Error{"outline: a stand-in is not in the region"};
  std::unordered_set<const Node*> stand_in_set(stand_ins.begin(), stand_ins.end());

  // Externals, in first-use order (region nodes, then the results).
  OutlinedRegion out;
  std::unordered_set<const Node*> seen;
  auto note = [&](Node* n) {
    if (in_region.count(n) || !seen.insert(n).second) return;
    out.externals.push_back(n);
  };
  for (Node* n : region) {
    if (n->kind() == NodeKind::get_attr) return Error{"outline: the region reads attribute " + n->target()};
    if (n->kind() == NodeKind::output) return Error{"outline: the region holds the output node"};
    if (stand_in_set.count(n)) continue;
    for (const Arg& a : n->args()) a.for_each_node(note);
    for (const Kwarg& kw : n->kwargs()) kw.second.for_each_node(note);
  }
  for (Node* r : results) note(r);
  for (const Node* e : out.externals)
    if (!e->meta().tensor())
      return Error{"it reads " + e->name() + " from outside, which is not a tensor (a dynamic size)"};

  auto body = std::make_shared<Graph>();
  std::unordered_map<const Node*, Node*> map;
  for (size_t i = 0; i < out.externals.size(); ++i)
    map[out.externals[i]] = body->placeholder("saved_" + std::to_string(i), *out.externals[i]->meta().tensor());
  for (size_t j = 0; j < stand_ins.size(); ++j) {
    Node* ph = body->placeholder("grad_" + std::to_string(j));
    ph->meta() = stand_ins[j]->meta();
    ph->meta().tags = {};
    map[stand_ins[j]] = ph;
  }
  auto remap = [&](Node* n) { return map.at(n); };
  for (Node* n : region) {
    if (stand_in_set.count(n)) continue;
    std::vector<Arg> args;
    std::vector<Kwarg> kwargs;
    for (const Arg& a : n->args()) args.push_back(a.map_nodes(remap));
    for (const Kwarg& kw : n->kwargs()) kwargs.emplace_back(kw.first, kw.second.map_nodes(remap));
    Node* copy = body->call(*n->op(), std::move(args), std::move(kwargs), n->name());
    copy->meta() = n->meta();
    map[n] = copy;
  }
  std::vector<Arg> items;
  for (Node* r : results) items.emplace_back(map.at(r));
  body->output(Arg::tuple(std::move(items)));
  for (auto it = region.rbegin(); it != region.rend(); ++it) graph.erase(*it);
  out.body = std::move(body);
  return out;
}

}  // namespace tj::graph
