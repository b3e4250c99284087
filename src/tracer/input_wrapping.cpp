// Input wrapping: how the translator turns a real Python object it reads
// through a source (a local, a global, an attribute or item path) into a
// Value, with the guards that keep the trace valid: tensors become graph
// placeholders (inputs sharing storage share an alias id), immutable
// scalars constant-guarded constants, tuples/lists/dicts (OrderedDicts
// too) containers of wrapped items, modules and callables identity-guarded
// values, deep or huge structures opaque objects. See translator.h.
#include <algorithm>
#include <limits>
#include <string_view>
#include <utility>

#include <ATen/core/Tensor.h>

#include "tracer/append_log.h"
#include "tracer/py_str.h"
#include "tracer/translate_call.h"
#include "tracer/translator.h"

#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"

namespace tj::tracer {

namespace {

// A dict input's key the DICT_KEYS guard compares by value: str, int,
// float, bool, None, and tuples (torch.Size too) of them.
bool immutable_key(PyObject* k) {
  if (PyUnicode_CheckExact(k) || PyLong_Check(k) || PyFloat_CheckExact(k) || k == Py_None) return true;
  if (!PyTuple_Check(k) || !(PyTuple_CheckExact(k) || is_size(k))) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(k); ++i)
    if (!immutable_key(PyTuple_GET_ITEM(k, i))) return false;
  return true;
}

// A placeholder name from a source: L['x'] -> x, L['self'].w -> self_w.
std::string placeholder_hint(const Source& s) {
  switch (s.kind) {
    case SourceKind::local:
    case SourceKind::global:
    case SourceKind::closure:
    case SourceKind::closure_cell: return s.name;
    case SourceKind::module: return s.name.substr(s.name.rfind('.') + 1);
    case SourceKind::attr:
    case SourceKind::call: return placeholder_hint(*s.base) + "_" + s.name;
    case SourceKind::item: {
      std::string key = s.index >= 0 ? std::to_string(s.index) : "item";
      if (s.key && PyUnicode_Check(s.key.get()) && PyUnicode_IsIdentifier(s.key.get())) key = utf8(s.key.get());
      return placeholder_hint(*s.base) + "_" + key;
    }
  }
  return "input";
}

}  // namespace

ValuePtr InstructionTranslator::wrap_constant_result(PyRef obj) {
  if (!obj) {
    unsupported("constant folding failed");
    return nullptr;
  }
  return Value::constant(obj.get());
}

ValuePtr InstructionTranslator::wrap_tensor_input(PyObject* obj, const SourcePtr& source) {
  // The same tensor object seen through another source is the same value
  // (so `q is k` holds), guarded to stay the same object.
  for (const auto& [seen, value] : shared_->tensor_inputs) {
    if (seen != obj) continue;
    Guard g{GuardKind::same_object, source};
    g.other = value->source;
    shared_->guards.add(std::move(g));
    return value;
  }
  const at::Tensor& t = unpack_tensor(obj);
  // A nested tensor (TransformerEncoder's fast path hands one to each
  // layer) has no sizes or strides to guard: its frame runs uncompiled.
  if (t.is_nested()) return unsupported("a nested tensor (torch.nested) as an input"), nullptr;
  graph::TensorMeta meta = graph::TensorMeta::of(t);
  // Inputs sharing memory share a storage id (rare; a linear scan is fine).
  const void* storage = storage_identity(t);
  int64_t sid = -1;
  for (const auto& [key, id] : shared_->input_storage_ids)
    if (key == storage) sid = id;
  if (sid < 0) {
    sid = shared_->graph->new_storage_id();
    shared_->input_storage_ids.emplace_back(storage, sid);
  }
  meta.storage_id = sid;
  graph::Node* node = shared_->graph->placeholder(placeholder_hint(*source), meta);
  shared_->placeholder_index[node] = static_cast<int>(shared_->input_sources.size());
  shared_->input_sources.push_back(source);
  Guard g{GuardKind::tensor_match, source, PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj)))};
  g.tensor = meta;
  g.tensor.storage_id = -1;
  g.dispatch_keys = dispatch_key_bits(t);
  std::string why;
  g.dynamic_dims = dynamic_dims_for(obj, meta, *source, &why);
  if (!g.dynamic_dims.empty()) shared_->dynamic_inputs.push_back({source->to_string(), g.dynamic_dims, meta.sizes, why});
  shared_->guards.add(std::move(g));
  ValuePtr v = Value::tensor(node);
  v->source = source;
  v->obj = PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj)));  // for isinstance()
  shared_->tensor_inputs.emplace_back(obj, v);
  return v;
}

