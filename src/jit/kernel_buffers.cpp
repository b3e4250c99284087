// The llvm executor's buffer pools; see kernel_buffers.h.
#include "jit/kernel_buffers.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty_strided.h>

#include "jit/llvm_backend.h"

namespace tj::jit {

namespace {
std::atomic<long long> g_buffers_reused{0};
std::atomic<long long> g_pooled_bytes{0};
}  // namespace

long long buffers_reused() { return g_buffers_reused.load(); }
long long pooled_bytes() { return g_pooled_bytes.load(); }

size_t BufferPool::nbytes(const graph::TensorMeta& m) {
  return at::detail::computeStorageNbytes(m.sizes, m.strides, c10::elementSize(m.dtype));
}

void BufferPool::offer(c10::IValue& value) {
  if (!value.isTensor()) return;
  const at::Tensor& t = value.toTensor();
  if (!t.defined() || !t.device().is_cpu() || t.requires_grad() || t.use_count() != 1 || !t.has_storage() ||
      t.storage().use_count() != 1 || t.storage().nbytes() == 0)
    return;
  const size_t size = t.storage().nbytes();
  auto wanted = wanted_.find(size);
  if (wanted == wanted_.end()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<int>(free_.count(size)) >= wanted->second) return;
  free_.emplace(size, t.storage());
  g_pooled_bytes += static_cast<long long>(size);
}

at::Tensor BufferPool::take(const graph::TensorMeta& m) {
  c10::Storage storage;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(nbytes(m));
    if (it != free_.end()) {
      storage = std::move(it->second);
      free_.erase(it);
      g_pooled_bytes -= static_cast<long long>(storage.nbytes());
    }
  }
  if (!storage) return at::empty_strided(m.sizes, m.strides, at::TensorOptions().dtype(m.dtype));
  ++g_buffers_reused;
  // The tensor at::empty({0}) then set_(storage, 0, sizes, strides) would
  // make (a CPU TensorImpl over the storage), without their two dispatcher
  // calls: a take per kernel output per call (train_mlp: 5 a step).
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), c10::scalarTypeToTypeMeta(m.dtype));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(m.sizes, m.strides);
  return t;
}

void BufferPool::drop() {
  std::unordered_multimap<size_t, c10::Storage> gone;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [size, storage] : free_) g_pooled_bytes -= static_cast<long long>(size);
  gone.swap(free_);
}

std::shared_ptr<PoolGroup> pool_group(const std::string& structure) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::weak_ptr<PoolGroup>> groups;
  std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<PoolGroup>& slot = groups[structure];
  std::shared_ptr<PoolGroup> group = slot.lock();
  if (!group) {
    group = std::make_shared<PoolGroup>();
    slot = group;
  }
  return group;
}

void GroupPool::hold() const {
  if (group->holder.load(std::memory_order_acquire) == &pool) return;  // the steady state: no lock
  std::lock_guard<std::mutex> lock(group->mutex);
  if (group->holder == &pool) return;
  if (BufferPool* previous = group->holder.load()) previous->drop();
  group->holder = &pool;
}

GroupPool::~GroupPool() {
  if (!group) return;
  std::lock_guard<std::mutex> lock(group->mutex);
  if (group->holder == &pool) group->holder = nullptr;
}

}  // namespace tj::jit
