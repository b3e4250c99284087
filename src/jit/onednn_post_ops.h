// A oneDNN step's post-ops as oneDNN attributes (onednn_plan.h's PostOp
// list: eltwise ops, a sum, binary ops by tensors), and the tensors its
// binary post-ops read. Used by the convolution and inner-product steps
// (onednn_exec.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// The operands of the binary post-ops, contiguous (one value per channel: the layout is plain), by post-op index.
struct Operands {
  std::vector<std::pair<int, at::Tensor>> tensors;  // (post-op index, contiguous operand)
  std::string key;                                  // their sizes, for the primitive cache
};


// The binary post-ops' operands of `plan` among the step's `reads` (Match::reads' tensors).
Operands operands_of(const Plan& plan, const std::vector<const at::Tensor*>& reads);

// The post-ops of `plan` as an attribute of a primitive whose tensors have `rank` dims.
dnnl::primitive_attr attr_of(const Plan& plan, const Operands& operands, size_t rank);

}  // namespace tj::jit::onednn