// Automatic dynamic ints: see translator.h. The DYNAMIC_INT guard keeps the
// int small enough for int64 arithmetic to equal Python's.
ValuePtr InstructionTranslator::wrap_dynamic_int(PyObject* obj, const SourcePtr& source) {
  const bool is_float = PyFloat_CheckExact(obj);
  if (frame_.dynamic == 0 || !frame_.dynamic_ints || !source || !fits_dynamic_number(obj, is_float) ||
      !frame_.dynamic_ints->count(source->to_string()))
    return nullptr;
  graph::TensorMeta meta = graph::TensorMeta::contiguous({}, is_float ? c10::ScalarType::Double : c10::ScalarType::Long);
  meta.storage_id = shared_->graph->new_storage_id();
  graph::Node* node = shared_->graph->placeholder(placeholder_hint(*source), meta);
  const int index = static_cast<int>(shared_->input_sources.size());
  shared_->placeholder_index[node] = index;
  shared_->input_sources.push_back(source);
  shared_->int_inputs.push_back(index);
  Guard g{GuardKind::dynamic_int, source};
  g.flag = is_float;
  shared_->guards.add(std::move(g));
  ValuePtr v = Value::tensor(node);
  v->obj = PyRef::borrow(reinterpret_cast<PyObject*>(is_float ? &PyFloat_Type : &PyLong_Type));
  v->source = source;
  auto origin = std::make_shared<DynamicIntOrigin>();
  origin->sources.push_back(source->to_string());
  origin->bound = is_float ? std::numeric_limits<double>::infinity() : 0x1p31;
  auto expr = std::make_shared<NumberExpr>();
  expr->source = source;
  expr->example = PyRef::borrow(obj);
  expr->text = source->to_string();
  origin->expr = std::move(expr);
  v->payload = NumberPayload{std::move(origin)};
  return v;
}

namespace {
std::string inplace_refusal(const graph::Node& node, const Source& source, const std::string& why) {
  return node.op()->qualified_name() + " on " + source.to_string() + ", " + why;
}
}  // namespace

bool InstructionTranslator::inplace_allowed_by_autograd(const graph::Node& node) {
  const graph::Node* self = node.args().empty() ? nullptr : node.args()[0].node();
  const graph::TensorMeta* m = self ? self->meta().tensor() : nullptr;
  if (!m || m->storage_id < 0 || !grad_mode_enabled()) return true;
  std::vector<std::pair<PyObject*, SourcePtr>> roots;  // the inputs whose memory the op writes
  for (const auto& [p, index] : shared_->placeholder_index) {
    const graph::TensorMeta* pm = p->meta().tensor();
    if (!pm || pm->storage_id != m->storage_id) continue;
    const SourcePtr& source = shared_->input_sources[static_cast<size_t>(index)];
    for (const auto& [obj, value] : shared_->tensor_inputs)
      if (value->source == source) roots.emplace_back(obj, source);
  }
  // A write of values that require grad through another view of the same
  // memory makes this tensor require grad too (its meta does not say so).
  bool requires_grad = m->requires_grad;
  for (const graph::Node* n : graph().nodes()) {
    if (requires_grad || n == &node) break;
    const graph::TensorMeta* w = n->op() && n->op()->traits.inplace ? n->meta().tensor() : nullptr;
    requires_grad = w && w->storage_id == m->storage_id && w->requires_grad;
  }
  // A view the graph made by unbind/split/chunk, or in no-grad mode.
  if (auto why = graph::inplace_refused_on_view(graph(), node, requires_grad, entry_grad_enabled()))
    return unsupported(node.op()->qualified_name() + " on a view autograd forbids writing in grad mode: " + *why);
  if (roots.empty()) return true;  // a tensor made in the graph: autograd gave it history
  if (!requires_grad || !graph::inplace_raises_on_grad_leaf(graph(), node)) return true;
  for (const auto& [obj, source] : roots) {
    const GradState state = grad_state(unpack_tensor(obj));
    if (state == GradState::leaf)
      return unsupported(
          inplace_refusal(node, *source, "a leaf that requires grad or a view of one, in grad mode: eager refuses it"));
    // It came to require grad in the graph (a copy of such values into
    // it): whether eager's autograd then sees it as a leaf depends on its
    // views' history (a view of an input does), so eager runs the op.
    if (state == GradState::no_grad)
      return unsupported(inplace_refusal(node, *source,
                                         "which requires grad only since the graph wrote into it: eager decides "
                                         "whether autograd refuses the in-place op"));
  }
  for (const auto& [obj, source] : roots) shared_->guards.add(Guard{GuardKind::not_grad_leaf, source});
  return true;
}

