// Splitting a joint forward/backward graph (the seed's `default_partition`).
//
// The joint graph (capture.h) has placeholders primals..., tangents... and
// outputs forward outputs..., gradients.... A node belongs to the backward
// when it is reachable from a tangent; the forward keeps every other node
// the forward outputs or the backward need. Values the backward reads from
// the forward are "saved": the forward graph returns them after its own
// outputs, the backward graph takes them as its first placeholders, then
// the tangents, and returns the gradients.
//
// What to save (to save fewer bytes): a minimum cut, as AOTAutograd's
// default partitioner makes it (min_cut.h). The forward ancestors of the
// values the backward reads are the cut's vertices; a value is either
// computed in the forward (and saved when the backward needs it: its bytes)
// or recomputed in the backward (a cheap op only: pointwise or a view,
// never random or mutating; a small cost per node), so matmul,
// convolution and reduction outputs are saved and the pointwise chains
// after them recomputed wherever that saves bytes. On a tie the value the
// backward reads itself is saved, and as few nodes as can be are
// recomputed. E.g. `sin(x * w)`: the backward needs `cos(x * w)`; x and w
// are saved for the mul's own gradient, so `x * w` and its cos are
// recomputed and nothing else is saved (partition.cpp's `choose_recompute`).
// Recomputing is only worth its time when the backend fuses the recomputed
// ops into kernels it runs anyway (`Backend::fuses_pointwise`); otherwise
// (`recompute_cheap` false) every value is saved and the rule's result is
// only reported (`saved_bytes_recomputing`).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph::aot {

struct Partition {
  std::unique_ptr<Graph> forward;   // primals -> forward outputs..., saved...
  std::unique_ptr<Graph> backward;  // saved..., tangents -> gradients...
  int num_saved = 0;
  int64_t saved_bytes = 0;        // after recomputation
  int64_t saved_bytes_naive = 0;  // saving every forward value the backward reads
  int64_t saved_bytes_recomputing = 0;  // what the recomputation rule saves
  int num_recomputed = 0;         // nodes recomputed in this partition
};

// `num_primals` / `num_tangents`: the placeholder counts (primals first);
// `num_forward_outputs`: how many outputs precede the gradients.
// `versioned_primals`: primals whose version the call bumps (written in
// place): recomputation never saves one the backward does not read itself
// in place of a value computed from it (eager saves that value; the saved
// input would fail the backward's version check: fuzz seed 9968454).
Expected<Partition> partition_joint(const Graph& joint, int num_primals, int num_tangents, int num_forward_outputs,
                                   bool recompute_cheap = true, const std::vector<bool>& versioned_primals = {});

// Bytes of the tensor(s) a node produces, from its fake metadata.
int64_t node_bytes(const Node& node);

// A backward graph for a call where the tangents marked in `absent` did not
// come (the caller's loss does not use those outputs). Eager's engine never
// runs the formulas such a gradient would flow through; the backward graph
// run on zero tangents does, and a zero times an infinite derivative (an
// unused `sqrt` of a negative number) is NaN. Here a node that reads
// tangents only through absent ones is absent too (removed); a node that
// mixes absent and present values reads zeros for the absent ones (as
// eager's engine fills an undefined gradient of a multi-output node), each
// a new placeholder after the original ones; a gradient that is absent is
// returned as zeros and marked in `absent_outputs` (the input gets None).
// Tangent placeholders are those named `tangents_N` (N from 1).
struct AbsentTangentGraph {
  std::unique_ptr<Graph> graph;
  std::vector<TensorMeta> zeros;       // the added placeholders, in order
  std::vector<bool> absent_outputs;    // per (flattened) output
};
Expected<AbsentTangentGraph> without_absent_tangents(const Graph& backward, const std::vector<bool>& absent);
// Runs that graph (interpreted): `input(i)` gives the backward's i-th
// input (saved values, then tangents) and is asked only for those the
// graph still reads (a saved tensor only absent parts read is not unpacked:
// eager never checks its version). The gradients, an absent one undefined.
Expected<std::vector<at::Tensor>> run_without_absent_tangents(const Graph& backward, const std::vector<bool>& absent,
                                                              const std::function<at::Tensor(size_t)>& input);

}  // namespace tj::graph::aot
