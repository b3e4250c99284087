// Frozen inference weights at run time (issue 41 item 2): the llvm backend
// compiles an inference graph split by graph::freeze (graph/passes/freeze.h)
// into its constants and its main program; the constants are computed from
// the frozen inputs (module parameters and buffers) on the first call and
// kept while each of those inputs is the same tensor (identity: the same
// TensorImpl, alive, over the same data pointer), at the same version of its
// version counter and with the same contents (a hash of its bytes: a write
// through `.data` leaves the version counter as it was). Any write —
// `load_state_dict`, an optimizer step, an in-place op, a write through
// `.data` or `.detach()` — or another tensor in its place makes the next
// call compute them again (a refold), so a stale weight is never used.
// `requires_grad_` changes the frame's guards and recompiles.
//
// `set_freezing` is tracejit.config.freezing's mirror (default on).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "graph/graph.h"
#include "jit/backend.h"

namespace tj::jit {

void set_freezing(bool on);
bool freezing();

// A hash of the bytes of a dense tensor (position-weighted, so a moved or
// changed word changes it): one read of the tensor.
uint64_t content_hash(const at::Tensor& t);

// `main` (the main program, compiled: it takes the graph's inputs, then the
// constants) called with the constants of `constants` (a graph of the
// graph's inputs returning them) for its inputs at `frozen_inputs`.
CompiledFn with_frozen_constants(CompiledFn main, std::shared_ptr<const graph::Graph> constants,
                                 std::vector<int> frozen_inputs);

struct FreezeStats {
  long long graphs_frozen = 0;   // graphs compiled with constants
  long long batch_norms_folded = 0;
  long long folds = 0;           // constants computed (first calls and refolds after a write)
  long long hits = 0;            // calls that found their constants current
};
FreezeStats freeze_stats();
void note_frozen_graph(int batch_norms_folded);
void reset_freeze_stats();

}  // namespace tj::jit
