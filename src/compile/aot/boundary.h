// What the runtime puts around AOT so that the functional graph a backend
// compiles gives the caller what the captured graph would have:
//
//   captured graph ─► refuse what functionalization cannot represent
//                  ─► unused results made extra outputs (they may fail;
//                     never differentiated: AotOptions::undifferentiated_outputs)
//                  ─► aot_compile ─► drop the extra outputs,
//                                    detach what eager returned detached
//
// Refused (the runtime then runs the captured graph op by op, a logged and
// counted fallback): `requires_grad_` (a functional graph cannot make a
// tensor, the caller's or its own output, start requiring grad), `set_`
// (it swaps a tensor's storage; functionalization sees only a new value)
// and `detach_`. Unused results: graph/passes/unused_results.h. Detached
// outputs: eager's `x.detach()` shares x's memory but is no autograd view
// and never requires grad; AOT regenerates an output that shares an
// input's memory as a view of it (`as_strided`), which is both, so a later
// `detach_()` raised and the result required grad. Likewise an
// intermediate changed in place by a metadata op (`v.unsqueeze_(0)`) is
// no view in eager but comes back as a view of AOT's intermediate.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "jit/backend.h"

namespace tj::compile {

// Why AOT cannot represent `graph` ("" when it can).
std::string aot_cannot_represent(const graph::Graph& graph);

// What an output of AOT's wrapper needs to be eager's: nothing; detach()
// (eager's is a detach() result); no autograd view (eager's is a tensor of
// its own, or one changed in place by t_/unsqueeze_..., which AOT may
// regenerate as a view of an intermediate).
// freed_history: after a traced backward, eager's tensor requires grad with
// a grad_fn whose graph that backward freed (aot/joint_step.h).
enum class OutputFix { none, detach, no_view, freed_history };

struct AotBoundary {
  std::shared_ptr<const graph::Graph> graph;  // what AOT gets
  int extra_outputs = 0;                      // appended to the captured graph's outputs
  std::vector<OutputFix> fixes;               // per flattened output; empty: none
};

AotBoundary prepare_for_aot(std::shared_ptr<const graph::Graph> captured);

// `fn` (AOT's wrapper for `boundary.graph`) returning the captured graph's outputs.
jit::CompiledFn with_eager_outputs(jit::CompiledFn fn, const AotBoundary& boundary);

}  // namespace tj::compile
