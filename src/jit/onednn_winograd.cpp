// Which convolutions run as oneDNN's Winograd, and the blocked twins of
// their results (see onednn_winograd.h).
#include "jit/onednn_winograd.h"

#include <cstdlib>
#include <string>

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

// A convolution oneDNN may run as Winograd's F(4x4, 3x3) (jit_wino_4x3): 2-d, 3x3, stride 1, undilated, one
// group. 2.3-2.7x its direct convolution's speed on this project's AVX-512 host (resnet shapes, one thread);
// its rounding error against float64 measured 1-2x the direct one's (RMS 8e-7 relative at K = 576).
bool winograd_shape(const Plan& p, const at::Tensor& w) {
  return winograd_enabled() && !p.transposed && p.groups == 1 && w.dim() == 4 && w.size(2) == 3 &&
         w.size(3) == 3 && p.stride == std::vector<int64_t>{1, 1} && p.dilation == std::vector<int64_t>{1, 1};
}

namespace {
constexpr size_t kTwins = 3;
thread_local std::vector<BlockedTwin> t_twins;
}  // namespace

const BlockedTwin* twin_of(const at::Tensor& x, const memory::desc& md) {
  if (x.is_inference()) return nullptr;  // no version counter (torch.inference_mode)
  for (const BlockedTwin& t : t_twins)
    if (t.address == x.unsafeGetTensorImpl() && !t.impl.expired() && x.has_storage() && t.data == x.data_ptr() &&
        t.version == x.unsafeGetTensorImpl()->version_counter().current_version() && t.md == md)
      return &t;
  return nullptr;
}

void remember_twin(const at::Tensor& out, const memory::desc& md, at::Tensor buffer) {
  if (out.is_inference()) return;
  if (t_twins.size() == kTwins) t_twins.erase(t_twins.begin());
  BlockedTwin t{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(out.getIntrusivePtr()),
                out.unsafeGetTensorImpl(), out.data_ptr(),
                out.unsafeGetTensorImpl()->version_counter().current_version(), md, std::move(buffer)};
  t_twins.push_back(std::move(t));
}

void forget_twins() { t_twins.clear(); }

}  // namespace tj::jit::onednn
