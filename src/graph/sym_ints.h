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
#include <string>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "graph/op_registry.h"
#include "support/expected.h"

namespace tj::graph {

bool is_sym(const Node& node);
bool has_sym_nodes(const Graph& graph);

// Python's `a <op> b` on ints (floor division and modulo take the divisor's
// sign; comparisons give 0 or 1); nullopt for a division by zero, a
// negative power (a float in Python) or a result beyond int64.
std::optional<int64_t> sym_apply(SymOp op, int64_t a, int64_t b);

// The value of a size node, reading `size(tensor node, dim)` and the values
// of its int inputs through the callbacks (each nullopt when unknown).
using SizeOf = std::function<std::optional<int64_t>(const Node& tensor, int64_t dim)>;
using IntOf = std::function<std::optional<int64_t>(const Node& node)>;
// `item_of` reads the value of a 0-d integer tensor for sym_item (the
// interpreter's, on real tensors); without it sym_item has no value.
using ItemOf = std::function<std::optional<int64_t>(const Node& tensor)>;
Expected<int64_t> eval_sym(const Node& node, const SizeOf& size_of, const IntOf& int_of, const ItemOf& item_of = {});

// `roots` and every node they depend on (null roots skipped): what a fact
// on these size nodes needs inferred.
std::unordered_set<const Node*> nodes_feeding(const std::vector<const Node*>& roots);

// Sets node.meta().sym_value from its inputs' metas and values.
Status infer_sym(Node& node);

// A size node as a small program over the graph's input sizes, evaluated
// by the runtime on each call (a size used as a number: the graph takes
// its value as a 0-d int64 input, tracer/size_numbers.cpp). Each step is
// `a <op> b` (SymOp add..pow); an operand is a constant, dim `dim` of
// input `input`, or an earlier step's value. The last step is the value.
struct SizeExpr {
  struct Operand {
    enum class Kind { constant, input_size, step } kind = Kind::constant;
    int64_t value = 0;  // constant: the int; input_size: the dim; step: its index
    int input = -1;     // input_size: the input (placeholder) index
  };
  struct Step {
    SymOp op = SymOp::add;
    Operand a, b;
  };
  std::vector<Step> steps;
  Operand result;  // a lone size or constant needs no step
};

// `node` as a SizeExpr over placeholder sizes (`input_of` gives a
// placeholder's input index, nullopt for other nodes); an error when it
// reads a size of a tensor that is not an input, or a comparison.
using InputOf = std::function<std::optional<int>(const Node& node)>;
Expected<SizeExpr> size_expr_of(const Node& node, const InputOf& input_of);

// Its value for the inputs' sizes (`input_size(input, dim)`, nullopt when
// the input has no such dim); nullopt also for a division by zero or a
// result beyond int64 (as sym_apply).
using InputSize = std::function<std::optional<int64_t>(int input, int64_t dim)>;
std::optional<int64_t> eval_size_expr(const SizeExpr& expr, const InputSize& input_size);

// "in0.size(1) * 2 // 3" style text, inputs named by `name_of(input)`.
std::string print_size_expr(const SizeExpr& expr, const std::function<std::string(int)>& name_of);

// Erases the size nodes nobody uses (sizes read but only compared, or not
// used at all), last first.
void erase_unused_sym_nodes(Graph& graph);

// Replaces every size node by its sym_value, as a constant in each user's
// arguments, and erases it. Fails (graph unchanged up to that node) when
// a value is missing.
Status fold_sym_nodes(Graph& graph);
// The same for one size node, with `value` (graph/unbacked_split.h binds a
// sym_item to the value read when the graph runs).
void fold_sym_node(Graph& graph, Node* node, int64_t value);

}  // namespace tj::graph
