// Batched matmuls as oneDNN steps (issue 41 items 1 and 4): `aten::bmm`
// and `aten::baddbmm` (what a traced `q @ k.transpose(-2, -1)`, a 3-d or
// 4-d `torch.matmul`, becomes after AOT's decompositions: expand, a view to
// 3-d, bmm, a view back) run as one oneDNN matmul primitive that reads its
// operands through their strides (a transposed `k` is a weights layout,
// not a copy), with the nodes after it fused as post-ops:
//  - the view that splits the batch back into its dims (`_unsafe_view`,
//    `view`, `reshape` to [..., M, N]): the primitive computes in that rank,
//  - a multiplication or division by a number (attention's `1/sqrt(d)`),
//  - the addition of a float32 tensor that broadcasts to the output
//    (a padding mask `[B, 1, 1, T]`, a causal mask `[1, 1, T, T]`, a bias).
// An operand that is a head split's copy, `view(clone(s, memory_format=
// contiguous))` of a [B, H, T, D] view s of one projection (attention's q,
// k, v after `view(...).transpose(1, 2)`; the clone is how AOT's matmul
// decomposition makes a 4-d operand 3-d), is read as s through its strides
// when the output's batch dims are absorbed (its view): the clone and view
// are computed by the step (run as ATen ops only if it is refused), so no
// copy is made; strides oneDNN has only its reference implementation for are
// copied dense inside the step.
// baddbmm's `beta * self + alpha * (a @ b)` is alpha as a scale and self as
// such an addition (beta 0 or 1). The softmax that follows in attention is
// the llvm backend's fused kernel, placed between two such steps with no
// copy (its output is the second matmul's source).
//
// The plan (which nodes) is made in onednn_plan.cpp's `match` through
// `match_matmul`; a step runs through onednn_exec.h's `run`, which calls
// `run_matmul`. Primitives are cached by the operands' sizes and strides,
// the output's sizes and the post-ops; a case oneDNN refuses (a dtype, a
// layout only its reference implementation takes, shapes that disagree)
// runs its nodes as ATen ops, with a `perf` log line (llvm_backend.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <ATen/core/Tensor.h>

#include "graph/graph.h"
#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// The matmul step headed by `head` (aten::bmm or aten::baddbmm), or none.
// Nodes in `taken` or `excluded` are not absorbed (see `match`).
std::unique_ptr<Match> match_matmul(const graph::Node& head, const std::unordered_set<const graph::Node*>& taken,
                                    const std::unordered_set<const graph::Node*>& excluded);

// Runs a matmul plan on Match::reads' tensors (the source, the weights, the
// bias or null, null, then the binary post-ops' operands); nullopt with
// `why` when oneDNN does not take the case.
std::optional<at::Tensor> run_matmul(const Plan& plan, const std::vector<const at::Tensor*>& reads,
                                     const graph::TensorMeta& eager, std::string* why);

struct MatmulStats {
  long long primitives_created = 0;  // primitive cache misses
  long long steps_run = 0;           // matmul steps oneDNN ran
  std::string last_impl;             // the implementation oneDNN chose last
};
MatmulStats matmul_stats();
// Drops the primitive cache and zeroes the counters (onednn::reset calls it).
void matmul_reset();

}  // namespace tj::jit::onednn
