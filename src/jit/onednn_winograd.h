// oneDNN's Winograd convolutions (onednn_exec.cpp runs them): which
// convolutions may take the algorithm (TRACEJIT_WINOGRAD), and the blocked
// twins of their results, so that a Winograd convolution reading the result
// of the one before reads it in oneDNN's blocked layout instead of having
// it reordered out and in again.
#pragma once

#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// TRACEJIT_WINOGRAD (environment, read once): "0" keeps every convolution direct.
bool winograd_enabled();

// A convolution oneDNN may run as Winograd's F(4x4, 3x3) (jit_wino_4x3): 2-d, 3x3, stride 1, undilated, one
// group (and winograd_enabled()).
bool winograd_shape(const Plan& p, const at::Tensor& w);

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
};

// The twin of `x` in the layout `md`, or null.
const BlockedTwin* twin_of(const at::Tensor& x, const dnnl::memory::desc& md);
// Remembers `buffer` (laid out as `md`) as the blocked twin of `out` at its current version.
void remember_twin(const at::Tensor& out, const dnnl::memory::desc& md, at::Tensor buffer);
// Drops this thread's twins (onednn::reset).
void forget_twins();

}  // namespace tj::jit::onednn
