// Large oneDNN step outputs on recycled memory (issue 41 item 1). A fresh
// multi-megabyte `at::empty` is served by glibc with a new mmap whose pages
// fault in on first touch, and it is unmapped again when freed: a step that
// writes a 38 MB Linear output (convnext_tiny's pointwise layers, 8 x 56 x 56
// x 384) spent ~40 % of its time in those faults (docs/benchmarks.md, "GEMM
// shapes"). Outputs of at least kMinRecycledBytes are allocated here: a freed
// block goes back to a bounded free list (by exact byte size) instead of the
// kernel, so the next step of that size writes memory already mapped. The
// storage's allocator is this one, so a tensor on it resizes as any other.
#pragma once

#include <cstddef>

#include <ATen/core/Tensor.h>

namespace tj::jit::onednn {

// Below this, glibc's heap serves an allocation from memory it keeps mapped.
constexpr size_t kMinRecycledBytes = size_t{1} << 20;

// An uninitialised contiguous float tensor like at::empty(sizes, options),
// on a recycled block when its size is at least kMinRecycledBytes.
at::Tensor recycled_empty(c10::IntArrayRef sizes, const at::TensorOptions& options);

struct RecycleCounts {
  long long reused = 0;     // allocations served by a freed block
  long long fresh = 0;      // allocations that took new memory
  size_t free_bytes = 0;    // bytes held on the free list now
};
RecycleCounts recycle_counts();

// Frees the blocks on the free list and zeroes the counts (onednn::reset).
void forget_recycled();

}  // namespace tj::jit::onednn