ValuePtr InstructionTranslator::wrap_sequence_input(PyObject* obj, const SourcePtr& source) {
  bool is_tuple = PyTuple_Check(obj);
  Guard g{GuardKind::length, source, PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj)))};
  g.length = PySequence_Fast_GET_SIZE(obj);
  shared_->guards.add(std::move(g));
  std::vector<ValuePtr> items;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(obj); ++i) {
    PyRef key = PyRef::steal(PyLong_FromSsize_t(i));
    ValuePtr item = wrap_input(PySequence_Fast_GET_ITEM(obj, i), Source::item(source, key.get()));
    if (!item) return nullptr;
    items.push_back(std::move(item));
  }
  ValuePtr v = Value::sequence(is_tuple ? ValueKind::tuple : ValueKind::list, std::move(items));
  v->source = source;
  v->obj = PyRef::borrow(obj);
  return v;
}

namespace {
// The dict wrap_input wraps next is read into `d["k"].append` (append_log.h):
// its list items are logs. Set and read under the GIL, around one wrap.
bool lists_as_logs = false;
}  // namespace

ValuePtr InstructionTranslator::wrap_input(PyObject* obj, SourcePtr source) {
  // A list only appended to (append_log.h): logged while each load feeds
  // `.append`; any other use wraps and guards its contents first.
  // A dict read straight into `d["k"].append(x)`: its list items are such logs.
  const bool for_append = wrap_depth_ == 0 && loads_for_append(code_.get(), ip_, current_);
  const bool dict_for_append = wrap_depth_ == 0 && loads_dict_for_append(code_.get(), ip_, current_);
  auto materialize_log = [&](const ValuePtr& v) {
    ++wrap_depth_;  // its items are parts of it, never logs of their own
    ValuePtr full = wrap_sequence_input(v->obj.get(), v->source);
    --wrap_depth_;
    if (!full) return false;
    journal(v);
    materialize_append_log(v, full);
    return true;
  };
  auto reuse_append_log = [&](const ValuePtr& v) -> ValuePtr {
    if (is_append_log(*v)) return for_append || materialize_log(v) ? v : nullptr;
    if (dict_for_append || !has_append_logs(*v)) return v;
    for (const ValuePtr& item : std::vector<ValuePtr>(v->items))  // the dict read otherwise: full lists
      if (is_append_log(*item) && !materialize_log(item)) return nullptr;
    return v;
  };
  // One value per source: a list read twice through G['LOG'] is one list,
  // and its mutations (side effects) accumulate on it.
  if (!source) return wrap_input_uncached(obj, source);
  std::string key = source->to_string();
  if (auto it = shared_->wrapped.find(key); it != shared_->wrapped.end() && it->second->obj.get() != nullptr &&
                                            (it->second->is_tensor() || it->second->obj.get() == obj)) {
    if (it->second->is_tensor()) ++shared_->tensor_reads;  // trace_budget.cpp: work on tensors
    return reuse_append_log(it->second);
  }
  // The same mutable object seen through another source is the same value
  // (C.x = 1 written through type(o) is read through C), as for tensors.
  if (auto it = shared_->input_objects.find(obj); it != shared_->input_objects.end()) {
    Guard g{GuardKind::same_object, source};
    g.other = it->second->source;
    shared_->guards.add(std::move(g));
    shared_->wrapped[key] = it->second;
    return reuse_append_log(it->second);
  }
  lists_as_logs = dict_for_append && PyDict_CheckExact(obj);
  ValuePtr v = for_append && PyList_CheckExact(obj) ? new_append_log(shared_->guards, obj, source)
                                                   : wrap_input_uncached(obj, source);
  lists_as_logs = false;
  if (!v) return v;
  shared_->wrapped[key] = v;
  bool mutable_kind = v->kind == ValueKind::object || v->kind == ValueKind::callable || v->kind == ValueKind::module ||
                      v->kind == ValueKind::list || v->kind == ValueKind::dict;
  if (mutable_kind && v->obj.get() == obj && !v->bound_self() && !v->super_self()) shared_->input_objects.emplace(obj, v);
  return v;
}

