// Sets made in the traced frame: `{a, b}`, set comprehensions, `{*xs}`,
// set(iterable), their methods and operators.
//
// A set of constants is a constant value over a real Python set, so
// `in`, len(), iteration order, |, &, -, ^ and comparisons are CPython's
// own. It is mutable, so a change is copy-on-write: the value gets a new
// set object (journaled first, so a graph break undoes it) and no other
// value shares the old one. A set that leaves the graph is made again from
// its elements (set(...) of them), a new set per call.
//
// A set with a tensor or a module in it (`memo = set()` in
// Module.named_modules and _named_members, `set(model.parameters())`) is a
// *keyed set*: a dict value whose `obj` is an empty set (so type() and
// isinstance see a set), keyed like a dict (dict_keys.cpp: constants by ==,
// tensors and modules by identity, as their __hash__ is id), with the
// elements themselves as the items. `in`, len(), truth and iteration are
// the dict's; iteration runs in insertion order, where CPython's order of a
// set of tensors follows their addresses (no program can rely on it). It
// leaves the graph as a new set of its elements. The methods below are
// modelled; any other is a break.
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "tracer/py_str.h"
#include "tracer/sets_and_dicts.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

const char* const kSetMutators[] = {"add",          "discard",           "remove",        "update",
                                    "clear",        "pop",               "difference_update",
                                    "intersection_update", "symmetric_difference_update"};

PyRef tuple_of_constants(TraceContext t, const std::vector<ValuePtr>& items, const char* what) {
  PyRef tuple = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
  for (size_t i = 0; tuple && i < items.size(); ++i) {
    if (!items[i]->is_python_constant()) {
      t.unsupported(std::string(what) + " with an element of type " + items[i]->type_name() +
                    " (sets of constants only)");
      return {};
    }
    PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), items[i]->as_python().release());
  }
  return tuple;
}

}  // namespace

bool is_mutable_set(const ValuePtr& v) {
  return (v->is_constant() && PySet_CheckExact(v->obj.get())) || (is_keyed_set(v) && PySet_CheckExact(v->obj.get()));
}

bool is_keyed_set(const ValuePtr& v) { return v->kind == ValueKind::dict && v->obj && PyAnySet_Check(v->obj.get()); }

bool keyed_set_insert(TraceContext cx, Value& set, const ValuePtr& item) {
  ValuePtr key = dict_key(cx, item);
  if (!key) return false;
  if (find_dict_key(cx, set, key) < 0) {
    set.keys.push_back(key);
    set.items.push_back(item);
  }
  return true;
}

ValuePtr make_keyed_set(TraceContext cx, const std::vector<ValuePtr>& items, bool frozen) {
  ValuePtr set = Value::dict({}, {});
  set->obj = PyRef::steal(frozen ? PyFrozenSet_New(nullptr) : PySet_New(nullptr));
  for (const ValuePtr& item : items)
    if (!keyed_set_insert(cx, *set, item)) return nullptr;
  return set;
}

namespace {

// The methods of a keyed set, found by name in kKeyedSetMethods: `copy`;
// the queries, which make a new set or a bool from self and their argument
// (union: of any number); the mutators, which change self. Any other name
// is not modelled.
enum class KeyedSetMethod {
  copy,
  union_of, intersection, difference, isdisjoint, issubset, issuperset,
  add, discard, remove, update, clear, difference_update, intersection_update,
};

const std::unordered_map<std::string_view, KeyedSetMethod> kKeyedSetMethods = {
    {"copy", KeyedSetMethod::copy},
    {"union", KeyedSetMethod::union_of},
    {"intersection", KeyedSetMethod::intersection},
    {"difference", KeyedSetMethod::difference},
    {"isdisjoint", KeyedSetMethod::isdisjoint},
    {"issubset", KeyedSetMethod::issubset},
    {"issuperset", KeyedSetMethod::issuperset},
    {"add", KeyedSetMethod::add},
    {"discard", KeyedSetMethod::discard},
    {"remove", KeyedSetMethod::remove},
    {"update", KeyedSetMethod::update},
    {"clear", KeyedSetMethod::clear},
    {"difference_update", KeyedSetMethod::difference_update},
    {"intersection_update", KeyedSetMethod::intersection_update},
};

bool is_query(KeyedSetMethod m) { return m >= KeyedSetMethod::union_of && m <= KeyedSetMethod::issuperset; }
bool is_mutator(KeyedSetMethod m) { return m >= KeyedSetMethod::add; }

// One call of a keyed set's method: self, its arguments, and the helpers
// every method shares.
struct KeyedSetCall {
  mutable TraceContext cx;  // its operations are not const
  const ValuePtr& self;
  const std::string& name;
  std::vector<ValuePtr>& args;
  bool frozen;

