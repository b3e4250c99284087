// oneDNN's Winograd convolutions (onednn_exec.cpp runs them): which
// convolutions may take the algorithm (TRACEJIT_WINOGRAD) and from which
// call on (TRACEJIT_WINOGRAD_AFTER), and the blocked twins of their results,
// so that a Winograd convolution reading the result of the one before (its
// input or its residual) reads it in oneDNN's blocked layout instead of
// having it reordered out and in again. A result internal to the program
// (every reader a oneDNN step) is not reordered out at all until a reader
// needs its channels-last values (`materialize`): in a resnet's chain of
// 3x3 blocks, most never are.
#pragma once

#include <cstdint>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// TRACEJIT_WINOGRAD (environment, read once): "0" keeps every convolution direct.
bool winograd_enabled();

// Winograd's weight transform (oneDNN's reorder into its wino layout) is slow next to the direct convolution's
// weight reorder, and only pays back over several calls of small outputs: a Winograd-shaped convolution runs
// direct until it has computed this many output pixels (batch x height x width, summed over calls) that way,
// then as Winograd (a ski-rental rule; onednn_exec.cpp). TRACEJIT_WINOGRAD_AFTER (environment, read once),
// default 256: a one-off call never pays the transform, a batch of 8 at 7x7 or more switches at its second
// call. 0: Winograd from the first call. onednn_exec.h's `set_winograd_after` overrides it (tests).
int64_t winograd_after();

// A convolution oneDNN may run as Winograd's F(4x4, 3x3) (jit_wino_4x3): 2-d, 3x3, stride 1, undilated, one
// group (and winograd_enabled()).
bool winograd_shape(const Plan& p, const at::Tensor& w);

// A direct convolution that runs on oneDNN's blocked layouts (nChw8c: the input reordered in, the result out or
// kept as a pending twin, as Winograd's) where oneDNN's direct kernel on them is `kBlockedDirectImpl`: 2-d, one
// group, not transposed, a kernel larger than 1x1, a stride over 1, channels in and out multiples of 8 (the
// block). On this project's AVX2 host oneDNN's jit:avx2 kernel on nhwc ran resnet's and convnext's strided
// convolutions 1.15-1.5x slower than on nChw8c, the two reorders included (CPU time, one thread, batch 8:
// 128->128 3x3 s2 at 56x56 35.0 -> 24.4 ms, 512->512 at 14x14 36.6 -> 26.0 ms, 96->192 2x2 s2 at 56x56 18.6
// -> 14.8 ms); 1x1 and stride-1 convolutions, and stems of 3 channels, were as fast or faster on nhwc.
// TRACEJIT_ONEDNN_BLOCKED=0 (environment, read once) keeps them channels-last.
bool blocked_direct_shape(const Plan& p, const at::Tensor& x, const at::Tensor& w);
inline constexpr const char* kBlockedDirectImpl = "jit:avx2";

// The blocked results of the last Winograd convolutions, each by the tensor it was reordered out to: a later
// Winograd convolution whose input is that tensor (alive, the same TensorImpl over the same data, its version
// counter unmoved: every write the program makes to an internal value bumps it, see sum_in_place) reads the
// blocked copy instead of reordering the tensor in again. A few entries per thread, newest last.
struct BlockedTwin {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl;
  const c10::TensorImpl* address = nullptr;
  const void* data = nullptr;
  uint32_t version = 0;
  dnnl::memory::desc md;
  at::Tensor buffer;
  // the tensor's own values are not written yet: only `buffer` holds them (materialize writes them)
  bool pending = false;
  dnnl::memory::desc out_md;  // pending: the tensor's layout
};

// The twin of `x` in the layout `md`, or null.
const BlockedTwin* twin_of(const at::Tensor& x, const dnnl::memory::desc& md);
// Remembers `buffer` (laid out as `md`) as the blocked twin of `out` at its current version. `pending`: `out`
// (laid out as `out_md`) is not written: its values are reordered out of `buffer` by `materialize`, when a
// reader needs them or the twin is dropped while `out` lives.
void remember_twin(const at::Tensor& out, const dnnl::memory::desc& md, at::Tensor buffer, bool pending = false,
                   const dnnl::memory::desc& out_md = {});
// Writes `t`'s values out of its pending twin (once); nothing when it has none. Every read of an internal
// value's bytes by a oneDNN step (or by the ATen ops a refused step runs) calls it first.
void materialize(const at::Tensor& t);
// Counts: results not reordered out when made (pending), and those reordered out later.
struct TwinCounts {
  long long deferred = 0, materialized = 0;
};
TwinCounts twin_counts();
// Drops this thread's twins (onednn::reset), writing out the pending ones of live tensors first.
void forget_twins();

}  // namespace tj::jit::onednn
