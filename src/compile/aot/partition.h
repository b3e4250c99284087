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
// Recomputation rule (to save fewer bytes): a saved value produced by a
// cheap op (pointwise or a view; never random or mutating) is recomputed in
// the backward when the chain of cheap ops leading to it from values that
// are saved anyway (or from non-cheap values, which then get saved instead;
// at most 16 nodes) needs fewer extra saved bytes than the value itself.
// E.g. `sin(x * w)`: the backward needs `cos(x * w)`; x and w are saved for
// the mul's own gradient, so `x * w` and its cos are recomputed and nothing
// else is saved. Applied until nothing changes; primals count like any value.
// Recomputing is only worth its time when the backend fuses the recomputed
// ops into kernels it runs anyway (`Backend::fuses_pointwise`); otherwise
// (`recompute_cheap` false) every value is saved and the rule's result is
// only reported (`saved_bytes_recomputing`).
#pragma once

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
Expected<Partition> partition_joint(const Graph& joint, int num_primals, int num_tangents, int num_forward_outputs,
                                   bool recompute_cheap = true);

// Bytes of the tensor(s) a node produces, from its fake metadata.
int64_t node_bytes(const Node& node);

}  // namespace tj::graph::aot