  std::optional<std::vector<ValuePtr>> elements_of(const ValuePtr& v) const {
    if (is_keyed_set(v)) return v->items;
    return cx.iterable_items(v, "set." + name + "()");
  }
  ValuePtr copy_of(const ValuePtr& from) const {
    ValuePtr out = Value::dict(from->keys, from->items);
    out->obj = PyRef::steal(frozen ? PyFrozenSet_New(nullptr) : PySet_New(nullptr));
    return out;
  }
  // A new set of the elements of self that `keep` says yes to.
  ValuePtr filtered(const std::function<bool(const ValuePtr& key)>& keep) const {
    ValuePtr out = copy_of(self);
    out->keys.clear();
    out->items.clear();
    for (size_t i = 0; i < self->keys.size(); ++i)
      if (keep(self->keys[i])) {
        out->keys.push_back(self->keys[i]);
        out->items.push_back(self->items[i]);
      }
    return out;
  }
  std::optional<ValuePtr> keys_of(const std::vector<ValuePtr>& elements) const {
    ValuePtr set = make_keyed_set(cx, elements, true);
    if (!set) return std::nullopt;
    return set;
  }
};

// union, intersection, difference, isdisjoint, issubset, issuperset.
ValuePtr keyed_set_query(const KeyedSetCall& c, KeyedSetMethod method) {
  TraceContext cx = c.cx;
  const ValuePtr& self = c.self;
  if (method == KeyedSetMethod::union_of) {
    ValuePtr out = c.copy_of(self);
    for (const ValuePtr& a : c.args) {
      auto elements = c.elements_of(a);
      if (!elements) return nullptr;
      for (const ValuePtr& e : *elements)
        if (!keyed_set_insert(cx, *out, e)) return nullptr;
    }
    return out;
  }
  auto elements = c.elements_of(c.args[0]);
  if (!elements) return nullptr;
  auto other = c.keys_of(*elements);
  if (!other) return nullptr;
  const Value& o = **other;
  auto in_other = [&](const ValuePtr& key) { return find_dict_key(cx, o, key) >= 0; };
  if (method == KeyedSetMethod::intersection) return c.filtered(in_other);
  if (method == KeyedSetMethod::difference) return c.filtered([&](const ValuePtr& k) { return !in_other(k); });
  size_t common = 0;
  for (const ValuePtr& k : self->keys) common += in_other(k) ? 1 : 0;
  bool answer = method == KeyedSetMethod::isdisjoint ? common == 0
                : method == KeyedSetMethod::issubset ? common == self->keys.size()
                                                     : common == o.keys.size();
  return Value::constant(answer ? Py_True : Py_False);
}

// add, discard, remove, update, clear, difference_update, intersection_update.
ValuePtr keyed_set_mutate(const KeyedSetCall& c, KeyedSetMethod method) {
  TraceContext cx = c.cx;
  const ValuePtr& self = c.self;
  const std::string& name = c.name;
  std::vector<ValuePtr>& args = c.args;
  if (self->source) return cx.unsupported("set." + name + "() on a set the function was given (not modelled)"), nullptr;
  std::vector<ValuePtr> elements;
  const bool one_element =
      method == KeyedSetMethod::add || method == KeyedSetMethod::discard || method == KeyedSetMethod::remove;
  if (one_element) {
    if (args.size() != 1) return cx.unsupported("set." + name + "() with " + std::to_string(args.size()) + " arguments"), nullptr;
    elements = args;
  } else {
    for (const ValuePtr& a : args) {
      auto more = c.elements_of(a);
      if (!more) return nullptr;
      elements.insert(elements.end(), more->begin(), more->end());
    }
  }
  auto other = c.keys_of(elements);
  if (!other) return nullptr;
  const Value& o = **other;
  if (method == KeyedSetMethod::remove)
    for (const ValuePtr& k : o.keys)
      if (find_dict_key(cx, *self, k) < 0) return cx.unsupported("set.remove() of an element not in the set (KeyError)"), nullptr;
  cx.journal(self);
  cx.record_container_mutation(self);
  if (method == KeyedSetMethod::add || method == KeyedSetMethod::update) {
    for (const ValuePtr& e : elements)
      if (!keyed_set_insert(cx, *self, e)) return nullptr;
    return Value::constant(Py_None);
  }
  ValuePtr kept = method == KeyedSetMethod::clear ? c.filtered([](const ValuePtr&) { return false; })
                  : method == KeyedSetMethod::intersection_update
                      ? c.filtered([&](const ValuePtr& k) { return find_dict_key(cx, o, k) >= 0; })
                      : c.filtered([&](const ValuePtr& k) { return find_dict_key(cx, o, k) < 0; });
  self->keys = kept->keys;
  self->items = kept->items;
  return Value::constant(Py_None);
}

}  // namespace

