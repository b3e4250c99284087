// oneDNN weights packed once into the layout a primitive picked, cached per
// storage (onednn_exec.cpp's convolutions and inner products). An entry is
// valid while its storage lives, its version counter has not moved and its
// bytes hash as when packed (a write through `.data` leaves the version
// counter as it was); a frozen constant (frozen_constants.h) is written by
// nobody, so its bytes are not hashed.
#pragma once

#include <cstdint>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/core/Tensor.h>

namespace tj::jit::onednn {

// `w` (described by `from`) in the layout `to`: the cached copy when it is
// current (`cache`: the caller lets it be cached). `gain`, when given, is set
// to weight_gain(w, out_dim) (onednn_finite.h), found when it is packed.
// `transform`, when given, makes the packed copy instead of a oneDNN reorder:
// it writes `w` laid out as `to` into a float buffer (onednn_f43.h's Winograd
// weight; `to` names the transform in the cache).
using WeightTransform = void (*)(const at::Tensor& w, float* out);
dnnl::memory packed_weight(const at::Tensor& w, const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                           bool cache, bool frozen, dnnl::stream& s, int64_t out_dim, double* gain = nullptr,
                           WeightTransform transform = nullptr);

struct WeightCounts {
  long long packs = 0;  // weight reorders (cache misses, or uncached weights)
  long long hits = 0;   // calls that found their packed weight
};
WeightCounts weight_counts();

// Drops every packed weight and zeroes the counts (onednn::reset).
void forget_packed_weights();

}  // namespace tj::jit::onednn
