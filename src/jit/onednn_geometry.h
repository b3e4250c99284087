// Shapes and layouts of the oneDNN steps, shared by onednn_exec.cpp's
// convolutions and inner products: channels-last and contiguous strides, a
// reorder into given strides, and ATen's convolution rules. Only oneDNN
// files include it (it brings in dnnl.hpp through onednn_memory.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/core/Tensor.h>

#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// Strides of a channels-last (nwc / nhwc / ndhwc) tensor of these sizes.
std::vector<int64_t> channels_last_strides(c10::IntArrayRef sizes);
std::vector<int64_t> contiguous_strides(c10::IntArrayRef sizes);
// oneDNN's channels-last tag of this rank (nwc, nhwc, ndhwc).
dnnl::memory::format_tag channels_last_tag(size_t rank);

// `t` laid out with `strides` (a oneDNN reorder; `t` itself when it already is).
at::Tensor relaid(const at::Tensor& t, c10::IntArrayRef strides, dnnl::stream& s);

// Whether ATen would take these convolution arguments; the output sizes (else `why`).
bool conv_shapes(const Plan& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor* bias,
                 std::vector<int64_t>* out, std::string* why);

// ATen's weight geometry as oneDNN's ([G,] OC, IC, k...), described by its own strides.
dnnl::memory::desc conv_weight_md(const Plan& p, const at::Tensor& w);

}  // namespace tj::jit::onednn
