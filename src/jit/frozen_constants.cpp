// Frozen constants at run time; see frozen_constants.h.
#include "jit/frozen_constants.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include <c10/core/GradMode.h>
#include <c10/util/intrusive_ptr.h>
#include <ATen/record_function.h>

#include "graph/interpreter.h"
#include "support/log.h"

namespace tj::jit {

namespace {

std::atomic<bool> g_freezing{true};
std::atomic<int64_t> g_freeze_after_override{-1};
std::mutex g_stats_mutex;
FreezeStats g_stats;

// What a frozen input was when the constants were computed.
struct Seen {
  std::optional<c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>> impl;
  const c10::TensorImpl* address = nullptr;  // `impl` keeps it from being reused while this lives
  const void* data = nullptr;
  uint32_t version = 0;
  uint64_t hash = 0;
};

Seen seen_of(const at::Tensor& t) {
  Seen s;
  s.impl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(t.getIntrusivePtr());
  s.address = t.unsafeGetTensorImpl();
  s.data = t.has_storage() ? t.data_ptr() : nullptr;
  s.version = t.is_inference() ? 0 : t.unsafeGetTensorImpl()->version_counter().current_version();
  s.hash = t.has_storage() && t.is_non_overlapping_and_dense() ? content_hash(t) : 0;
  return s;
}

bool same(const Seen& a, const Seen& b) {
  return a.address == b.address && a.impl && !a.impl->expired() && a.data == b.data && a.version == b.version &&
         a.hash == b.hash;
}

class Constants {
 public:
  Constants(std::shared_ptr<const graph::Graph> graph, std::vector<int> frozen)
      : graph_(std::move(graph)), frozen_(std::move(frozen)) {}

  std::vector<at::Tensor> get(c10::ArrayRef<at::Tensor> inputs) {
    RECORD_FUNCTION("tj::frozen constants check", c10::ArrayRef<const c10::IValue>{});
    std::vector<Seen> now;
    now.reserve(frozen_.size());
    for (int i : frozen_) now.push_back(seen_of(inputs[static_cast<size_t>(i)]));
    std::lock_guard<std::mutex> lock(mutex_);
    bool current = !values_.empty() && now.size() == seen_.size();
    for (size_t k = 0; current && k < now.size(); ++k) current = same(seen_[k], now[k]);
    if (current) {
      std::lock_guard<std::mutex> stats(g_stats_mutex);
      ++g_stats.hits;
      return values_;
    }
    TJ_LOG(perf, "llvm backend: frozen constants computed{} ({} input(s) they read)",
           values_.empty() ? "" : " again: a frozen input was written or replaced", frozen_.size());
    std::vector<at::Tensor> values;
    {
      c10::AutoGradMode no_grad(false);
      values = graph::interpret_or_throw(*graph_, inputs);
    }
    for (at::Tensor& v : values) {
      bool aliases = !v.has_storage();
      for (const at::Tensor& in : inputs) aliases = aliases || (in.defined() && in.has_storage() && v.is_alias_of(in));
      if (aliases) v = v.clone();  // a constant is ours alone: nothing else may write it
    }
    values_ = std::move(values);
    seen_ = std::move(now);
    std::lock_guard<std::mutex> stats(g_stats_mutex);
    ++g_stats.folds;
    return values_;
  }

 private:
  std::shared_ptr<const graph::Graph> graph_;
  std::vector<int> frozen_;
  std::mutex mutex_;
  std::vector<Seen> seen_;
  std::vector<at::Tensor> values_;
};

}  // namespace

void set_freezing(bool on) { g_freezing = on; }
bool freezing() { return g_freezing.load(); }

int64_t freeze_after() {
  static const int64_t from_env = [] {
    const char* env = std::getenv("TRACEJIT_FREEZE_AFTER");
    if (!env || !*env) return int64_t{1};
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    return end && *end == '\0' && v >= 0 ? static_cast<int64_t>(v) : int64_t{1};
  }();
  const int64_t o = g_freeze_after_override.load();
  return o >= 0 ? o : from_env;
}

void set_freeze_after(int64_t calls) { g_freeze_after_override = calls < 0 ? -1 : calls; }

uint64_t content_hash(const at::Tensor& w) {
  const size_t bytes = static_cast<size_t>(w.numel()) * w.element_size();
  const size_t words = bytes / sizeof(uint64_t), tail = bytes % sizeof(uint64_t);
  int64_t lowest = 0;  // the dense block starts at the element with the lowest address
  for (int64_t d = 0; d < w.dim(); ++d)
    if (w.stride(d) < 0) lowest += w.stride(d) * (w.size(d) - 1);
  const auto* base = static_cast<const char*>(w.data_ptr()) + lowest * w.element_size();
  uint64_t a = 0, b = 0;
  for (size_t i = 0; i < words; ++i) {
    uint64_t x;
    std::memcpy(&x, base + i * sizeof(uint64_t), sizeof x);
    a += x * (2 * i + 1);
    b ^= x + i;
  }
  for (size_t i = 0; i < tail; ++i) a += static_cast<uint64_t>(static_cast<unsigned char>(base[words * 8 + i])) << (8 * i);
  return a ^ (b * 0x9E3779B97F4A7C15ull);
}

CompiledFn with_frozen_constants(CompiledFn main, std::shared_ptr<const graph::Graph> constants,
                                 std::vector<int> frozen_inputs, std::shared_ptr<const graph::Graph> whole) {
  auto state = std::make_shared<Constants>(std::move(constants), std::move(frozen_inputs));
  auto op_by_op_left = std::make_shared<std::atomic<int64_t>>(whole ? freeze_after() : 0);
  return CompiledFn([main = std::move(main), state, whole = std::move(whole),
                     op_by_op_left](c10::ArrayRef<at::Tensor> inputs) {
    if (op_by_op_left->load() > 0 && op_by_op_left->fetch_sub(1) > 0) {
      TJ_LOG(perf, "llvm backend: a first call of a frozen graph runs op by op (TRACEJIT_FREEZE_AFTER): its "
                   "constants (batch norms folded, weights packed) are computed from a later call");
      {
        std::lock_guard<std::mutex> stats(g_stats_mutex);
        ++g_stats.op_by_op_calls;
      }
      RECORD_FUNCTION("tj::frozen graph op by op", c10::ArrayRef<const c10::IValue>{});
      c10::AutoGradMode no_grad(false);  // an inference graph: the compiled program records no gradient either
      return graph::interpret_or_throw(*whole, inputs);
    }
    std::vector<at::Tensor> values = state->get(inputs);
    std::vector<at::Tensor> all(inputs.begin(), inputs.end());
    all.insert(all.end(), values.begin(), values.end());
    return main(all);
  });
}

FreezeStats freeze_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  return g_stats;
}

void note_frozen_graph(int batch_norms_folded) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  ++g_stats.graphs_frozen;
  g_stats.batch_norms_folded += batch_norms_folded;
}

void reset_freeze_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  g_stats = FreezeStats{};
}

}  // namespace tj::jit
