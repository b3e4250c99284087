// oneDNN's CPU engine and the memory descriptors shared by the oneDNN steps
// (onednn_exec.cpp's convolutions and inner products, onednn_matmul.cpp's
// matmuls, onednn_pool.cpp's poolings, onednn_weights.cpp's packed weights,
// onednn_geometry.cpp's layouts).
// Only those files include it: it brings in dnnl.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/core/Tensor.h>

namespace tj::jit::onednn {

// The one CPU engine every oneDNN step runs on.
inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::memory::dims dims_of(c10::IntArrayRef v) { return dnnl::memory::dims(v.begin(), v.end()); }

// The float32 tensor as oneDNN memory: its own sizes and strides.
inline dnnl::memory::desc strided_md(const at::Tensor& t) {
  return dnnl::memory::desc(dims_of(t.sizes()), dnnl::memory::data_type::f32, dims_of(t.strides()));
}

// oneDNN memory of this descriptor over the tensor's data (no copy).
inline dnnl::memory wrap(const dnnl::memory::desc& md, const at::Tensor& t) {
  return dnnl::memory(md, engine(), t.data_ptr());
}

// Whether `t` lies with `strides` (size-1 dims ignored).
inline bool same_layout(const at::Tensor& t, c10::IntArrayRef strides) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) != strides[d]) return false;
  return true;
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
