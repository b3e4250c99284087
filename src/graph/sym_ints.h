// Sizes as ints in the graph (dynamic shapes, issue 15).
//
// When the tracer reads a size of a tensor whose dims may vary (x.shape[0],
// len(x), k.size(-1)), the Python int it hands on is a graph node:
// `sym_size(x, 0)`, and Python's arithmetic on such ints is `sym_add`,
// `sym_mul`, `sym_floordiv`, ... on nodes and constants. Tensor ops take
// them as arguments (`view(x, [sym_size, -1])`), so one trace serves every
// size. Comparisons (`sym_lt`, `sym_eq`, ...) are what the trace's guards
// check (runtime/size_facts.h): the facts its Python control flow relied
// on, evaluated for each new size signature.
//
// Every size node carries its value for the sizes the graph's metas
// describe (NodeMeta::sym_value): meta inference computes it with the
// tensors' metas. Backends never see these nodes: before a graph is
// compiled for one size signature, fold_sym_nodes puts each value in its
// users' arguments as a constant. The interpreter runs them on real
// tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "graph/op_registry.h"
#include "support/expected.h"

namespace tj::graph {

bool is_sym(const Node& node);
bool has_sym_nodes(const Graph& graph);

// Python's `a <op> b` on ints (floor division and modulo take the divisor's
// sign; comparisons give 0 or 1); nullopt for a division by zero or a
// result beyond int64.
std::optional<int64_t> sym_apply(SymOp op, int64_t a, int64_t b);

// The value of a size node, reading `size(tensor node, dim)` and the values
// of its int inputs through the callbacks (each nullopt when unknown).
using SizeOf = std::function<std::optional<int64_t>(const Node& tensor, int64_t dim)>;
using IntOf = std::function<std::optional<int64_t>(const Node& node)>;
Expected<int64_t> eval_sym(const Node& node, const SizeOf& size_of, const IntOf& int_of);

// `roots` and every node they depend on (null roots skipped): what a fact
// on these size nodes needs inferred.
std::unordered_set<const Node*> nodes_feeding(const std::vector<const Node*>& roots);

// Sets node.meta().sym_value from its inputs' metas and values.
Status infer_sym(Node& node);

// Erases the size nodes nobody uses (sizes read but only compared, or not
// used at all), last first.
void erase_unused_sym_nodes(Graph& graph);

// Replaces every size node by its sym_value, as a constant in each user's
// arguments, and erases it. Fails (graph unchanged up to that node) when
// a value is missing.
Status fold_sym_nodes(Graph& graph);

}  // namespace tj::graph
