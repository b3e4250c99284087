// Methods of the containers the tracer models as values (lists, dicts,
// tuples, torch.Size; sets go to translate_sets.cpp): mutators journal the
// value (undone at a graph break) and record the mutation of an input
// container; readers answer from the items. See translate_call.h. They
// work through a TraceContext (trace_context.h), not the translator.
#include <string_view>
#include <unordered_map>

#include "support/tensor_bridge.h"
#include "tracer/sizes.h"
#include "tracer/translate_call.h"

namespace tj::tracer {

namespace {

// A method's answer: a value (null: failed, the reason set), or nullopt:
// not this method's case (call_container_method then refuses it).
using Answer = std::optional<ValuePtr>;
using Args = std::vector<ValuePtr>;
// One method of a container kind; `name` is the method's, for messages.
using Method = Answer (*)(TraceContext t, const ValuePtr& self, const std::string& name, Args& args);
using MethodTable = std::unordered_map<std::string_view, Method>;

ValuePtr none() { return Value::constant(Py_None); }

// Methods of a dict value: update, pop, setdefault, clear (mutators); keys,
// values, items (live views), get, copy.
Answer dict_update(TraceContext t, const ValuePtr& self, const std::string&, Args& args) {
  if (args.size() != 1 || args[0]->kind != ValueKind::dict) return std::nullopt;
  for (size_t i = 0; i < args[0]->keys.size(); ++i) {
    if (int j = find_dict_key(t, *self, args[0]->keys[i]); j >= 0) {
      self->items[static_cast<size_t>(j)] = args[0]->items[i];
    } else {
      self->keys.push_back(args[0]->keys[i]);
      self->items.push_back(args[0]->items[i]);
    }
  }
  return none();
}

Answer dict_pop(TraceContext t, const ValuePtr& self, const std::string&, Args& args) {
  if (args.size() != 1 && args.size() != 2) return std::nullopt;
  ValuePtr key = dict_key(t, args[0]);
  if (!key) return nullptr;
  if (int i = find_dict_key(t, *self, key); i >= 0) {
    ValuePtr v = self->items[static_cast<size_t>(i)];
    self->keys.erase(self->keys.begin() + i);
    self->items.erase(self->items.begin() + i);
    return v;
  }
  if (args.size() == 2) return args[1];
  return t.unsupported("dict.pop() of a missing key raises KeyError"), nullptr;
}

Answer dict_setdefault(TraceContext t, const ValuePtr& self, const std::string&, Args& args) {
  if (args.size() != 1 && args.size() != 2) return std::nullopt;
  ValuePtr key = dict_key(t, args[0]);
  if (!key) return nullptr;
  if (int i = find_dict_key(t, *self, key); i >= 0) return self->items[static_cast<size_t>(i)];
  self->keys.push_back(key);
  self->items.push_back(args.size() == 2 ? args[1] : none());
  return self->items.back();
}

Answer dict_clear(TraceContext, const ValuePtr& self, const std::string&, Args& args) {
  if (!args.empty()) return std::nullopt;
  self->keys.clear();
  self->items.clear();
  return none();
}

// Views are live: they read the dict at each use.
template <DictViewKind kind>
Answer dict_view(TraceContext, const ValuePtr& self, const std::string&, Args& args) {
  if (!args.empty()) return std::nullopt;
  return Value::dict_view(self, kind);
}

Answer dict_get(TraceContext t, const ValuePtr& self, const std::string&, Args& args) {
  if (args.size() != 1 && args.size() != 2) return std::nullopt;
  ValuePtr key = dict_key(t, args[0]);
  if (!key) return nullptr;
  if (int i = find_dict_key(t, *self, key); i >= 0) return self->items[static_cast<size_t>(i)];
  return args.size() == 2 ? args[1] : none();
}

Answer dict_copy(TraceContext t, const ValuePtr& self, const std::string&, Args& args) {
  if (!args.empty()) return std::nullopt;
  ValuePtr copy = Value::dict(self->keys, self->items);
  if (self->obj && !PyDict_CheckExact(self->obj.get())) {  // an OrderedDict/defaultdict copies as its type
    PyObject* empty = PyObject_CallNoArgs(reinterpret_cast<PyObject*>(Py_TYPE(self->obj.get())));
    if (!empty) return t.unsupported("copy() of a " + self->type_name()), nullptr;  // it names an unexpected error
    copy->obj = PyRef::steal(empty);
    if (self->default_factory()) copy->payload = DefaultDictPayload{self->default_factory()};
  }
  return copy;
}

// Mutators of a list value: clear, append, extend, pop, insert, reverse; copy.
Answer list_clear(TraceContext, const ValuePtr& self, const std::string&, Args& args) {
  if (!args.empty()) return std::nullopt;
  self->items.clear();
  return none();
}

Answer list_append(TraceContext, const ValuePtr& self, const std::string&, Args& args) {
  if (args.size() != 1) return std::nullopt;
  self->items.push_back(args[0]);
  return none();
}

Answer list_extend(TraceContext, const ValuePtr& self, const std::string&, Args& args) {
  if (args.size() != 1 || !args[0]->is_sequence()) return std::nullopt;
  for (auto& v : args[0]->items) self->items.push_back(v);
  return none();
}

Answer list_pop(TraceContext t, const ValuePtr& self, const std::string&, Args& args) {
  if (args.size() > 1 || self->items.empty()) return std::nullopt;
  if (!args.empty()) args[0] = specialize(t, args[0]);  // l.pop(n) of a size: by the number
  if (!args.empty() && !(args[0]->is_constant() && PyLong_Check(args[0]->obj.get())))
    return t.unsupported("list.pop() with an index of type " + args[0]->type_name()), nullptr;
  long idx = args.empty() ? -1 : PyLong_AsLong(args[0]->obj.get());
  long n = static_cast<long>(self->items.size());
  if (idx < 0) idx += n;
  if (idx < 0 || idx >= n) return t.unsupported("pop index out of range"), nullptr;
  ValuePtr v = self->items[static_cast<size_t>(idx)];
  self->items.erase(self->items.begin() + idx);
  return v;
}

Answer list_insert(TraceContext t, const ValuePtr& self, const std::string&, Args& args) {
  if (args.size() != 2 || !(args[0] = specialize(t, args[0]))->is_constant()) return std::nullopt;
  long idx = PyLong_AsLong(args[0]->obj.get());
  long n = static_cast<long>(self->items.size());
  if (idx < 0) idx = std::max(0L, idx + n);
  idx = std::min(idx, n);
  self->items.insert(self->items.begin() + idx, args[1]);
  return none();
}

Answer list_copy(TraceContext, const ValuePtr& self, const std::string&, Args& args) {
  if (!args.empty()) return std::nullopt;
  return Value::sequence(ValueKind::list, self->items);
}

Answer list_reverse(TraceContext, const ValuePtr& self, const std::string&, Args& args) {
  if (!args.empty()) return std::nullopt;
  std::reverse(self->items.begin(), self->items.end());
  return none();
}

// tuple/list .index(v) and .count(v) of a constant or a size.
template <bool count_all>
Answer sequence_search(TraceContext t, const ValuePtr& self, const std::string& name, Args& args) {
  if (args.size() != 1 || !(args[0]->is_constant() || args[0]->is_symint())) return std::nullopt;
  long count = 0, first = -1;
  for (size_t i = 0; i < self->items.size() && !(!count_all && first >= 0); ++i) {
    const auto& v = self->items[i];
    ValuePtr same = compare_sizes(t, Py_EQ, v, args[0]);  // a size: the comparison is a fact
    if (!same && (!v->is_constant() || !args[0]->is_constant()))
      return t.unsupported(self->type_name() + "." + name + "() comparing a " + v->type_name()), nullptr;
    if (same ? same->obj.get() == Py_True : PyObject_RichCompareBool(v->obj.get(), args[0]->obj.get(), Py_EQ) == 1) {
      if (first < 0) first = static_cast<long>(i);
      ++count;
    }
  }
  if (!clear_expected_error({PyExc_TypeError}))  // constants that do not compare count as different
    return t.unsupported(self->type_name() + "." + name + "() raised comparing its items"), nullptr;
  if (count_all) return Value::constant_steal(PyLong_FromLong(count));
  if (first < 0) return t.unsupported("value not in sequence"), nullptr;
  return Value::constant_steal(PyLong_FromLong(first));
}

// x.size().numel()
Answer size_numel(TraceContext t, const ValuePtr& self, const std::string&, Args& args) {
  if (!args.empty()) return std::nullopt;
  if (ValuePtr n = size_product(t, self->items)) return n;
  return std::nullopt;
}

const MethodTable kDictMethods = {
    {"update", dict_update},
    {"pop", dict_pop},
    {"setdefault", dict_setdefault},
    {"clear", dict_clear},
    {"keys", dict_view<DictViewKind::keys>},
    {"values", dict_view<DictViewKind::values>},
    {"items", dict_view<DictViewKind::items>},
    {"get", dict_get},
    {"copy", dict_copy},
};
const MethodTable kListMethods = {
    {"clear", list_clear}, {"append", list_append},   {"extend", list_extend}, {"pop", list_pop},
    {"insert", list_insert}, {"copy", list_copy}, {"reverse", list_reverse},
};
// Of tuples and lists both.
const MethodTable kSequenceMethods = {{"index", sequence_search<false>}, {"count", sequence_search<true>}};
const MethodTable kSizeMethods = {{"numel", size_numel}};

// `table[name]` called on self: nullopt when the table has no such method
// or it declined these arguments.
Answer call_from(const MethodTable& table, TraceContext t, const ValuePtr& self, const std::string& name, Args& args) {
  auto it = table.find(name);
  if (it == table.end()) return std::nullopt;
  return it->second(t, self, name, args);
}

}  // namespace

// Methods of lists and dicts created in (or read by) the frame.
ValuePtr call_container_method(TraceContext t, const ValuePtr& self, const std::string& name,
                               std::vector<ValuePtr>& args) {
  if ((self->is_constant() && PyAnySet_CheckExact(self->obj.get())) || is_keyed_set(self))
    return call_set_method(t, self, name, args);
  t.journal(self);
  static const char* kMutators[] = {"append", "extend", "pop", "insert", "reverse", "update", "clear", "setdefault"};
  for (const char* m : kMutators)
    if (name == m) t.record_container_mutation(self);
  if (self->kind == ValueKind::dict)
    if (Answer answer = call_from(kDictMethods, t, self, name, args)) return *answer;
  if (self->kind == ValueKind::list)
    if (Answer answer = call_from(kListMethods, t, self, name, args)) return *answer;
  if (self->kind == ValueKind::tuple || self->kind == ValueKind::list)
    if (Answer answer = call_from(kSequenceMethods, t, self, name, args)) return *answer;
  if (self->kind == ValueKind::tuple && self->obj.get() == size_type())
    if (Answer answer = call_from(kSizeMethods, t, self, name, args)) return *answer;
  return t.unsupported(self->type_name() + "." + name + "() is not supported"), nullptr;
}

}  // namespace tj::tracer