ValuePtr call_keyed_set_method(TraceContext cx, const ValuePtr& self, const std::string& name,
                               std::vector<ValuePtr>& args) {
  const bool frozen = !PySet_CheckExact(self->obj.get());
  auto row = kKeyedSetMethods.find(name);
  std::optional<KeyedSetMethod> method;
  if (row != kKeyedSetMethods.end()) method = row->second;
  KeyedSetCall call{cx, self, name, args, frozen};
  if (method == KeyedSetMethod::copy && args.empty()) return call.copy_of(self);
  if (method && is_query(*method) && (method == KeyedSetMethod::union_of || args.size() == 1))
    return keyed_set_query(call, *method);
  if (frozen) return cx.unsupported("frozenset." + name + "() (not modelled)"), nullptr;
  if (!method || !is_mutator(*method))
    return cx.unsupported("set." + name + "() on a set of tensors or modules (not modelled)"), nullptr;
  return keyed_set_mutate(call, *method);
}

ValuePtr keyed_set_binary_op(TraceContext cx, bc::BinaryOp op, const ValuePtr& lhs, const ValuePtr& rhs) {
  auto as_keyed = [&](const ValuePtr& v) -> ValuePtr {
    if (is_keyed_set(v)) return v;
    if (!v->is_constant() || !PyAnySet_Check(v->obj.get())) return nullptr;
    auto items = cx.iterable_items(v, "a set operator");
    return items ? make_keyed_set(cx, *items, !PySet_CheckExact(v->obj.get())) : nullptr;
  };
  ValuePtr a = as_keyed(lhs), b = as_keyed(rhs);
  if (!a || !b) return nullptr;
  const bc::BinaryOpInfo& row = bc::binary_op_info(op);
  if (row.set_method.empty()) return nullptr;
  std::vector<ValuePtr> args{b};
  if (op != bc::BinaryOp::bit_xor) return call_keyed_set_method(cx, a, std::string(row.set_method), args);
  // Keyed sets model no symmetric_difference: (a - b) | (b - a).
  ValuePtr left = call_keyed_set_method(cx, a, "difference", args);
  std::vector<ValuePtr> back{a};
  ValuePtr right = left ? call_keyed_set_method(cx, b, "difference", back) : nullptr;
  std::vector<ValuePtr> both{right};
  return right ? call_keyed_set_method(cx, left, "union", both) : nullptr;
}

ValuePtr make_set(TraceContext cx, const std::vector<ValuePtr>& items, bool frozen) {
  for (const ValuePtr& item : items)
    if (!item->is_python_constant()) return make_keyed_set(cx, items, frozen);
  PyRef tuple = tuple_of_constants(cx, items, frozen ? "frozenset()" : "a set");
  if (!tuple) return nullptr;
  PyObject* s = frozen ? PyFrozenSet_New(tuple.get()) : PySet_New(tuple.get());
  if (!s) return clear_expected_error({PyExc_TypeError}), cx.unsupported("a set of unhashable elements (TypeError)"), nullptr;
  return Value::constant_steal(s);
}

