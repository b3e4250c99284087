// torch.broadcast_tensors: eager expands each tensor to the common shape,
// and gives back a tensor that has that shape already as itself (the same
// object: `broadcast_tensors(a, a)[0] is a`). Traced the same way, so the
// outputs' identities and memory sharing are eager's.
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "tracer/translator.h"

namespace tj::tracer {

ValuePtr broadcast_tensors(InstructionTranslator& t, const std::vector<ValuePtr>& args, const Kwargs& kwargs,
                           bool& handled) {
  handled = false;
  if (!kwargs.empty() || args.empty()) return nullptr;
  const std::vector<ValuePtr>& tensors = args.size() == 1 && args[0]->is_sequence() ? args[0]->items : args;
  if (tensors.empty()) return nullptr;
  if (t.has_dynamic_inputs()) {
    // With dynamic dims the common shape is symbolic: the ATen op keeps it
    // so, and its results are new views. Where every tensor has the first
    // one's shape (a tensor broadcast with itself, or tensors of one
    // symbolic shape: `x` and `x == x`), each is itself, as in eager; the
    // comparison of symbolic sizes is a fact the guards check (fuzz
    // --dynamic seed 9964649). Other shapes: the ATen op.
    const ValuePtr& first = tensors.front();
    for (const ValuePtr& v : tensors)
      if (!v->is_tensor() || is_python_number(v) || unbacked(t, v)) return nullptr;
    ValuePtr first_shape = tensor_shape(t, first);
    for (const ValuePtr& v : tensors) {
      if (v == first) continue;
      ValuePtr shape = tensor_shape(t, v);
      ValuePtr same = compare_sizes(t, Py_EQ, shape, first_shape);
      if (!same && (shows_sizes(shape) || shows_sizes(first_shape))) return nullptr;
      if (same ? same->obj.get() != Py_True : v->meta().sizes != first->meta().sizes) return nullptr;
    }
    handled = true;
    return Value::sequence(ValueKind::tuple, std::vector<ValuePtr>(tensors));
  }
  std::vector<int64_t> shape;
  for (const ValuePtr& v : tensors) {
    if (!v->is_tensor() || is_python_number(v) || unbacked(t, v)) return nullptr;  // sizes known when it runs: the ATen op
    const std::vector<int64_t>& sizes = v->meta().sizes;
    if (sizes.size() > shape.size()) shape.insert(shape.begin(), sizes.size() - shape.size(), 1);
    for (size_t i = 0; i < sizes.size(); ++i) {
      int64_t& common = shape[shape.size() - sizes.size() + i];
      if (sizes[i] == common || sizes[i] == 1) continue;
      if (common != 1) return nullptr;  // eager raises: the ATen op raises the same
      common = sizes[i];
    }
  }
  handled = true;
  PyObject* target = PyTuple_New(static_cast<Py_ssize_t>(shape.size()));
  for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(target, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(shape[i]));
  ValuePtr target_value = Value::constant_steal(target);
  std::vector<ValuePtr> out;
  for (const ValuePtr& v : tensors) {
    out.push_back(v->meta().sizes == shape ? v : call_aten(t, "aten::expand", {v, target_value}));
    if (!out.back()) return nullptr;
  }
  return Value::sequence(ValueKind::tuple, std::move(out));
}

}  // namespace tj::tracer
