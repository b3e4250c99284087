// Dynamic shapes in the tracer, first part (issue 15): which dims of an
// input tensor are traced dynamic, and the rule that keeps that correct
// without symbolic integers yet.
//
// A dim is dynamic when the frame asks for it — `dynamic=True` (every dim),
// `dynamic=None` after a guard failed only because that dim's size changed
// (the runtime's automatic table, FrameInputs::automatic), or
// `tracejit.mark_dynamic(t, d)` — unless `dynamic=False` or
// `tracejit.mark_static(t, d)` says otherwise. Only dims of size >= 2 of a
// dense tensor (0 and 1 change broadcasting: they stay exact), so the guard
// can check "size >= 2, strides those of a dense tensor with the traced
// dim order".
//
// The graph is traced with the concrete sizes; the runtime compiles it
// again for each new size signature (the same ops, metas inferred anew).
// That is only right while nothing in the trace depends on a size: every
// place where a size reaches Python (x.shape, x.size(), len(x), numel(),
// stride(), iterating a tensor, an index or copy shaped by sizes) calls
// note_sizes_read, and then the trace keeps every size exact (the guards
// are specialized; the `dynamic` log says where). Symbolic integers, which
// would let such reads stay symbolic with guards on the facts used, are
// the next part of the issue.
#include <algorithm>

#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// The ints in `obj.__dict__[name]` (a set, list or tuple), else none.
std::vector<int64_t> marked_dims(PyObject* obj, const char* name) {
  std::vector<int64_t> out;
  PyObject** dict_ptr = _PyObject_GetDictPtr(obj);
  PyObject* dict = dict_ptr ? *dict_ptr : nullptr;
  PyObject* dims = dict ? PyDict_GetItemString(dict, name) : nullptr;  // borrowed
  if (!dims) return out;
  PyRef seq = PyRef::steal(PySequence_Fast(dims, ""));
  if (!seq) {
    PyErr_Clear();  // marks are set by torch._dynamo.mark_dynamic & co.: an unreadable one marks nothing
    return out;
  }
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.get()); ++i) {
    long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq.get(), i));
    if (d == -1 && PyErr_Occurred()) PyErr_Clear();  // as above: a dim that is no int is not marked
    else out.push_back(d);
  }
  return out;
}

// Every element at one place, no gaps: a permutation of a contiguous tensor
// (dims of size 1 may have any stride).
bool dense(const graph::TensorMeta& t) {
  std::vector<size_t> order;
  for (size_t d = 0; d < t.sizes.size(); ++d)
    if (t.sizes[d] != 1) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.strides[a] < t.strides[b]; });
  int64_t expected = 1;
  for (size_t d : order) {
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

}  // namespace

std::vector<bool> InstructionTranslator::dynamic_dims_for(PyObject* obj, const graph::TensorMeta& t,
                                                          const Source& source, std::string* why) const {
  if (frame_.dynamic == 0) return {};
  const int64_t rank = static_cast<int64_t>(t.sizes.size());
  std::vector<bool> dims(static_cast<size_t>(rank), frame_.dynamic == 1);
  *why = frame_.dynamic == 1 ? "dynamic=True" : "";
  if (frame_.dynamic == -1 && frame_.automatic) {
    auto seen = frame_.automatic->find(source.to_string());
    if (seen != frame_.automatic->end() && seen->second.size() == dims.size()) {
      dims = seen->second;
      *why = "automatic: its size changed";
    }
  }
  // PyTorch's `set` of dims, kept on the tensor by tracejit.mark_dynamic / mark_static
  for (int64_t d : marked_dims(obj, "_tracejit_dynamic_dims"))
    if (d >= 0 && d < rank) {
      dims[static_cast<size_t>(d)] = true;
      *why = "mark_dynamic";
    }
  for (int64_t d : marked_dims(obj, "_tracejit_static_dims"))
    if (d >= 0 && d < rank) dims[static_cast<size_t>(d)] = false;
  if (!dense(t)) return {};
  bool any = false;
  for (int64_t d = 0; d < rank; ++d) {
    if (t.sizes[static_cast<size_t>(d)] < 2) dims[static_cast<size_t>(d)] = false;
    any = any || dims[static_cast<size_t>(d)];
  }
  if (!any) return {};
  return dims;
}

void InstructionTranslator::note_sizes_read(const char* what) {
  if (shared_->sizes_read) return;
  Unsupported at;
  const graph::SourceLoc loc = current_loc();
  at.reason = what;
  at.filename = loc.file;
  at.lineno = loc.line;
  shared_->sizes_read = std::move(at);
}

}  // namespace tj::tracer
