// Tensor indexing during tracing, op for op as eager PyTorch does it:
// THPVariable_getitem / THPVariable_setitem
// (torch/csrc/autograd/python_variable_indexing.cpp), whose C++ mirror is
// at::indexing::get_item / set_item / copy_to in <ATen/TensorIndexing.h>.
// The recorded nodes are the ones eager dispatches (so views, autograd node
// names, strides and overlap errors come out the same):
//   - items are applied left to right (`applySlicing`): an int is a
//     `select`, a slice a `slice` (skipped inside a tuple when it is
//     [0:size:1], always taken for a lone slice on read), None an
//     `unsqueeze`, Ellipsis skips dims; tensors are collected, per dim, for
//     one `index` / `index_put_`;
//   - a read that applied nothing returns an `alias` (`x[...]` is a new view);
//   - a write converts a Python number to a 0-d tensor of the destination's
//     dtype and copies it as `copy_to` does: `copy_` for equal sizes,
//     `fill_` for a 0-d value, else the value without leading 1s, expanded.
// What eager decides from tensor data (a 0-d integer tensor as an index)
// is unsupported.
#include <algorithm>
#include <optional>

#include "graph/unbacked_sizes.h"
#include "support/tensor_bridge.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"

namespace tj::tracer {

namespace {

bool is_int(PyObject* o) { return PyLong_Check(o) && !PyBool_Check(o); }

ValuePtr int_constant(int64_t x) { return Value::constant_steal(PyLong_FromLongLong(x)); }

ValuePtr ints_constant(const std::vector<int64_t>& xs) {
  std::vector<ValuePtr> items;
  for (int64_t x : xs) items.push_back(int_constant(x));
  return Value::sequence(ValueKind::list, std::move(items));
}

std::vector<int64_t> without_leading_ones(const std::vector<int64_t>& sizes) {
  size_t first = 0;
  while (first < sizes.size() && sizes[first] == 1) ++first;
  return {sizes.begin() + static_cast<long>(first), sizes.end()};
}

PyObject* const_obj(const ValuePtr& v) { return v->is_constant() ? v->obj.get() : nullptr; }

// The items of an index: a tuple's items, or the index alone.
std::vector<ValuePtr> index_items(const ValuePtr& index, bool* is_tuple) {
  *is_tuple = true;
  if (index->kind == ValueKind::tuple) return index->items;
  if (index->is_constant() && PyTuple_Check(index->obj.get())) {
    std::vector<ValuePtr> out;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(index->obj.get()); ++i)
      out.push_back(Value::constant(PyTuple_GET_ITEM(index->obj.get(), i)));
    return out;
  }
  *is_tuple = false;
  return {index};
}

bool is_mask_dtype(c10::ScalarType d) { return d == c10::ScalarType::Bool || d == c10::ScalarType::Byte; }

// Dims an index names: everything but None, Ellipsis and bools; a mask its dims.
int64_t specified_dims(const std::vector<ValuePtr>& items) {
  int64_t count = 0;
  for (const auto& i : items) {
    if (i->is_tensor()) {
      count += is_mask_dtype(i->meta().dtype) ? static_cast<int64_t>(i->meta().sizes.size()) : 1;
      continue;
    }
    PyObject* o = const_obj(i);
    if (o && (o == Py_None || o == Py_Ellipsis || PyBool_Check(o))) continue;
    ++count;
  }
  return count;
}

// `self.slice(dim, start, stop, step)`, or `self` when the optimization
// applies (start 0, stop the size, step 1). Null after unsupported().
ValuePtr apply_slice(InstructionTranslator& t, const ValuePtr& self, int64_t dim, PyObject* slice, bool optimize) {
  Py_ssize_t start, stop, step;
  if (PySlice_Unpack(slice, &start, &stop, &step) < 0) {
    clear_expected_error({PyExc_ValueError, PyExc_TypeError});  // step 0, a bound that is no index; unsupported() names any other
    return t.unsupported("a slice with a bad step (raises)"), nullptr;
  }
  if (step <= 0) return t.unsupported("a tensor slice with a step that is not positive (raises)"), nullptr;
  const auto& sizes = self->meta().sizes;
  // `:` (stop PY_SSIZE_T_MAX) is a slice node for every size, as in eager: no size read
  // (a dim that depends on data: the slice node, which gives the same values)
  if (optimize && start == 0 && step == 1 && dim < static_cast<int64_t>(sizes.size()) && stop != PY_SSIZE_T_MAX &&
      !graph::unbacked_dim(*self->node, dim)) {
    bool handled = false;  // a dynamic size: whether it equals `stop` is a fact
    ValuePtr size = tensor_size(t, self, dim);
    ValuePtr same = symint_compare(t, Py_EQ, int_constant(stop), size, handled);
    if (handled ? same->obj.get() == Py_True : stop == sizes[static_cast<size_t>(dim)]) return self;
  }
  auto* s = reinterpret_cast<PySliceObject*>(slice);
  return call_aten(t, "aten::slice",
                   {self, int_constant(dim), Value::constant(s->start), Value::constant(s->stop), int_constant(step)});
}

// What applySlicing leaves: the view, and the tensor indices by dim of it
// (None where a dim is not indexed).
struct Sliced {
  ValuePtr view;
  std::vector<ValuePtr> tensor_indices;
};

std::optional<Sliced> apply_slicing(InstructionTranslator& t, const ValuePtr& self, const std::vector<ValuePtr>& items,
                                    bool optimize) {
  const int64_t ndim = static_cast<int64_t>(self->meta().sizes.size());
  const int64_t specified = specified_dims(items);
  if (specified > ndim) {
    t.unsupported("too many indices for tensor of dimension " + std::to_string(ndim) + " (raises)");
    return std::nullopt;
  }
  Sliced out{self, {}};
  int64_t dim = 0;
  auto record = [&](ValuePtr index) {
    out.tensor_indices.resize(static_cast<size_t>(dim + 1), Value::constant(Py_None));
    out.tensor_indices[static_cast<size_t>(dim)] = std::move(index);
    ++dim;
  };
  for (const auto& item : items) {
    PyObject* o = const_obj(item);
    ValuePtr next;
    if (item->is_symint()) {  // x[n] of a size n
      next = call_aten(t, "aten::select", {out.view, int_constant(dim), item});
      if (!next) return std::nullopt;
      out.view = next;
      continue;
    }
    if (item->kind == ValueKind::slice) {  // x[:T]: a slice node with the size as a bound (eager's [0:size] shortcut
                                           // only changes which view object comes back, not its values)
      ValuePtr step = specialize(t, item->items[2]);
      if (step->obj.get() != Py_None && !(is_int(step->obj.get()) && PyLong_AsLong(step->obj.get()) > 0))
        return t.unsupported("a tensor slice with a step that is not a positive int"), std::nullopt;
      // x[:lengths[0]]: a 0-d integer tensor bound is its value when the graph runs
      ValuePtr start = unbacked_int(t, item->items[0]), stop = start ? unbacked_int(t, item->items[1]) : nullptr;
      if (!stop) return std::nullopt;
      next = call_aten(t, "aten::slice", {out.view, int_constant(dim), start, stop,
                                          step->obj.get() == Py_None ? int_constant(1) : step});
      if (!next) return std::nullopt;
      out.view = next;
      ++dim;
      continue;
    }
    if (item->is_tensor()) {
      const graph::TensorMeta& m = item->meta();
      if (!m.sizes.empty()) {
        record(item);
        continue;
      }
      if (!is_mask_dtype(m.dtype))
        return t.unsupported("a 0-d integer tensor as an index (eager reads its value)"), std::nullopt;
      // A 0-d mask: a new dim of size 1, indexed by the mask as a 1-element mask.
      next = call_aten(t, "aten::unsqueeze", {out.view, int_constant(dim)});
      ValuePtr mask = next ? call_aten(t, "aten::unsqueeze", {item, int_constant(0)}) : nullptr;
      if (!mask) return std::nullopt;
      out.view = next;
      record(mask);
      continue;
    }
    if (item->kind == ValueKind::list || (o && PyList_CheckExact(o))) {
      // x[[0, 2]], x[:, [[0], [1]]]: a list of ints (or bools) indexes as
      // the tensor it makes, as in eager
      ValuePtr index = tensor_of_data(t, item, {});
      if (t.failed()) return std::nullopt;
      if (index && (index->meta().dtype == c10::ScalarType::Long || index->meta().dtype == c10::ScalarType::Bool)) {
        record(index);
        continue;
      }
    }
    if (!o) return t.unsupported("tensor index of type " + item->type_name()), std::nullopt;
    if (o == Py_Ellipsis) {
      dim += ndim - specified;
      continue;
    }
    if (o == Py_None) {
      next = call_aten(t, "aten::unsqueeze", {out.view, int_constant(dim)});
      ++dim;
    } else if (PyBool_Check(o)) {
      // A new dim of size 1, indexed by [0] (True) or [] (False).
      next = call_aten(t, "aten::unsqueeze", {out.view, int_constant(dim)});
      ValuePtr index = next ? call_aten(t, "aten::zeros", {ints_constant({o == Py_True ? 1 : 0})},
                                        {{"dtype", Value::constant_steal(dtype_object(c10::ScalarType::Long))}})
                            : nullptr;
      if (!index) return std::nullopt;
      out.view = next;
      record(index);
      continue;
    } else if (is_int(o)) {
      next = call_aten(t, "aten::select", {out.view, int_constant(dim), item});
    } else if (PySlice_Check(o)) {
      next = apply_slice(t, out.view, dim, o, optimize);
      ++dim;
    } else {
      return t.unsupported(std::string("tensor index of type ") + Py_TYPE(o)->tp_name), std::nullopt;
    }
    if (!next) return std::nullopt;
    out.view = next;
  }
  return out;
}

// Whether each mask among `indices` has the sizes of the dims of `view` it
// covers (eager raises IndexError otherwise; the meta kernel of index_put_
// does not check).
bool masks_fit(const ValuePtr& view, const std::vector<ValuePtr>& indices) {
  const auto& sizes = view->meta().sizes;
  size_t dim = 0;
  for (const auto& index : indices) {
    if (!index->is_tensor() || !is_mask_dtype(index->meta().dtype)) {
      ++dim;
      continue;
    }
    for (int64_t size : index->meta().sizes)
      if (dim >= sizes.size() || sizes[dim++] != size) return false;
  }
  return true;
}

// `copy_to(dst, src)` of TensorIndexing.h.
bool copy_to(InstructionTranslator& t, const ValuePtr& dst, const ValuePtr& src) {
  const auto& dst_sizes = dst->meta().sizes;
  const auto& src_sizes = src->meta().sizes;
  // copy_ broadcasts src as the view + expand below would: equal sizes or not, the same values
  if (dst_sizes == src_sizes) return call_aten(t, "aten::copy_", {dst, src}) != nullptr;
  if (src_sizes.empty()) return call_aten(t, "aten::fill_", {dst, src}) != nullptr;
  if (unbacked_size_read(t, dst, "an indexed assignment") || unbacked_size_read(t, src, "an indexed assignment"))
    return false;
  t.note_sizes_read("an indexed assignment shaped by the sizes");
  ValuePtr view = call_aten(t, "aten::view", {src, ints_constant(without_leading_ones(src_sizes))});
  if (view && view->meta().sizes != dst_sizes) view = call_aten(t, "aten::expand", {view, ints_constant(dst_sizes)});
  return view && call_aten(t, "aten::copy_", {dst, view}) != nullptr;
}

// `valueToTensor`: a tensor as it is; a Python number as a 0-d tensor of
// the destination's dtype and device (ints and bools as ints).
ValuePtr value_to_tensor(InstructionTranslator& t, const ValuePtr& self, const ValuePtr& value) {
  if (value->is_tensor()) return value;
  PyObject* o = const_obj(value);
  if (!o || !(PyLong_Check(o) || PyFloat_Check(o)))
    return t.unsupported("assigning a " + value->type_name() + " into a tensor"), nullptr;
  ValuePtr number = PyBool_Check(o) ? int_constant(o == Py_True ? 1 : 0) : value;
  const graph::TensorMeta& m = self->meta();
  return call_aten(t, "aten::scalar_tensor", {number},
                   {{"dtype", Value::constant_steal(dtype_object(m.dtype))},
                    {"device", Value::constant_steal(device_object(m.device))}});
}

}  // namespace

