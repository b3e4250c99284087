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
// The first call(s) of a frozen graph run its whole (unfrozen) graph op by op
// with ATen's ops, as eager does, and compute no constants: folding the batch
// norms and packing the weights into oneDNN's layouts (what the constants
// are for) costs more than the call itself (resnet18, batch 1: ~60 ms
// against eager's ~70 ms first call), and pays only over later calls (a
// ski-rental rule, as onednn_winograd.h's for Winograd). From call
// `freeze_after() + 1` on, the constants are computed and the compiled
// program runs. The values of those first calls are eager's own.
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

// How many first calls of a frozen graph run its whole graph op by op (see
// above): TRACEJIT_FREEZE_AFTER (environment, read once), default 1; 0: the
// constants and the compiled program from the first call (the tests' own
// environment sets 0, so that one call exercises the compiled program).
int64_t freeze_after();
// Tests: overrides TRACEJIT_FREEZE_AFTER for graphs compiled from now on (-1: back to it).
void set_freeze_after(int64_t calls);

// `main` (the main program, compiled: it takes the graph's inputs, then the
// constants) called with the constants of `constants` (a graph of the
// graph's inputs returning them) for its inputs at `frozen_inputs`; its
// first freeze_after() calls run `whole` (the graph before the split, same
// inputs and outputs) op by op instead.
CompiledFn with_frozen_constants(CompiledFn main, std::shared_ptr<const graph::Graph> constants,
                                 std::vector<int> frozen_inputs, std::shared_ptr<const graph::Graph> whole);

struct FreezeStats {
  long long graphs_frozen = 0;   // graphs compiled with constants
  long long batch_norms_folded = 0;
  long long folds = 0;           // constants computed (first calls and refolds after a write)
  long long hits = 0;            // calls that found their constants current
  long long op_by_op_calls = 0;  // first calls that ran the whole graph op by op (freeze_after)
};
FreezeStats freeze_stats();
void note_frozen_graph(int batch_norms_folded);
void reset_freeze_stats();

}  // namespace tj::jit
