// Value constructors and conversions; see values.h.
#include "tracer/values.h"

#include "support/py_lookup.h"
#include "support/tensor_bridge.h"

#include <cassert>

namespace tj::tracer {

ValuePtr Value::null() {
  static ValuePtr v = std::make_shared<Value>();
  return v;
}

ValuePtr Value::constant(PyObject* obj) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::constant;
  v->obj = PyRef::borrow(obj);
  return v;
}

ValuePtr Value::constant_steal(PyObject* obj) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::constant;
  v->obj = PyRef::steal(obj);
  return v;
}

ValuePtr Value::tensor(graph::Node* node) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::tensor;
  v->node = node;
  return v;
}

ValuePtr Value::sequence(ValueKind kind, std::vector<ValuePtr> items) {
  assert((kind == ValueKind::tuple || kind == ValueKind::list) && "sequence kind");
  auto v = std::make_shared<Value>();
  v->kind = kind;
  v->items = std::move(items);
  return v;
}

ValuePtr Value::dict(std::vector<ValuePtr> keys, std::vector<ValuePtr> values) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::dict;
  v->keys = std::move(keys);
  v->items = std::move(values);
  return v;
}

ValuePtr Value::callable(PyObject* fn) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::callable;
  v->obj = PyRef::borrow(fn);
  return v;
}

ValuePtr Value::tensor_method(ValuePtr self, std::string name) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::tensor_method;
  v->payload = MethodPayload{std::move(self), std::move(name)};
  return v;
}

ValuePtr Value::bound_method(PyObject* fn, ValuePtr self, std::string name) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::callable;
  v->obj = PyRef::borrow(fn);
  v->payload = MethodPayload{std::move(self), std::move(name)};
  return v;
}

ValuePtr Value::partial(ValuePtr fn, std::vector<ValuePtr> args, std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::partial;
  v->payload = PartialPayload{std::move(fn), std::move(args), std::move(kwargs)};
  return v;
}

ValuePtr Value::module(PyObject* mod) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::module;
  v->obj = PyRef::borrow(mod);
  return v;
}

ValuePtr Value::object(PyObject* obj) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::object;
  v->obj = PyRef::borrow(obj);
  return v;
}

ValuePtr Value::iterator(std::vector<ValuePtr> items, PyTypeObject* python_type) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::iterator;
  v->items = std::move(items);
  v->payload = IteratorPayload{python_type, {}, false};
  return v;
}

ValuePtr Value::cell(ValuePtr content) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::cell;
  v->items.push_back(std::move(content));
  return v;
}

ValuePtr Value::function(PyRef code, std::string qualname, FunctionPayload payload) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::function;
  v->obj = std::move(code);
  payload.qualname = std::move(qualname);
  v->payload = std::move(payload);
  return v;
}

ValuePtr Value::dict_view(ValuePtr dict, DictViewKind which) {
  assert(dict->kind == ValueKind::dict && "a view of a non-dict");
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::dict_view;
  v->payload = DictViewPayload{std::move(dict), which};
  return v;
}

const char* dict_view_method(DictViewKind which) {
  switch (which) {
    case DictViewKind::keys: return "keys";
    case DictViewKind::values: return "values";
    case DictViewKind::items: return "items";
  }
  return "?";
}

std::vector<ValuePtr> Value::view_items() const {
  const DictViewPayload& view = as_dict_view();
  const Value& d = *view.dict;
  if (view.which == DictViewKind::keys) return d.keys;
  if (view.which == DictViewKind::values) return d.items;
  std::vector<ValuePtr> pairs;
  for (size_t i = 0; i < d.keys.size(); ++i) pairs.push_back(Value::sequence(ValueKind::tuple, {d.keys[i], d.items[i]}));
  return pairs;
}

const graph::TensorMeta& Value::meta() const {
  assert(kind == ValueKind::tensor && node && node->meta().tensor() && "tensor value without meta");
  return *node->meta().tensor();
}

bool Value::is_python_constant() const {
  switch (kind) {
    case ValueKind::constant: return true;
    case ValueKind::tuple:
    case ValueKind::list:
    case ValueKind::dict:
      for (const auto& item : items)
        if (!item->is_python_constant()) return false;
      return true;
    case ValueKind::dict_view:
      for (const auto& item : view_items())
        if (!item->is_python_constant()) return false;
      return true;
    default: return false;
  }
}