ValuePtr tensor_getitem(InstructionTranslator& t, const ValuePtr& self, const ValuePtr& index) {
  bool is_tuple = false;
  auto items = index_items(index, &is_tuple);
  PyObject* o = is_tuple ? nullptr : const_obj(index);
  if (o && PySlice_Check(o)) return apply_slice(t, self, 0, o, /*optimize=*/false);
  auto sliced = apply_slicing(t, self, items, /*optimize=*/true);
  if (!sliced) return nullptr;
  if (sliced->tensor_indices.empty())
    return sliced->view == self ? call_aten(t, "aten::alias", {self}) : sliced->view;
  return call_aten(t, "aten::index", {sliced->view, Value::sequence(ValueKind::list, sliced->tensor_indices)});
}

bool tensor_setitem(InstructionTranslator& t, const ValuePtr& self, const ValuePtr& index, const ValuePtr& value) {
  ValuePtr v = value_to_tensor(t, self, value);
  if (!v) return false;
  bool is_tuple = false;
  auto items = index_items(index, &is_tuple);
  if (PyObject* o = is_tuple ? nullptr : const_obj(index)) {
    if (o == Py_False) return true;
    if (o == Py_Ellipsis) return copy_to(t, self, v);
    ValuePtr dst;
    if (o == Py_None || o == Py_True) dst = call_aten(t, "aten::unsqueeze", {self, int_constant(0)});
    else if (is_int(o)) dst = call_aten(t, "aten::select", {self, int_constant(0), index});
    else if (PySlice_Check(o)) dst = apply_slice(t, self, 0, o, /*optimize=*/true);
    else return t.unsupported(std::string("tensor index of type ") + Py_TYPE(o)->tp_name);
    return dst && copy_to(t, dst, v);
  }
  auto sliced = apply_slicing(t, self, items, /*optimize=*/true);
  if (!sliced) return false;
  if (sliced->tensor_indices.empty()) return copy_to(t, sliced->view, v);
  if (unbacked_size_read(t, sliced->view, "an indexed assignment") || unbacked_size_read(t, v, "an indexed assignment"))
    return false;
  for (const ValuePtr& index : sliced->tensor_indices)
    if (unbacked_size_read(t, index, "an indexed assignment")) return false;
  if (std::any_of(sliced->tensor_indices.begin(), sliced->tensor_indices.end(),
                  [](const ValuePtr& i) { return i->is_tensor() && is_mask_dtype(i->meta().dtype); }))
    t.note_sizes_read("a boolean mask's sizes checked against the indexed dims");
  if (!masks_fit(sliced->view, sliced->tensor_indices))
    return t.unsupported("a boolean mask whose shape does not match the indexed dims (raises)");
  const auto& sizes = v->meta().sizes;
  auto stripped = without_leading_ones(sizes);
  if (stripped != sizes) {
    t.note_sizes_read("an indexed assignment shaped by the sizes");
    v = call_aten(t, "aten::view", {v, ints_constant(stripped)});
  }
  return v && call_aten(t, "aten::index_put_",
                        {sliced->view, Value::sequence(ValueKind::list, sliced->tensor_indices), v}) != nullptr;
}

}  // namespace tj::tracer