ValuePtr InstructionTranslator::wrap_input_uncached(PyObject* obj, SourcePtr source) {
  // Deep (or self-containing) structures and huge containers are opaque
  // objects: never a runaway recursion, never thousands of guards.
  struct DepthGuard {
    int& depth;
    explicit DepthGuard(int& d) : depth(++d) {}
    ~DepthGuard() { --depth; }
  } depth_guard(wrap_depth_);
  bool too_big = (PyList_CheckExact(obj) || PyTuple_CheckExact(obj) || PyDict_CheckExact(obj)) &&
                 PyObject_Length(obj) > 512;
  if (wrap_depth_ > 32 || too_big) {
    shared_->guards.add(Guard{GuardKind::type_match, source, PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj)))});
    ValuePtr v = Value::object(obj);
    v->source = source;
    return v;
  }
  if (is_tensor(obj)) {
    if (!source) return unsupported("a tensor read from torch's own modules"), nullptr;
    return wrap_tensor_input(obj, source);
  }
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  bool immutable_scalar = obj == Py_None || obj == Py_Ellipsis || PyBool_Check(obj) || PyLong_CheckExact(obj) ||
                          PyFloat_CheckExact(obj) || PyUnicode_CheckExact(obj) || PySlice_Check(obj) ||
                          PyRange_Check(obj) || as_device(obj) || is_size(obj) || is_numpy_scalar(obj);
  if (PyLong_CheckExact(obj) || PyFloat_CheckExact(obj))
    if (ValuePtr v = wrap_dynamic_int(obj, source)) return v;
  if (immutable_scalar) {
    shared_->guards.add(Guard{GuardKind::const_eq, source, PyRef::borrow(obj)});
    ValuePtr v = Value::constant(obj);
    v->source = source;
    return v;
  }
  if (as_dtype(obj) || as_layout(obj) || as_memory_format(obj)) {
    shared_->guards.add(Guard{GuardKind::id_match, source, PyRef::borrow(obj)});
    ValuePtr v = Value::constant(obj);
    v->source = source;
    return v;
  }
  if (PyTuple_CheckExact(obj) || PyList_CheckExact(obj)) return wrap_sequence_input(obj, source);
  if (PyTuple_Check(obj) && is_plain_namedtuple_type(type)) {
    // A namedtuple input (SavedAction(log_prob, value) kept by an RL loop):
    // a tuple of its items, as one made in the frame (fields by name,
    // unpacking, iteration; rebuilt with the class's _make), its class and
    // length guarded.
    ValuePtr v = wrap_sequence_input(obj, source);
    if (v) v->obj = PyRef::borrow(type);
    return v;
  }
  if (ValuePtr it = wrap_comprehension_iterator(obj, source)) return it;
  if (failed()) return nullptr;
  // An OrderedDict (nn.Module's _modules, _parameters) iterates, indexes
  // and mutates like a dict; its type is guarded so a plain dict there
  // retraces.
  bool ordered_dict = Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(cached_module_attr("collections", "OrderedDict"));
  // A defaultdict (an optimizer's `state`) too; its factory is guarded.
  bool default_dict = Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(cached_module_attr("collections", "defaultdict"));
  if (PyDict_CheckExact(obj) || ordered_dict || default_dict) return wrap_dict_input(obj, source, ordered_dict, default_dict);
  if (PyModule_Check(obj)) {
    shared_->guards.add(Guard{GuardKind::id_match, source, PyRef::borrow(obj)});
    ValuePtr v = Value::module(obj);
    v->source = source;
    return v;
  }
  if (PyCallable_Check(obj) && (PyFunction_Check(obj) || PyCFunction_Check(obj) || PyType_Check(obj) ||
                                PyObject_TypeCheck(obj, &PyMethodDescr_Type) || PyMethod_Check(obj) ||
                                is_disabled_function(obj) || is_compiled_function(obj)))
    return wrap_callable_input(obj, source);
  PyObject* module_type = cached_module_attr("torch.nn", "Module");
  bool is_module = module_type && PyObject_IsInstance(obj, module_type) == 1;
  clear_unless_interruption();  // a user __class__ raising: not a module
  // Modules by their class and the way each name the trace read resolves
  // (MODULE_MATCH): their members are guarded on their own (parameters and
  // buffers by TENSOR_MATCH, submodules again by MODULE_MATCH, plain
  // attributes by value), so every instance of a class with members of the
  // same kinds shares the compile, as TorchDynamo's inlined nn.Modules do;
  // swapping a submodule for one of another class recompiles. Other
  // objects are guarded by their type.
  shared_->guards.add(Guard{is_module ? GuardKind::module_match : GuardKind::type_match, source, PyRef::borrow(type)});
  ValuePtr v = Value::object(obj);
  v->source = source;
  return v;
}

