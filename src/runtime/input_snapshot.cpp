// InputSnapshot; see input_snapshot.h.
#include "runtime/input_snapshot.h"

#include <c10/core/GradMode.h>

#include "tracer/tensor_bridge.h"

namespace tj::runtime {

namespace {

int64_t version_of(const at::Tensor& t) { return t.is_inference() ? 0 : static_cast<int64_t>(t._version()); }

}  // namespace

InputSnapshot::InputSnapshot(const std::vector<int>& written, PyObject* const* args, bool with_metadata) {
  saved_.reserve(written.size());
  for (int i : written) {
    Saved s;
    s.tensor = tracer::unpack_tensor(args[i]);
    s.version = version_of(s.tensor);
    if (!s.tensor.requires_grad()) s.data = s.tensor.clone();
    s.with_metadata = with_metadata;
    if (with_metadata) {
      s.storage = s.tensor.storage();
      s.sizes = s.tensor.sizes().vec();
      s.strides = s.tensor.strides().vec();
      s.offset = s.tensor.storage_offset();
    }
    saved_.push_back(std::move(s));
  }
  taken_ = true;
}

bool InputSnapshot::restore() const {
  for (const Saved& s : saved_)
    if (!s.data.defined() && version_of(s.tensor) != s.version) return false;
  c10::AutoGradMode no_grad(false);
  for (const Saved& s : saved_) {
    if (!s.data.defined()) continue;  // requires grad, not written
    c10::TensorImpl* impl = s.tensor.unsafeGetTensorImpl();
    if (s.with_metadata && (!s.tensor.storage().is_alias_of(s.storage) || s.tensor.sizes() != s.sizes ||
                            s.tensor.strides() != s.strides || s.tensor.storage_offset() != s.offset)) {
      impl->set_storage_keep_dtype(s.storage);
      impl->set_sizes_and_strides(s.sizes, s.strides);
      impl->set_storage_offset(s.offset);
    }
    at::Tensor(s.tensor).copy_(s.data);
  }
  return true;
}

}  // namespace tj::runtime
