// InputSnapshot; see input_snapshot.h.
#include "runtime/input_snapshot.h"

#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>

#include "support/tensor_bridge.h"

namespace tj::runtime {

namespace {

int64_t version_of(const at::Tensor& t) { return t.is_inference() ? 0 : static_cast<int64_t>(t._version()); }

// The memory `t` spans in its storage, as a flat tensor: what is saved and
// put back (an expanded or otherwise overlapping tensor cannot be copied
// into; its memory can).
at::Tensor span_of(const at::Tensor& t) {
  int64_t first = t.storage_offset(), last = first;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return at::Tensor();
    last += (t.size(d) - 1) * t.stride(d);
  }
  return at::empty({0}, t.options()).set_(t.storage(), first, {last - first + 1}, {1});
}

}  // namespace

InputSnapshot::InputSnapshot(const std::vector<int>& written, PyObject* const* args, bool with_metadata,
                             bool copy_data) {
  saved_.reserve(written.size());
  for (int i : written) {
    Saved s;
    s.tensor = unpack_tensor(args[i]);
    s.version = version_of(s.tensor);
    // an inference tensor has no version counter to tell whether it was written;
    // a leaf that requires grad is written only by ops that record no history
    // (`logical_not_`, no_grad), so its data alone is what a write changed
    // (not a tensor with history: a write rebases that, which a copy cannot undo)
    if ((copy_data || s.tensor.is_inference()) && (!s.tensor.requires_grad() || s.tensor.is_leaf())) {
      c10::AutoGradMode no_grad(false);
      s.span = span_of(s.tensor);
      s.data = s.span.defined() ? s.span.clone() : s.tensor.clone();
    }
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
    if (s.span.defined()) at::Tensor(s.span).copy_(s.data);
  }
  return true;
}

}  // namespace tj::runtime
