// Buffers the llvm backend's executor (llvm_backend.cpp) keeps for its kernels' intermediate outputs between
// calls: a BufferPool per executable, and the group of executables of one program structure (a dynamic entry's
// sizes) of which only the one that ran last keeps its buffers.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include "graph/graph.h"

namespace tj::jit {

// Buffers of released intermediates, by size in bytes, for kernel outputs
// of the same size: the liveness the lowering computed (each slot's last
// use) decides when a buffer becomes free; a buffer is taken only when no
// other tensor or view holds its storage. It outlives the call, so a
// steady-state call allocates nothing for its intermediates. `drop` gives
// its buffers back (a PoolGroup's other member ran). Counted in
// buffers_reused() and pooled_bytes() (llvm_backend.h).
class BufferPool {
 public:
  BufferPool() = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool() { drop(); }

  static size_t nbytes(const graph::TensorMeta& m);
  // The program's internal kernel outputs: at most this many buffers of each size are kept.
  void want(const graph::TensorMeta& m) { ++wanted_[nbytes(m)]; }
  // `value` was released: keep its storage when nothing else holds it and a kernel output can use it.
  void offer(c10::IValue& value);
  // A tensor with these sizes/strides on a pooled buffer of exactly its size, else a fresh one.
  at::Tensor take(const graph::TensorMeta& m);
  void drop();

 private:
  std::unordered_map<size_t, int> wanted_;  // set while compiling, then only read
  std::mutex mutex_;
  std::unordered_multimap<size_t, c10::Storage> free_;
};

// The executables of one program structure (the same steps and kernels;
// sizes aside): a dynamic entry's sizes, each compiled on its own. Only the
// one that ran last keeps its pool's buffers, so an entry called at many
// sizes holds the intermediates of one size, not of each (a program at
// another size rarely has buffers of the same byte sizes to share).
// Programs of another structure (the other graphs of a model) are not
// affected: they keep theirs.
struct PoolGroup {
  std::mutex mutex;
  std::atomic<BufferPool*> holder{nullptr};  // the pool allowed to keep buffers; changed under `mutex`
};

// The group of `structure` (a hash of the program's kernels and extern ops), shared while any executable holds it.
std::shared_ptr<PoolGroup> pool_group(const std::string& structure);

// A pool of its group: only the pool that ran last keeps buffers.
struct GroupPool {
  mutable BufferPool pool;
  std::shared_ptr<PoolGroup> group;

  // Makes this pool its group's holder: the previous holder's buffers are given back.
  void hold() const;
  ~GroupPool();
};

}  // namespace tj::jit
