// Dinic's max-flow and the minimum cut nearest the source; see min_cut.h.
#include "compile/aot/min_cut.h"

#include <algorithm>
#include <cassert>
#include <deque>

namespace tj::graph::aot {

MinCut::MinCut(int vertices) : out_(static_cast<size_t>(vertices)), reach_(static_cast<size_t>(vertices), -1) {}

void MinCut::add_edge(int from, int to, int64_t capacity) {
  assert(capacity >= 0 && "a cut capacity is never negative");
  out_[from].push_back(static_cast<int>(edges_.size()));
  edges_.push_back({to, std::min(capacity, infinite)});
  out_[to].push_back(static_cast<int>(edges_.size()));
  edges_.push_back({from, 0});
}

bool MinCut::levels(int source, int sink) {
  std::fill(reach_.begin(), reach_.end(), -1);
  std::deque<int> todo = {source};
  reach_[source] = 0;
  while (!todo.empty()) {
    int v = todo.front();
    todo.pop_front();
    for (int e : out_[v]) {
      const Edge& edge = edges_[e];
      if (edge.capacity <= 0 || reach_[edge.to] >= 0) continue;
      reach_[edge.to] = reach_[v] + 1;
      todo.push_back(edge.to);
    }
  }
  return reach_[sink] >= 0;
}

int64_t MinCut::push(int v, int sink, int64_t limit) {
  if (v == sink) return limit;
  for (std::size_t& i = next_[v]; i < out_[v].size(); ++i) {
    Edge& edge = edges_[out_[v][i]];
    if (edge.capacity <= 0 || reach_[edge.to] != reach_[v] + 1) continue;
    int64_t pushed = push(edge.to, sink, std::min(limit, edge.capacity));
    if (pushed == 0) continue;
    edge.capacity -= pushed;
    edges_[out_[v][i] ^ 1].capacity += pushed;
    return pushed;
  }
  return 0;
}

int64_t MinCut::solve(int source, int sink) {
  int64_t flow = 0;
  while (levels(source, sink)) {
    next_.assign(out_.size(), 0);
    while (int64_t pushed = push(source, sink, infinite)) {
      flow += pushed;
      if (flow >= infinite) return infinite;  // only infinite cuts: reach_ is still the BFS of this round
    }
  }
  return flow;  // levels() left reach_ as the source side of the residual graph
}

}  // namespace tj::graph::aot
