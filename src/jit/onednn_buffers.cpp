// The recycling allocator of large oneDNN step outputs (see onednn_buffers.h):
// a c10::Allocator whose DataPtr deleter puts the block on a free list keyed
// by its byte size, bounded in blocks per size and in bytes overall; what
// does not fit is freed.
#include "jit/onednn_buffers.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include <ATen/ops/empty.h>
#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>
#include <c10/util/strides.h>

namespace tj::jit::onednn {

namespace {

// At most this many free blocks of one size, and this many free bytes in all.
constexpr size_t kPerSize = 4;
constexpr size_t kMaxFreeBytes = size_t{256} << 20;
constexpr size_t kAlignment = 64;  // as ATen's CPU allocator

struct Block {
  void* data;
  size_t size;
};

struct FreeList {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free;
  size_t free_bytes = 0;
  RecycleCounts counts;
};

// Never destroyed: a tensor freed while the process exits still gives its block back to it.
FreeList& free_list() {
  static FreeList* list = new FreeList;
  return *list;
}

void give_back(void* ctx) {
  auto* block = static_cast<Block*>(ctx);
  FreeList& list = free_list();
  {
    std::lock_guard<std::mutex> lock(list.mutex);
    std::vector<void*>& same = list.free[block->size];
    if (same.size() < kPerSize && list.free_bytes + block->size <= kMaxFreeBytes) {
      same.push_back(block->data);
      list.free_bytes += block->size;
      delete block;
      return;
    }
  }
  std::free(block->data);
  delete block;
}

class RecyclingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    if (n == 0) return {nullptr, nullptr, &give_back_none, c10::Device(c10::DeviceType::CPU)};
    void* data = nullptr;
    FreeList& list = free_list();
    {
      std::lock_guard<std::mutex> lock(list.mutex);
      auto it = list.free.find(n);
      if (it != list.free.end() && !it->second.empty()) {
        data = it->second.back();
        it->second.pop_back();
        list.free_bytes -= n;
        ++list.counts.reused;
      } else {
        ++list.counts.fresh;
      }
    }
    if (!data && posix_memalign(&data, kAlignment, n) != 0) throw std::bad_alloc();
    return {data, new Block{data, n}, &give_back, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

 private:
  static void give_back_none(void*) {}
};

RecyclingAllocator& allocator() {
  static RecyclingAllocator* a = new RecyclingAllocator;
  return *a;
}

}  // namespace

at::Tensor recycled_empty(c10::IntArrayRef sizes, const at::TensorOptions& options) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const size_t bytes = static_cast<size_t>(numel) * options.dtype().itemsize();
  if (bytes < kMinRecycledBytes || !options.device().is_cpu()) return at::empty(sizes, options);
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, allocator().allocate(bytes), &allocator(),
                       /*resizable=*/true);
  return at::empty({0}, options).set_(storage, 0, sizes, c10::contiguous_strides(sizes));
}

RecycleCounts recycle_counts() {
  FreeList& list = free_list();
  std::lock_guard<std::mutex> lock(list.mutex);
  RecycleCounts out = list.counts;
  out.free_bytes = list.free_bytes;
  return out;
}

void forget_recycled() {
  FreeList& list = free_list();
  std::unordered_map<size_t, std::vector<void*>> gone;
  {
    std::lock_guard<std::mutex> lock(list.mutex);
    gone.swap(list.free);
    list.free_bytes = 0;
    list.counts = RecycleCounts{};
  }
  for (auto& [size, blocks] : gone)
    for (void* p : blocks) std::free(p);
}

}  // namespace tj::jit::onednn