PyRef Value::as_python() const {
  switch (kind) {
    case ValueKind::object:
      if (object_class()) break;  // made in the frame: `obj` is only an empty stand-in
      return obj;
    case ValueKind::constant:
    case ValueKind::callable:
    case ValueKind::module: return obj;
    case ValueKind::tuple:
    case ValueKind::list: {
      PyRef out = PyRef::steal(kind == ValueKind::tuple ? PyTuple_New(static_cast<Py_ssize_t>(items.size()))
                                                       : PyList_New(static_cast<Py_ssize_t>(items.size())));
      if (!out) break;
      for (size_t i = 0; i < items.size(); ++i) {
        PyRef item = items[i]->as_python();
        if (!item) return {};
        if (kind == ValueKind::tuple)
          PyTuple_SET_ITEM(out.get(), static_cast<Py_ssize_t>(i), item.release());
        else
          PyList_SET_ITEM(out.get(), static_cast<Py_ssize_t>(i), item.release());
      }
      if (kind == ValueKind::tuple && obj.get() == size_type()) {  // x.shape of sizes made numbers: a torch.Size
        PyRef size = PyRef::steal(PyObject_CallOneArg(size_type(), out.get()));
        if (!size) break;
        return size;
      }
      return out;
    }
    case ValueKind::dict: {
      if (obj && PyAnySet_Check(obj.get())) {  // a keyed set: a set of its elements
        PyRef list = PyRef::steal(PyList_New(0));
        for (size_t i = 0; list && i < items.size(); ++i) {
          PyRef item = items[i]->as_python();
          if (!item || PyList_Append(list.get(), item.get()) < 0) list = PyRef();
        }
        PyRef out = PyRef::steal(list ? PyObject_CallOneArg(reinterpret_cast<PyObject*>(Py_TYPE(obj.get())), list.get())
                                      : nullptr);
        if (!out) PyErr_Clear();  // a tuple subclass that does not rebuild: no Python form (as_python is a probe)
        return out;
      }
      PyRef out = PyRef::steal(PyDict_New());
      if (!out) break;
      for (size_t i = 0; i < items.size(); ++i) {
        PyRef k = keys[i]->as_python();
        PyRef v = k ? items[i]->as_python() : PyRef();
        if (!v || PyDict_SetItem(out.get(), k.get(), v.get()) < 0) {
          PyErr_Clear();  // an unhashable key: no Python form (as_python is a probe)
          return {};
        }
      }
      return out;
    }
    case ValueKind::partial: {  // a real functools.partial over the same values
      const PartialPayload& p = as_partial();
      PyObject* partial_type = cached_module_attr("functools", "partial");  // borrowed
      std::vector<ValuePtr> all{p.fn};
      all.insert(all.end(), p.args.begin(), p.args.end());
      PyRef args = partial_type ? Value::sequence(ValueKind::tuple, std::move(all))->as_python() : PyRef();
      PyRef kwargs = PyRef::steal(args ? PyDict_New() : nullptr);
      for (size_t i = 0; kwargs && i < p.kwargs.size(); ++i) {
        PyRef kw = p.kwargs[i].second->as_python();
        if (!kw || PyDict_SetItemString(kwargs.get(), p.kwargs[i].first.c_str(), kw.get()) < 0) kwargs = PyRef();
      }
      PyRef out = PyRef::steal(kwargs ? PyObject_Call(partial_type, args.get(), kwargs.get()) : nullptr);
      if (out) return out;
      break;
    }
    case ValueKind::dict_view: {
      // The view of a real dict with the same contents (a values view
      // needs only its values: their keys are stand-ins).
      const DictViewPayload& watched = as_dict_view();
      auto copy = Value::dict(watched.dict->keys, watched.dict->items);
      if (watched.which == DictViewKind::values)
        for (size_t i = 0; i < copy->keys.size(); ++i) copy->keys[i] = Value::constant_steal(PyLong_FromSize_t(i));
      if (watched.which == DictViewKind::keys)
        for (auto& item : copy->items) item = Value::constant(Py_None);
      PyRef d = copy->as_python();
      PyRef view = PyRef::steal(d ? PyObject_CallMethod(d.get(), dict_view_method(watched.which), nullptr) : nullptr);
      if (view) return view;
      break;
    }
    default: break;
  }
  PyErr_Clear();  // no Python form: the caller's reason says what needed one
  return {};
}

ValuePtr Value::symint(graph::Node* node, int64_t value) {
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::symint;
  v->node = node;
  v->obj = PyRef::steal(PyLong_FromLongLong(value));
  return v;
}

std::string Value::type_name() const {
  switch (kind) {
    case ValueKind::null: return "NULL";
    case ValueKind::symint: return "int";
    case ValueKind::slice: return "slice";
    case ValueKind::size_text: return "str";
    case ValueKind::tensor: return "Tensor";
    case ValueKind::tuple: return "tuple";
    case ValueKind::list: return "list";
    case ValueKind::dict: return obj && PyAnySet_Check(obj.get()) ? Py_TYPE(obj.get())->tp_name : "dict";
    case ValueKind::tensor_method: return "Tensor." + as_method().name;
    case ValueKind::iterator: return "iterator";
    case ValueKind::function: return "function";
    case ValueKind::cell: return "cell";
    case ValueKind::seed_result: return "int";
    case ValueKind::partial: return "functools.partial";
    case ValueKind::dict_view: return std::string("dict_") + dict_view_method(as_dict_view().which);
    default: return obj ? Py_TYPE(obj.get())->tp_name : "?";
  }
}

}  // namespace tj::tracer