// A dict, OrderedDict or defaultdict input: its keys guarded (and the
// type of the latter two, and a defaultdict's factory), its items wrapped.
ValuePtr InstructionTranslator::wrap_dict_input(PyObject* obj, const SourcePtr& source, bool ordered_dict,
                                                bool default_dict) {
  const bool logs = std::exchange(lists_as_logs, false);  // this dict's own items only
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  if (ordered_dict || default_dict) shared_->guards.add(Guard{GuardKind::type_match, source, PyRef::borrow(type)});
  ValuePtr factory;
  if (default_dict) {
    PyRef f = PyRef::steal(PyObject_GetAttrString(obj, "default_factory"));
    if (!f) return unsupported("a defaultdict without default_factory"), nullptr;  // unsupported() clears the AttributeError
    factory = wrap_input(f.get(), Source::attr(source, "default_factory"));
    if (!factory) return nullptr;
  }
  PyRef keys = PyRef::steal(ordered_dict ? PySequence_List(obj) : PyDict_Keys(obj));  // an OrderedDict's own order
  PyRef key_tuple = PyRef::steal(keys ? PyList_AsTuple(keys.get()) : nullptr);
  if (!key_tuple) {
    unsupported("cannot read the keys of a dict input");
    return nullptr;
  }
  shared_->guards.add(Guard{GuardKind::dict_keys, source, key_tuple});
  std::vector<ValuePtr> ks, vs;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key_tuple.get()); ++i) {
    PyObject* k = PyTuple_GET_ITEM(key_tuple.get(), i);
    PyObject* val = PyDict_GetItemWithError(obj, k);
    if (!val) {
      // A key's __eq__ or __hash__ that raised is named by unsupported().
      unsupported("a dict input changed while it was read");
      return nullptr;
    }
    bool tensor_key = is_tensor(k);  // identity-keyed (optimizer.state)
    // A tuple of constants and classes: kl_divergence's memo, keyed by (type(p), type(q)).
    bool class_tuple = PyTuple_CheckExact(k) && PyTuple_GET_SIZE(k) > 0;
    for (Py_ssize_t j = 0; class_tuple && j < PyTuple_GET_SIZE(k); ++j)
      class_tuple = immutable_key(PyTuple_GET_ITEM(k, j)) || is_identity_key(PyTuple_GET_ITEM(k, j));
    if (!(immutable_key(k) || tensor_key || is_identity_key(k) || class_tuple)) {
      unsupported("dict input with a key of type " + std::string(Py_TYPE(k)->tp_name));
      return nullptr;
    }
    ks.push_back(tensor_key ? tensor_key_of(k, nullptr) : Value::constant(k));
    SourcePtr item_source = tensor_key ? Source::item(source, k, "<key " + std::to_string(i) + ": Tensor>")
                                       : Source::item(source, k);
    ValuePtr item;
    if (logs && item_source && PyList_CheckExact(val) && !shared_->wrapped.count(item_source->to_string()) &&
        !shared_->input_objects.count(val)) {
      item = new_append_log(shared_->guards, val, item_source);  // read otherwise later: wrap_input finds it
      shared_->wrapped[item_source->to_string()] = item;
      shared_->input_objects.emplace(val, item);
    } else {
      item = wrap_input(val, item_source);
    }
    if (!item) return nullptr;
    vs.push_back(std::move(item));
  }
  ValuePtr v = Value::dict(std::move(ks), std::move(vs));
  v->source = source;
  v->obj = PyRef::borrow(obj);
  if (factory) v->payload = DefaultDictPayload{factory};
  return v;
}

// A function, method, class or C function input: guarded by identity, or
// by what a bound method binds, or as a nested function.
ValuePtr InstructionTranslator::wrap_callable_input(PyObject* obj, const SourcePtr& source) {
  if (PyMethod_Check(obj) && source) {
    // A bound method is made afresh by every attribute read: guard what
    // it binds (the function, the type of self), never its identity.
    shared_->guards.add(Guard{GuardKind::id_match, Source::attr(source, "__func__"),
                              PyRef::borrow(PyMethod_GET_FUNCTION(obj))});
    shared_->guards.add(Guard{GuardKind::type_match, Source::attr(source, "__self__"),
                              PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(PyMethod_GET_SELF(obj))))});
  } else if (PyCFunction_Check(obj) && source && PyCFunction_GET_SELF(obj) && PyType_Check(PyCFunction_GET_SELF(obj))) {
    // A C method bound to a class (itertools.chain.from_iterable,
    // dict.fromkeys) is made afresh by every read too: its class's
    // identity fixes it, the attribute name being the source's.
    shared_->guards.add(Guard{GuardKind::id_match, Source::attr(source, "__self__"),
                              PyRef::borrow(PyCFunction_GET_SELF(obj))});
  } else if (PyFunction_Check(obj) && source && nested_function(obj)) {
    guard_nested_function(obj, source);
  } else if (ValuePtr method = wrap_bound_container_method(obj, source)) {
    return method;
  } else if (failure_) {  // its `__self__` could not be wrapped: the reason is set
    return nullptr;
  } else {
    shared_->guards.add(Guard{GuardKind::id_match, source, PyRef::borrow(obj)});
  }
  ValuePtr v = Value::callable(obj);
  v->source = source;
  return v;
}

