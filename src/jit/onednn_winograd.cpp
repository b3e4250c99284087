// Which convolutions run as oneDNN's Winograd, and the blocked twins of
// their results (see onednn_winograd.h).
#include "jit/onednn_winograd.h"
#include "jit/onednn_exec.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include <ATen/record_function.h>

#include "jit/onednn_memory.h"

namespace tj::jit::onednn {

using dnnl::memory;

// TRACEJIT_WINOGRAD (environment, read once): "0" keeps every convolution direct.
bool winograd_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("TRACEJIT_WINOGRAD");
    return !(env && std::string(env) == "0");
  }();
  return on;
}

namespace {
std::atomic<int64_t> g_after_override{-1};
}  // namespace

int64_t winograd_after() {
  static const int64_t from_env = [] {
    const char* env = std::getenv("TRACEJIT_WINOGRAD_AFTER");
    if (!env || !*env) return int64_t{256};
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    return *end || v < 0 ? int64_t{256} : static_cast<int64_t>(v);
  }();
  const int64_t o = g_after_override.load();
  return o >= 0 ? o : from_env;
}

void set_winograd_after(int64_t pixels) { g_after_override = pixels; }

// A convolution oneDNN may run as Winograd's F(4x4, 3x3) (jit_wino_4x3): 2-d, 3x3, stride 1, undilated, one
// group. 2.3-2.7x its direct convolution's speed on this project's AVX-512 host (resnet shapes, one thread);
// its rounding error against float64 measured 1-2x the direct one's (RMS 8e-7 relative at K = 576).
bool winograd_shape(const Plan& p, const at::Tensor& w) {
  return winograd_enabled() && !p.transposed && p.groups == 1 && w.dim() == 4 && w.size(2) == 3 &&
         w.size(3) == 3 && p.stride == std::vector<int64_t>{1, 1} && p.dilation == std::vector<int64_t>{1, 1};
}

bool blocked_direct_shape(const Plan& p, const at::Tensor& x, const at::Tensor& w) {
  static const bool on = [] {
    const char* env = std::getenv("TRACEJIT_ONEDNN_BLOCKED");
    return !(env && std::string(env) == "0");
  }();
  return on && !p.transposed && p.groups == 1 && x.dim() == 4 && w.dim() == 4 && w.size(2) * w.size(3) > 1 &&
         p.stride.size() == 2 && (p.stride[0] > 1 || p.stride[1] > 1) && x.size(1) % 8 == 0 && w.size(0) % 8 == 0;
}

namespace {
// the twins of one call's live chain: a block's input (read again as a residual), its inner result, its output
constexpr size_t kTwins = 4;
thread_local std::vector<BlockedTwin> t_twins;
std::atomic<long long> g_deferred{0}, g_materialized{0};

bool alive(const BlockedTwin& t) { return !t.impl.expired(); }

// Reorders a pending twin's buffer out into its tensor (alive: its TensorImpl, so its storage, is).
void write_out(BlockedTwin& t) {
  if (!t.pending) return;
  t.pending = false;
  if (!alive(t)) return;
  RECORD_FUNCTION("tj::onednn reorder", c10::ArrayRef<const c10::IValue>{});
  dnnl::stream s(engine());
  memory from(t.md, engine(), t.buffer.data_ptr()), to(t.out_md, engine(), const_cast<void*>(t.data));
  dnnl::reorder(from, to).execute(s, from, to);
  s.wait();
  ++g_materialized;
}
}  // namespace

const BlockedTwin* twin_of(const at::Tensor& x, const memory::desc& md) {
  if (x.is_inference()) return nullptr;  // no version counter (torch.inference_mode)
  for (const BlockedTwin& t : t_twins)
    if (t.address == x.unsafeGetTensorImpl() && alive(t) && x.has_storage() && t.data == x.data_ptr() &&
        t.version == x.unsafeGetTensorImpl()->version_counter().current_version() && t.md == md)
      return &t;
  return nullptr;
}

void materialize(const at::Tensor& t) {
  if (!t.defined()) return;
  for (BlockedTwin& twin : t_twins)
    if (twin.pending && twin.address == t.unsafeGetTensorImpl()) write_out(twin);
}

void remember_twin(const at::Tensor& out, const memory::desc& md, at::Tensor buffer, bool pending,
                   const memory::desc& out_md) {
  if (out.is_inference()) return;  // (the caller writes `out` itself then: pending is only for a twin kept)
  for (auto it = t_twins.begin(); it != t_twins.end();)  // dead tensors' twins first
    it = alive(*it) ? ++it : t_twins.erase(it);
  if (t_twins.size() == kTwins) {
    write_out(t_twins.front());
    t_twins.erase(t_twins.begin());
  }
  BlockedTwin t{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(out.getIntrusivePtr()),
                out.unsafeGetTensorImpl(), out.data_ptr(),
                out.unsafeGetTensorImpl()->version_counter().current_version(), md, std::move(buffer), pending,
                out_md};
  if (pending) ++g_deferred;
  t_twins.push_back(std::move(t));
}

TwinCounts twin_counts() { return TwinCounts{g_deferred.load(), g_materialized.load()}; }

void forget_twins() {
  for (BlockedTwin& t : t_twins) write_out(t);
  t_twins.clear();
  g_deferred = 0;
  g_materialized = 0;
}

}  // namespace tj::jit::onednn