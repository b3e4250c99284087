// oneDNN's CPU engine and the memory descriptors shared by the oneDNN steps
// (onednn_exec.cpp's convolutions and inner products, onednn_matmul.cpp's
// matmuls, onednn_pool.cpp's poolings, onednn_weights.cpp's packed weights).
// Only those files include it: it brings in dnnl.hpp.
#pragma once
#include <cstddef>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/core/Tensor.h>

namespace tj::jit::onednn {

// The one CPU engine every oneDNN step runs on.
inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A binary post-op's operand: its sizes padded with leading 1s to the output's rank, plain (dense) layout.
inline dnnl::memory::desc post_op_operand_md(const at::Tensor& t, size_t rank) {
  dnnl::memory::dims dims(rank - static_cast<size_t>(t.dim()), 1);
  for (int64_t s : t.sizes()) dims.push_back(s);
  dnnl::memory::dims strides(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * dims[d];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

}  // namespace tj::jit::onednn