// A C method bound to a list, dict, set, deque or tensor input (`app = lst.append`,
// `get = d.get` kept in a local across a graph break, so that the resumed
// frame receives it): each attribute read makes a new method object, so an
// identity guard would never pass again and the frame would recompile up to
// the cache limit. It is guarded as what it is instead (a C method of that
// name, bound to an object that is guarded as an input through `__self__`)
// and traced as the method of that value. Null for any other callable.
ValuePtr InstructionTranslator::wrap_bound_container_method(PyObject* obj, const SourcePtr& source) {
  if (!source || !PyCFunction_CheckExact(obj)) return nullptr;
  PyObject* self = PyCFunction_GET_SELF(obj);
  if (!self || !(PyList_CheckExact(self) || PyDict_CheckExact(self) || PySet_CheckExact(self) || is_tensor(self) ||
                 has_exact_type(self, "collections", "deque")))  // a replay memory's `self.memory.append`
    return nullptr;
  const char* name = reinterpret_cast<PyCFunctionObject*>(obj)->m_ml->ml_name;
  PyRef name_obj = PyRef::steal(PyUnicode_FromString(name));
  if (!name_obj) {
    clear_unless_interruption();
    return nullptr;
  }
  // `losses.append` held across a break (`losses.append(loss.item())`
  // breaks at the item()): the resumed frame only appends to the list.
  SourcePtr self_source = Source::attr(source, "__self__");
  bool log = PyList_CheckExact(self) && std::string_view(name) == "append" &&
             !shared_->wrapped.count(self_source->to_string()) && !shared_->input_objects.count(self);
  ValuePtr self_value = log ? new_append_log(shared_->guards, self, self_source) : wrap_input(self, self_source);
  if (!self_value) return nullptr;
  if (log) {
    shared_->wrapped[self_source->to_string()] = self_value;
    shared_->input_objects.emplace(self, self_value);
  }
  shared_->guards.add(Guard{GuardKind::type_match, source, PyRef::borrow(reinterpret_cast<PyObject*>(&PyCFunction_Type))});
  shared_->guards.add(Guard{GuardKind::const_eq, Source::attr(source, "__name__"), name_obj});
  return Value::tensor_method(self_value, name);
}

// ------------------------------------------------------------ comprehensions

