// Freezing an inference graph (issue 41 item 2): the values it computes
// from its module parameters and buffers alone become constants, computed
// once and kept while those inputs stay the same tensors with the same
// contents (the llvm backend keeps and checks them: jit/frozen_inputs.h).
//
// Which inputs are frozen is read off the graph: every input a graph
// records no gradient for (AOT's tag "grad_unused": a parameter under
// no_grad; a graph without one freezes nothing, so parameters made not to
// require grad are not frozen), and every other float input whose values meet the graph's
// activations only where weights do: a convolution's or a Linear's weight
// and bias, a normalization's parameters and statistics, an embedding's
// table, or a pointwise operand broadcast against a larger value (batch
// norm's per-channel scale and shift). An input that meets them
// elsewhere (a convolution's input, a residual) is an activation.
// Choosing wrongly costs time, never values: the constants are
// recomputed whenever a frozen input changes.
//
// Before the split, an inference batch norm decomposed into
// `addcmul(shift, conv(x, w, b), scale)` (graph/passes/decompose.h) whose
// scale and shift are constants is folded into the convolution:
// `conv(x, w * scale, b * scale + shift)` (not transposed convolutions).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace tj::graph {

// True when the graph records no gradient for any of its inputs (every
// placeholder that requires grad carries AOT's tag "grad_unused").
bool is_inference_graph(const Graph& graph);

struct Frozen {
  // The graph's placeholders, then one per constant (tag "frozen_constant"),
  // in the order `constants` returns them.
  std::shared_ptr<Graph> main;
  // The graph's placeholders; returns the constants (a tuple).
  std::shared_ptr<Graph> constants;
  // The inputs (positions) the constants are computed from: kept and checked.
  std::vector<int> frozen_inputs;
  int batch_norms_folded = 0;
};

// The split of an inference graph, or nullopt when nothing is worth
// computing once (no constant value other than an input or a view of one).
std::optional<Frozen> freeze(const Graph& graph);

}  // namespace tj::graph
