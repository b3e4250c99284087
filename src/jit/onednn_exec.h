// Running a oneDNN step (onednn_plan.h) with oneDNN's C++ API (Debian's
// libdnnl, 2.6, the library LibTorch links): a convolution (forward or
// transposed, any rank from 1-d to 3-d, groups, dilation) or an inner
// product, with the planned post-ops. Primitives are built once per shape
// and plan (a primitive cache keyed by both), weights reordered once into
// the layout the primitive picked (`format_tag::any`) and cached per
// storage, offset, geometry and version counter, so an in-place write to a
// weight (an optimizer step, `load_state_dict`) re-packs it on the next
// call. Convolutions run on channels-last activations; a result goes back
// to eager's strides unless every reader is a oneDNN step.
//
// oneDNN uses OpenMP here (the same libgomp LibTorch's ATen uses): its
// threads are ATen's, `torch.set_num_threads` sets both.
#pragma once

#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

#include "graph/graph.h"
#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// The step's value, or nullopt when oneDNN does not take this case (its
// shapes, a primitive it does not implement): `why` says why, and the
// caller runs the step's nodes as ATen ops. `reads` are Match::reads'
// tensors (the bias and the residual may be null); `eager` is the meta of
// the step's value (its strides are eager's).
std::optional<at::Tensor> run(const Plan& plan, const std::vector<const at::Tensor*>& reads,
                              const graph::TensorMeta& eager, std::string* why);

struct Stats {
  long long primitives_created = 0;  // primitive cache misses
  long long weight_packs = 0;        // weight reorders (cache misses, or uncached weights)
  long long weight_hits = 0;         // calls that found their packed weight
  long long steps_run = 0;           // steps run by oneDNN
  long long refused = 0;             // steps oneDNN did not take (run as ATen ops)
  long long refused_reference_only = 0;  // of `refused`: oneDNN offered only its reference implementation
                                         // (which cases depends on the host's ISA: AVX2 has fewer kernels)
  long long sums_in_place = 0;          // steps that summed into their residual's buffer (Plan::residual_last_use)
  long long winograd_steps = 0;         // convolutions run as Winograd (TRACEJIT_WINOGRAD=0: none)
  long long own_winograd_steps = 0;     // ... of those, by our own F(4x4, 3x3) (onednn_f43.h: no oneDNN one)
  long long direct_before_winograd = 0; // Winograd-shaped convolutions run direct first (winograd_after())
  long long blocked_direct_steps = 0;   // direct convolutions run on blocked layouts (blocked_direct_shape)
  long long blocked_inputs_reused = 0;  // blocked inputs read from the blocked result of the step before
  long long results_deferred = 0;       // Winograd results kept only blocked when made (onednn_winograd.h)
  long long results_materialized = 0;   // ... of those, reordered out later (a reader needed them)
  std::string last_impl;             // the implementation oneDNN chose last (impl_info_str)
  long long off_for_training = 0;    // graphs lowered without oneDNN steps because an input requires grad
  long long refused_not_finite = 0;  // of `refused`: steps the NaN rule refused (onednn_finite.h)
  long long outputs_recycled = 0;    // Linear and matmul outputs written on a recycled block (onednn_buffers.h)
};
Stats stats();
// The llvm backend lowered a graph without oneDNN steps (an input requires grad).
void note_off_for_training();
// A step refused by the NaN rule (onednn_finite.h: an operand not proved
// finite), also counted in `refused`.
void note_refused_not_finite();
// tracejit.counters()' `onednn_not_finite_refusals`: Stats::refused_not_finite
// since the last zero_not_finite_refusals (tracejit.reset).
long long not_finite_refusals();
void zero_not_finite_refusals();
// Drops both caches and zeroes the counters (tests).
void reset();
// Tests: a Winograd-shaped convolution runs direct until it has computed this many output pixels that way
// (onednn_winograd.h's winograd_after; 0: Winograd from the first call; -1: back to TRACEJIT_WINOGRAD_AFTER's).
void set_winograd_after(int64_t pixels);
// Tests: after `n` more steps run by oneDNN, every step is refused (its
// nodes run as ATen ops), as a case oneDNN does not take; -1: never.
void refuse_after(long long n);

}  // namespace tj::jit::onednn
