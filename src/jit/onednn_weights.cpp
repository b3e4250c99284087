// The packed-weight cache of the oneDNN convolutions and inner products
// (see onednn_weights.h).
#include "jit/onednn_weights.h"

#include <mutex>
#include <unordered_map>

#include <ATen/record_function.h>
#include <c10/core/Storage.h>
#include <c10/util/intrusive_ptr.h>

#include "jit/frozen_constants.h"
#include "jit/onednn_finite.h"
#include "jit/onednn_memory.h"

namespace tj::jit::onednn {

using dnnl::memory;

namespace {

// One packed copy of a weight of one storage (the validity rule: onednn_weights.h).
struct PackedWeight {
  explicit PackedWeight(c10::weak_intrusive_ptr<c10::StorageImpl> s) : storage(std::move(s)) {}
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  int64_t offset = 0;
  memory::desc from, to;
  uint32_t version = 0;
  uint64_t hash = 0;
  double gain = 0;  // weight_gain when packed (onednn_finite.h)
  memory packed;
};

std::mutex g_mutex;  // guards g_weights and g_counts
std::unordered_multimap<const c10::StorageImpl*, PackedWeight> g_weights;
WeightCounts g_counts;

memory reorder_to(const at::Tensor& w, const memory::desc& from, const memory::desc& to, dnnl::stream& s,
                  WeightTransform transform) {
  RECORD_FUNCTION("tj::onednn weight pack", c10::ArrayRef<const c10::IValue>{});
  memory out(to, engine());
  if (transform) {
    transform(w, static_cast<float*>(out.get_data_handle()));
    return out;
  }
  memory src = wrap(from, w);
  dnnl::reorder(src, out).execute(s, src, out);
  return out;
}

}  // namespace

// `w` (described by `from`) in the layout `to`: the cached copy when it is current. `gain`, when given, is set to
// weight_gain(w, out_dim) (found when it is packed).
memory packed_weight(const at::Tensor& w, const memory::desc& from, const memory::desc& to, bool cache,
                     bool frozen, dnnl::stream& s, int64_t out_dim, double* gain, WeightTransform transform) {
  if (gain) *gain = 0;
  if (from == to && !transform) {
    if (gain) *gain = weight_gain(w, out_dim);
    return wrap(from, w);
  }
  cache = cache && w.has_storage() && !w.is_inference() && w.is_non_overlapping_and_dense();
  if (!cache) {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_counts.packs;
  }
  if (!cache) {
    if (gain) *gain = weight_gain(w, out_dim);
    return reorder_to(w, from, to, s, transform);
  }
  const c10::StorageImpl* key = w.storage().unsafeGetStorageImpl();
  const uint32_t version = w.unsafeGetTensorImpl()->version_counter().current_version();
  const uint64_t hash = frozen ? 0 : content_hash(w);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto range = g_weights.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    PackedWeight& p = it->second;
    if (p.storage.expired() || p.offset != w.storage_offset() || !(p.from == from) || !(p.to == to)) continue;
    if (p.version == version && p.hash == hash) {
      ++g_counts.hits;
      if (gain) *gain = p.gain;
      return p.packed;
    }
    p.packed = reorder_to(w, from, to, s, transform);  // written since: pack again
    p.version = version;
    p.hash = hash;
    p.gain = weight_gain(w, out_dim);
    if (gain) *gain = p.gain;
    ++g_counts.packs;
    return p.packed;
  }
  // entries of storages that died go first (their weak reference keeps only the StorageImpl's address taken)
  for (auto it = g_weights.begin(); it != g_weights.end();) it = it->second.storage.expired() ? g_weights.erase(it) : ++it;
  PackedWeight p(w.storage().getWeakStorageImpl());
  p.offset = w.storage_offset();
  p.from = from;
  p.to = to;
  p.version = version;
  p.hash = hash;
  p.packed = reorder_to(w, from, to, s, transform);
  p.gain = weight_gain(w, out_dim);
  if (gain) *gain = p.gain;
  ++g_counts.packs;
  memory out = p.packed;
  g_weights.emplace(key, std::move(p));
  return out;
}

WeightCounts weight_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_counts;
}

void forget_packed_weights() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_weights.clear();
  g_counts = WeightCounts{};
}

}  // namespace tj::jit::onednn