// A comprehension's frame (`<listcomp>` under --compile-all, or one whose
// caller broke) receives the iterator its caller made (`.0`): nothing else
// holds it. A range, list or tuple iterator is what it will yield, read
// through `__reduce__()` (its sequence and position; side-effect free) and
// guarded there: a range by value, a list or tuple as an input container,
// the position by value. The loop is then unrolled in one graph instead of
// breaking at FOR_ITER once per element. The value has no source: at a
// break it leaves as a new iterator over what is left.
ValuePtr InstructionTranslator::wrap_comprehension_iterator(PyObject* obj, const SourcePtr& source) {
  PyTypeObject* type = Py_TYPE(obj);
  if (!source || source->kind != SourceKind::local || source->name != ".0" ||
      !(type == &PyRangeIter_Type || type == &PyListIter_Type || type == &PyTupleIter_Type))
    return nullptr;
  constexpr Py_ssize_t kMaxItems = 4096;  // past that, the loop is left to CPython
  PyRef reduced = PyRef::steal(PyObject_CallMethod(obj, "__reduce__", nullptr));
  if (!reduced || !PyTuple_Check(reduced.get()) || PyTuple_GET_SIZE(reduced.get()) < 2 ||
      !PyTuple_Check(PyTuple_GET_ITEM(reduced.get(), 1)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(reduced.get(), 1)) != 1) {
    clear_unless_interruption();
    return nullptr;
  }
  PyObject* seq = PyTuple_GET_ITEM(PyTuple_GET_ITEM(reduced.get(), 1), 0);
  Py_ssize_t position = 0;
  if (PyTuple_GET_SIZE(reduced.get()) >= 3) {
    position = PyLong_AsSsize_t(PyTuple_GET_ITEM(reduced.get(), 2));
    if (position < 0) {
      clear_unless_interruption();
      return nullptr;
    }
  }
  Py_ssize_t n = PyObject_Length(seq);
  if (n < 0 || n - position > kMaxItems) {
    clear_unless_interruption();
    return nullptr;
  }
  SourcePtr reduce_source = Source::call(source, "__reduce__");
  Guard type_guard{GuardKind::type_match, source, PyRef::borrow(reinterpret_cast<PyObject*>(type))};
  guards().add(std::move(type_guard));
  std::vector<ValuePtr> items;
  if (type == &PyRangeIter_Type) {
    // (iter, (range(start, stop, step),), index): equal tuples, equal items.
    guards().add(Guard{GuardKind::const_eq, reduce_source, reduced});
    for (Py_ssize_t i = position; i < n; ++i) {
      PyRef item = PyRef::steal(PySequence_GetItem(seq, i));
      if (!item) return clear_unless_interruption(), nullptr;
      items.push_back(Value::constant(item.get()));
    }
  } else {
    PyRef zero = PyRef::steal(PyLong_FromLong(0)), one = PyRef::steal(PyLong_FromLong(1)),
          two = PyRef::steal(PyLong_FromLong(2));
    ValuePtr container = wrap_input(seq, Source::item(Source::item(reduce_source, one.get()), zero.get()));
    if (!container) return nullptr;
    PyRef index = PyRef::steal(PyLong_FromSsize_t(position));
    guards().add(Guard{GuardKind::const_eq, Source::item(reduce_source, two.get()), index});
    if (!container->is_sequence()) return nullptr;
    for (size_t i = static_cast<size_t>(position); i < container->items.size(); ++i) items.push_back(container->items[i]);
  }
  ValuePtr it = Value::iterator(std::move(items), type == &PyTupleIter_Type ? &PyTupleIter_Type : &PyListIter_Type);
  it->as_iterator().hidden = true;
  return it;
}

// ------------------------------------------------------------ nested functions

// A function defined inside another (`<locals>` in its qualified name):
// a new object each time its `def` runs, so a closure handed from a frame
// to its resume function (rebuilt after the graph) is a new object per
// call. Guarded by what the trace reads of it rather than its identity:
// its code and globals by identity, whether it has defaults; its closure
// contents and defaults are read through their own sources when used.
bool InstructionTranslator::nested_function(PyObject* fn) const {
  PyObject* qualname = reinterpret_cast<PyFunctionObject*>(fn)->func_qualname;
  const char* q = qualname && PyUnicode_Check(qualname) ? PyUnicode_AsUTF8(qualname) : nullptr;
  if (!q) PyErr_Clear();  // a qualname that does not encode: guarded by identity
  return q && std::string_view(q).find("<locals>") != std::string_view::npos;
}

void InstructionTranslator::guard_nested_function(PyObject* fn, const SourcePtr& source) {
  shared_->guards.add(Guard{GuardKind::type_match, source, PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(fn)))});
  shared_->guards.add(Guard{GuardKind::id_match, Source::attr(source, "__code__"), PyRef::borrow(PyFunction_GET_CODE(fn))});
  shared_->guards.add(
      Guard{GuardKind::id_match, Source::attr(source, "__globals__"), PyRef::borrow(PyFunction_GET_GLOBALS(fn))});
  for (const char* field : {"__defaults__", "__kwdefaults__"}) {
    PyObject* d = std::string_view(field) == "__defaults__" ? PyFunction_GET_DEFAULTS(fn) : PyFunction_GET_KW_DEFAULTS(fn);
    if (!d) {
      shared_->guards.add(Guard{GuardKind::const_eq, Source::attr(source, field), PyRef::borrow(Py_None)});
    } else if (PyTuple_Check(d)) {
      Guard g{GuardKind::length, Source::attr(source, field), PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(d)))};
      g.length = PyTuple_GET_SIZE(d);
      shared_->guards.add(std::move(g));
    } else if (PyDict_Check(d)) {
      PyRef keys = PyRef::steal(PyDict_Keys(d));
      PyRef key_tuple = PyRef::steal(keys ? PyList_AsTuple(keys.get()) : nullptr);
      if (!key_tuple) {
        clear_unless_interruption();
        shared_->guards.add(Guard{GuardKind::id_match, source, PyRef::borrow(fn)});
        continue;
      }
      shared_->guards.add(Guard{GuardKind::dict_keys, Source::attr(source, field), key_tuple});
    }
  }
  // Its attributes (fn.calls += 1) are read through their sources; its
  // __dict__'s other entries do not reach the trace.
}

