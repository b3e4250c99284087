// Channels-last values between oneDNN steps (a lowering pass, run once the
// steps are built): oneDNN's convolutions and poolings work on channels-last
// activations, and the llvm pointwise kernels between them (a batch norm's
// scale and shift, a squeeze-excitation multiply, a residual add, an
// activation oneDNN has no post-op for) read any strides and, over operands
// of one layout, are indifferent to which. So a value is kept channels-last
// when the producers and readers agree: a convolution's or pooling's result,
// or a pointwise kernel's output that reads such a value, whose every reader
// is a oneDNN convolution or pooling (as its input or residual) or another
// llvm kernel. A graph output (which keeps eager's strides), a value read by
// an extern ATen op (a view, a reshape, `cat`, ...) or by a oneDNN step as
// anything else keeps eager's strides, and so does every value only those
// reach. The executor runs a pointwise kernel with its loops in the order of
// its first output's strides (llvm_backend.cpp), flat when every operand has
// the same dense layout. TRACEJIT_ONEDNN_LAYOUT=0 (read once): only values
// every reader of which is a oneDNN step stay channels-last (the rule before
// this pass).
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "jit/lowering.h"

namespace tj::jit::onednn {

// Marks the channels-last values of `program` (a lowering with oneDNN steps):
// kernel outputs get channels-last strides in Step::output_metas, oneDNN
// convolutions and poolings Plan::keep_channels_last (and Plan::kernels_read
// where a kernel reads the result). Returns how many values it made
// channels-last that were not before (the lowering's log).
int plan_channels_last(Program& program);

// An `aten::cat` step along the channels (Step::cat): `parts` copied into a result of eager's strides (a
// size-generic program's other sizes: contiguous) or, `channels_last`, channels-last ones, whatever strides the
// parts have. A channels-last result is the first channels of a buffer `capacity` channels wide (or more), and a
// later cat of the same parts and more (a densenet block's next one) writes only its new parts after them into
// the same buffer and returns a wider view of it: each part is copied once per chain, not once per cat. Operands
// that are not plain (other ranks, dtypes, sizes, lazily negated views) go to ATen's op, which raises what it
// raises.
at::Tensor run_cat(const std::vector<at::Tensor>& parts, bool channels_last, int64_t capacity,
                   const graph::TensorMeta& eager);
// Lets the buffer of the last chain of cats go (onednn::reset).
void forget_open_cat();

}  // namespace tj::jit::onednn
