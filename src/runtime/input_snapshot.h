// InputSnapshot: what a graph may write in its callers' tensors, kept while
// it runs, so that a graph failing midway can be undone and its frame rerun
// as eager's bytecode (compiled_graph.h).
//
// Taken before the call for the inputs the graph may write
// (graph/effects.h): a copy of each one's data and, when the graph changes
// metadata (t_, unsqueeze_, set_), its storage, sizes, strides and offset.
// An input that requires grad is not copied (its autograd history could
// not be put back); its version counter is kept instead, and the failure
// can be undone only if the counter did not move, i.e. the graph failed
// before writing it. `restore` puts everything back, or says it cannot.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vector>

#include <ATen/core/Tensor.h>

namespace tj::runtime {

class InputSnapshot {
 public:
  InputSnapshot() = default;
  // `written`: positions in `args` (borrowed tensors) the graph may write.
  // Without `copy_data` only the version counters are kept (as for inputs
  // that require grad): restorable while the graph wrote none of them.
  InputSnapshot(const std::vector<int>& written, PyObject* const* args, bool with_metadata, bool copy_data = true);

  bool taken() const { return taken_; }
  // Puts the inputs back as they were; false when it cannot (an input that
  // requires grad was written). May throw a c10::Error.
  bool restore() const;

 private:
  struct Saved {
    at::Tensor tensor;  // the caller's tensor (same TensorImpl)
    at::Tensor data;    // a copy of `span`; undefined when the tensor requires grad
    at::Tensor span;    // the memory the tensor spans, flat (undefined when it has no element)
    int64_t version = 0;
    bool with_metadata = false;
    c10::Storage storage;
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
  };
  std::vector<Saved> saved_;
  bool taken_ = false;
};

}  // namespace tj::runtime