// ------------------------------------------------------------ module guards

void InstructionTranslator::note_module_name_absent(const ValuePtr& module, ModuleTable table, PyObject* name) {
  Guard* g = module->source ? guards().find(GuardKind::module_match, *module->source) : nullptr;
  if (!g) return;  // not a module input
  for (const auto& [t, n] : g->absent)
    if (t == table && PyUnicode_Compare(n.get(), name) == 0) return;
  std::vector<std::pair<ModuleTable, PyRef>> one;
  one.emplace_back(table, PyRef::borrow(name));
  if (!module_names_absent(module->obj.get(), one)) {
    // Present after all (a bound method kept in the instance's __dict__):
    // this instance only.
    guards().add(Guard{GuardKind::id_match, module->source, PyRef::borrow(module->obj.get())});
    return;
  }
  PyObject* interned = PyUnicode_FromObject(name);
  if (!interned) return clear_unless_interruption();  // a str always copies; the guard stays stricter than needed
  PyUnicode_InternInPlace(&interned);
  g->absent.emplace_back(table, PyRef::steal(interned));
}

void InstructionTranslator::note_identity_compared(const ValuePtr& a, const ValuePtr& b) {
  for (const ValuePtr& v : {a, b}) {
    if (!v->source || (v->kind != ValueKind::object && v->kind != ValueKind::callable)) continue;
    auto& seen = shared_->identity_compared;
    if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  }
}

void InstructionTranslator::add_distinct_objects_guard() {
  // Values are one per object (wrap_input's SAME_OBJECT), so the values
  // compared are distinct objects at trace time, and must stay so.
  if (shared_->identity_compared.size() < 2) return;
  Guard g{GuardKind::distinct_objects, nullptr};
  for (const ValuePtr& v : shared_->identity_compared) g.sources.push_back(v->source);
  guards().add(std::move(g));
}

// ------------------------------------------------------------ locals

ValuePtr InstructionTranslator::load_local(int index) {
  if (index < nargs_ && !arg_wrapped_[index]) {
    PyObject* obj = frame_.localsplus[index];
    PyObject* name = PyTuple_GetItem(frame_.code->co_localsplusnames, index);
    set_local(index, obj ? wrap_input(obj, Source::local(index, utf8(name))) : locals_[index]);
  }
  // A list argument logged for appends (append_log.h) read otherwise: its
  // contents wrapped and guarded first (wrap_input finds the log).
  const ValuePtr& v = locals_[index];
  if (v && is_append_log(*v) && !(wrap_depth_ == 0 && loads_for_append(code_.get(), ip_, current_)) &&
      !wrap_input(v->obj.get(), v->source))
    return nullptr;
  // Likewise a dict whose lists are logs, read otherwise than into `d["k"].append`.
  if (v && has_append_logs(*v) && !(wrap_depth_ == 0 && loads_dict_for_append(code_.get(), ip_, current_)) &&
      !wrap_input(v->obj.get(), v->source))
    return nullptr;
  return locals_[index];
}

void InstructionTranslator::set_local(int slot, ValuePtr value, bool wrapped) {
  const auto i = static_cast<size_t>(slot);
  if (journals_locals_) locals_journal_.push_back({slot, std::move(locals_[i]), static_cast<bool>(arg_wrapped_[i])});
  locals_[i] = std::move(value);
  arg_wrapped_[i] = wrapped;
}

// A class or function whose metaclass keeps object's identity equality
// and hash, as a dict key (torch.utils._pytree's SUPPORTED_NODES, keyed by
// `dict`, `list`, `collections.namedtuple`): compared as Python compares it.
bool is_identity_key(PyObject* k) {
  PyTypeObject* meta = Py_TYPE(k);
  if (!PyType_Check(k) && !PyFunction_Check(k)) return false;
  return meta->tp_richcompare == PyBaseObject_Type.tp_richcompare && meta->tp_hash == PyBaseObject_Type.tp_hash;
}

bool is_class_key(const ValuePtr& v) {
  return v->kind == ValueKind::callable && v->obj && !v->bound_self() && is_identity_key(v->obj.get());
}

}  // namespace tj::tracer
