// Sets made in the traced frame: `{a, b}`, set comprehensions, `{*xs}`,
// set(iterable), their methods and operators.
//
// A set of constants is a constant value over a real Python set, so
// `in`, len(), iteration order, |, &, -, ^ and comparisons are CPython's
// own. It is mutable, so a change is copy-on-write: the value gets a new
// set object (journaled first, so a graph break undoes it) and no other
// value shares the old one. A set that leaves the graph is made again from
// its elements (set(...) of them), a new set per call. Sets of tensors or
// of other non-constant values are not modelled (a break).
#include "tracer/py_str.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

const char* const kSetMutators[] = {"add",          "discard",           "remove",        "update",
                                    "clear",        "pop",               "difference_update",
                                    "intersection_update", "symmetric_difference_update"};

PyObject* tuple_of_constants(InstructionTranslator& t, const std::vector<ValuePtr>& items, const char* what) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(items.size()));
  for (size_t i = 0; tuple && i < items.size(); ++i) {
    if (!items[i]->is_python_constant()) {
      Py_DECREF(tuple);
      return t.unsupported(std::string(what) + " with an element of type " + items[i]->type_name() +
                           " (sets of constants only)"),
             nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), items[i]->as_python());
  }
  return tuple;
}

}  // namespace

bool is_mutable_set(const ValuePtr& v) { return v->is_constant() && PySet_CheckExact(v->obj.get()); }

ValuePtr InstructionTranslator::make_set(const std::vector<ValuePtr>& items, bool frozen) {
  PyObject* tuple = tuple_of_constants(*this, items, frozen ? "frozenset()" : "a set");
  if (!tuple) return nullptr;
  PyObject* s = frozen ? PyFrozenSet_New(tuple) : PySet_New(tuple);
  Py_DECREF(tuple);
  if (!s) return PyErr_Clear(), unsupported("a set of unhashable elements (TypeError)"), nullptr;
  return Value::constant_steal(s);
}

bool InstructionTranslator::op_build_set(const bc::Instruction& inst) {
  ValuePtr s = make_set(pop_n(static_cast<size_t>(inst.arg)), false);
  if (!s) return false;
  push(std::move(s));
  return true;
}

bool InstructionTranslator::op_set_add(const bc::Instruction& inst) {
  ValuePtr item = pop();
  ValuePtr& set = peek(static_cast<size_t>(inst.arg) - 1);
  if (!is_mutable_set(set)) return unsupported("SET_ADD on a " + set->type_name());
  std::vector<ValuePtr> args{item};
  return call_set_method(set, "add", args) != nullptr;
}

bool InstructionTranslator::op_set_update(const bc::Instruction& inst) {
  ValuePtr items = pop();
  ValuePtr& set = peek(static_cast<size_t>(inst.arg) - 1);
  if (!is_mutable_set(set)) return unsupported("SET_UPDATE on a " + set->type_name());
  std::vector<ValuePtr> args{items};
  return call_set_method(set, "update", args) != nullptr;
}

ValuePtr InstructionTranslator::call_set_method(const ValuePtr& self, const std::string& name, std::vector<ValuePtr>& args) {
  // Iterables of values (lists made in the frame, dict views, ...) as sets of constants.
  std::vector<PyObject*> real;
  bool ok = true;
  for (auto& a : args) {
    PyObject* o = nullptr;
    if (a->is_python_constant()) {
      o = a->as_python();
    } else if (auto items = iterable_items(a, "set." + name + "()")) {
      PyObject* tuple = tuple_of_constants(*this, *items, ("set." + name + "()").c_str());
      o = tuple;
    }
    ok &= o != nullptr;
    real.push_back(o);
  }
  ValuePtr result;
  if (ok) {
    bool mutator = false;
    for (const char* m : kSetMutators) mutator |= name == m;
    // Copy-on-write: the call runs on a copy that then replaces the value's set.
    PyObject* target = mutator ? PySet_New(self->obj.get()) : Py_NewRef(self->obj.get());
    PyObject* method = target ? PyObject_GetAttrString(target, name.c_str()) : nullptr;
    PyObject* call_args = PyTuple_New(static_cast<Py_ssize_t>(real.size()));
    for (size_t i = 0; call_args && i < real.size(); ++i) PyTuple_SET_ITEM(call_args, static_cast<Py_ssize_t>(i), Py_NewRef(real[i]));
    PyObject* r = method && call_args ? PyObject_Call(method, call_args, nullptr) : nullptr;
    Py_XDECREF(method);
    Py_XDECREF(call_args);
    if (!r) {
      PyErr_Clear();
      unsupported("set." + name + "() raised at trace time (KeyError, TypeError, ...)");
    } else {
      if (mutator) {
        journal(self);
        self->obj = bc::PyRef::borrow(target);
      }
      result = Value::constant_steal(r);
    }
    Py_XDECREF(target);
  }
  for (PyObject* o : real) Py_XDECREF(o);
  return result;
}

ValuePtr InstructionTranslator::set_inplace_op(int op, const ValuePtr& lhs, const ValuePtr& rhs) {
  // s |= t, s &= t, s -= t, s ^= t: the same set object, changed.
  static const std::pair<int, const char*> kOps[] = {{1, "intersection_update"}, {7, "update"}, {10, "difference_update"},
                                                      {12, "symmetric_difference_update"}};
  for (const auto& [base, method] : kOps) {
    if (op % 13 != base) continue;
    if (!rhs->is_constant() || !PyAnySet_Check(rhs->obj.get()))
      return unsupported("a set operator with a " + rhs->type_name() + " (TypeError)"), nullptr;
    std::vector<ValuePtr> args{rhs};
    return call_set_method(lhs, method, args) ? lhs : nullptr;
  }
  return nullptr;
}

}  // namespace tj::tracer
