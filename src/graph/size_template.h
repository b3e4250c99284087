// Size templates: one functional graph for every size of a dynamic entry
// (issue 15).
//
// LibTorch 1.13's C++ kernels cannot run on symbolic sizes (TensorIterator
// and the composite kernels read `sizes()`; `view`/`expand` want concrete
// ints), so AOT capture writes concrete ints: `view(x, [B*T, C])` from
// matmul's folding, `expand` sizes, slice ends. A template recovers their
// form from captures of the same graph at several size points: the graphs
// must be equal but for ints (ops, argument structure, every other value,
// tensor constants); each int that differs is fitted as `c * M + k`, M a
// product of the varying dims (each dim to a power 0..2, degree 1..3), c
// and k integers, or as `(M + k) // q` (q in 2..8, 0 <= k < q: halves,
// pooled lengths), one form exactly fitting every point, and becomes size
// nodes (graph/sym_ints.h) over the placeholders' sizes. The dims that
// vary are those that differ between the points; dims equal at every point
// form one class (one size). Each class must have taken three distinct
// values. The template is checked before it is used: specialized for each
// point it must give that point's graph back, metas included.
//
// This recovers a form from samples; it proves it only for the family
// above. A graph whose ints follow another form (a clamp, a branch on a
// size inside a composite kernel) has no unique fit and is refused, and
// the caller keeps capturing per size.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/expected.h"
#include "graph/graph.h"

namespace tj::graph::aot {

// A placeholder's dim.
struct SizeVar {
  int placeholder = 0;
  int dim = 0;
};

// `(c * M + k) // q`, M the product of each class's size to exps[class].
struct SizeForm {
  std::vector<int> exps;
  int64_t c = 1;
  int64_t k = 0;
  int64_t q = 1;
  bool operator<(const SizeForm& o) const;
};

// An int of the template's world: a constant, or a size form.
struct SizeInt {
  int64_t constant = 0;
  std::optional<SizeForm> form;
};

// A placeholder whose meta follows from the given ones (a joint graph's
// tangents): contiguous, `meta`'s dtype and device, these sizes.
struct DerivedInput {
  int placeholder = 0;
  std::vector<SizeInt> sizes;
  TensorMeta meta;
};

struct SizeTemplate {
  std::shared_ptr<const Graph> graph;  // size nodes where the points' ints differ
  // The dims that vary, by class (dims equal at every point); the first of
  // each class is the one the size nodes read. Only the given placeholders'
  // dims make classes.
  std::vector<std::vector<SizeVar>> classes;
  // Every given placeholder's sizes at the first point: dims in no class
  // must keep them.
  std::vector<std::vector<int64_t>> fixed_sizes;
  std::vector<DerivedInput> derived;  // the placeholders after the given ones
  int symbolic_ints = 0;  // int arguments made size nodes
  std::vector<std::vector<int64_t>> class_values;  // [class][point]: each class's size at each point
  // Pairs of classes (smaller, larger) whose sizes kept that strict order at
  // every point. A fit may rely on it without knowing (a diagonal's length
  // min(n0, n1) fitted as n0 when n0 < n1 at every point), so sizes that
  // break it are not served (template_mismatch).
  std::vector<std::pair<int, int>> orders;
  // Pairs (smaller, larger) equal at some point and smaller at the others
  // (the capture on a square input): sizes with smaller > larger are not
  // served (min(n0, n1) is n0 at every such point too).
  std::vector<std::pair<int, int>> weak_orders;
  // With `bounds` (generalize_sizes): each class's order against every size
  // of 2 or more of a given dim in no class, kept at every point (a
  // diagonal's length min(n, 5) fitted as 5 when n > 5 at every point).
  struct Bound {
    int cls = 0;
    int64_t size = 0;
    bool above = false;  // the class was larger than `size` at every point (else smaller)
    bool strict = true;   // else equal to it at some point: only the other side is refused
  };
  std::vector<Bound> bounds;
};

// The same graph captured at several size points (the placeholders' metas
// say the sizes) -> its template, or why there is none. The first `given`
// placeholders (all when negative) are the inputs whose sizes a caller
// gives; each later one must be contiguous at every point with sizes that
// fit size forms of the given ones' (a joint graph's tangents, shaped as
// the outputs they stand for).
Expected<SizeTemplate> generalize_sizes(const std::vector<const Graph*>& points, int given = -1, bool bounds = false);

// One more int of the captures (one value per point, `what` names it for
// the error) fitted over the template's classes, as the graph's ints are.
Expected<SizeInt> fit_size_int(const SizeTemplate& t, const std::vector<int64_t>& values, const std::string& what);

// Its value for the sizes of `inputs` (sizes the template serves:
// template_mismatch is "").
int64_t eval_size_int(const SizeTemplate& t, const SizeInt& v, const std::vector<TensorMeta>& inputs);

// Whether `inputs` (one meta per given placeholder) are sizes the template
// serves (the dims of each class equal, the others as at every point, the
// classes in the order they kept at every point): "" when they are, else
// why not.
std::string template_mismatch(const SizeTemplate& t, const std::vector<TensorMeta>& inputs);

// "" when `got` is `want` node by node (targets, arguments with their ints,
// metas), else where they first differ: the check of a template against
// its points, and of a template specialized for new sizes against their
// capture (compile/aot/aot_template.cpp).
std::string graph_difference(const Graph& got, const Graph& want);

// The template for the sizes of `inputs`: the given placeholders get these
// metas and the derived ones theirs, metas and size nodes are inferred,
// size nodes folded into constants.
Expected<std::unique_ptr<Graph>> specialize_sizes(const SizeTemplate& t, const std::vector<TensorMeta>& inputs);

}  // namespace tj::graph::aot
