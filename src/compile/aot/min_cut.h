// A minimum s-t cut on a small directed graph with int64 capacities
// (Dinic's max-flow), for AOT's partition (partition.h): which forward
// values to save for the backward and which to recompute, as AOTAutograd's
// default partitioner chooses them. Vertices are 0..n-1; `infinite` marks
// an edge the cut may not cross. The cut returned is the one nearest the
// source (the vertices the source still reaches in the residual graph
// after a maximum flow), which is unique, so the choice is deterministic
// whatever order the edges were added in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tj::graph::aot {

class MinCut {
 public:
  static constexpr int64_t infinite = int64_t{1} << 60;

  explicit MinCut(int vertices);
  void add_edge(int from, int to, int64_t capacity);
  // The cut's capacity; afterwards `source_side(v)` says which side v is on.
  int64_t solve(int source, int sink);
  bool source_side(int v) const { return reach_[v] >= 0; }

 private:
  struct Edge {
    int to;
    int64_t capacity;  // residual
  };
  bool levels(int source, int sink);
  int64_t push(int v, int sink, int64_t limit);

  std::vector<Edge> edges_;              // edge i and its reverse i ^ 1
  std::vector<std::vector<int>> out_;    // edge indices leaving each vertex
  std::vector<int> reach_;               // BFS level, -1 when unreached
  std::vector<std::size_t> next_;            // Dinic's current-edge pointers
};

}  // namespace tj::graph::aot