ValuePtr call_set_method(TraceContext cx, const ValuePtr& self, const std::string& name, std::vector<ValuePtr>& args) {
  if (is_keyed_set(self)) return call_keyed_set_method(cx, self, name, args);
  // A set of constants given non-constant elements becomes a keyed set.
  bool constant_args = true;
  for (const ValuePtr& a : args) {
    if (is_keyed_set(a)) constant_args = false;
    if (a->is_python_constant() || is_keyed_set(a)) continue;
    if (a->is_tensor() || is_module_key(a)) constant_args = false;
    else if (auto items = cx.iterable_items(a, "set." + name + "()")) {
      for (const ValuePtr& item : *items) constant_args &= item->is_python_constant();
    } else {
      return nullptr;
    }
  }
  if (!constant_args) {
    auto elements = cx.iterable_items(self, "set." + name + "()");
    if (!elements) return nullptr;
    ValuePtr keyed = make_keyed_set(cx, *elements, !PySet_CheckExact(self->obj.get()));
    if (!keyed) return nullptr;
    ValuePtr result = call_keyed_set_method(cx, keyed, name, args);
    if (!result) return nullptr;
    bool mutator = false;
    for (const char* m : kSetMutators) mutator |= name == m;
    if (mutator) {  // the value itself becomes the keyed set
      cx.journal(self);
      *self = *keyed;
    }
    return result;
  }
  // Iterables of values (lists made in the frame, dict views, ...) as sets of constants.
  std::vector<PyRef> real;
  bool ok = true;
  for (auto& a : args) {
    PyRef o;
    if (a->is_python_constant()) {
      o = a->as_python();
    } else if (auto items = cx.iterable_items(a, "set." + name + "()")) {
      o = tuple_of_constants(cx, *items, ("set." + name + "()").c_str());
    }
    ok &= bool(o);
    real.push_back(std::move(o));
  }
  ValuePtr result;
  if (ok) {
    bool mutator = false;
    for (const char* m : kSetMutators) mutator |= name == m;
    // Copy-on-write: the call runs on a copy that then replaces the value's set.
    PyRef target = mutator ? PyRef::steal(PySet_New(self->obj.get())) : self->obj;
    PyRef method = PyRef::steal(target ? PyObject_GetAttrString(target.get(), name.c_str()) : nullptr);
    PyRef call_args = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(real.size())));
    for (size_t i = 0; call_args && i < real.size(); ++i)
      PyTuple_SET_ITEM(call_args.get(), static_cast<Py_ssize_t>(i), PyRef(real[i]).release());
    PyRef r = PyRef::steal(method && call_args ? PyObject_Call(method.get(), call_args.get(), nullptr) : nullptr);
    if (!r) {
      clear_expected_error({PyExc_KeyError, PyExc_TypeError});  // unsupported() names anything else
      cx.unsupported("set." + name + "() raised at trace time (KeyError, TypeError, ...)");
    } else {
      if (mutator) {
        cx.journal(self);
        self->obj = target;
      }
      result = Value::constant(r.get());
    }
  }
  return result;
}

ValuePtr set_inplace_op(TraceContext cx, bc::BinaryOp op, const ValuePtr& lhs, const ValuePtr& rhs) {
  // s |= t, s &= t, s -= t, s ^= t: the same set object, changed.
  const std::string method(bc::binary_op_info(op).set_update_method);
  if (method.empty()) return nullptr;
  if (!is_keyed_set(rhs) && !(rhs->is_constant() && PyAnySet_Check(rhs->obj.get())))
    return cx.unsupported("a set operator with a " + rhs->type_name() + " (TypeError)"), nullptr;
  std::vector<ValuePtr> args{rhs};
  return call_set_method(cx, lhs, method, args) ? lhs : nullptr;
}

bool InstructionTranslator::op_build_set(const bc::Instruction& inst) {
  ValuePtr s = make_set(*this, pop_n(static_cast<size_t>(inst.arg)), false);
  if (!s) return false;
  push(std::move(s));
  return true;
}

bool InstructionTranslator::op_set_add(const bc::Instruction& inst) {
  ValuePtr item = pop();
  ValuePtr& set = peek(static_cast<size_t>(inst.arg) - 1);
  if (!is_mutable_set(set)) return unsupported("SET_ADD on a " + set->type_name());
  std::vector<ValuePtr> args{item};
  return call_set_method(*this, set, "add", args) != nullptr;
}

bool InstructionTranslator::op_set_update(const bc::Instruction& inst) {
  ValuePtr items = pop();
  ValuePtr& set = peek(static_cast<size_t>(inst.arg) - 1);
  if (!is_mutable_set(set)) return unsupported("SET_UPDATE on a " + set->type_name());
  std::vector<ValuePtr> args{items};
  return call_set_method(*this, set, "update", args) != nullptr;
}

}  // namespace tj::tracer
