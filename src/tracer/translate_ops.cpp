// Opcode handlers for operators: BINARY_OP, COMPARE_OP, IS_OP,
// CONTAINS_OP, UNARY_*, BINARY_SUBSCR, STORE_SUBSCR. Constants fold by
// running the real Python operation; tensors go to torch_ops.
#include <algorithm>
#include <cmath>

#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/objects.h"
#include "tracer/number_facts.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "tracer/translate_call.h"
#include "tracer/trace_context.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

int compare_op_of(const bc::Instruction& inst) { return inst.arg; }  // 3.11: Py_LT..Py_GE

// Finds `key` among constant values; nullopt when a value is not constant.
std::optional<bool> contains_constant(const std::vector<ValuePtr>& items, PyObject* key) {
  for (const auto& v : items) {
    if (!v->is_constant()) return std::nullopt;
    int r = PyObject_RichCompareBool(v->obj.get(), key, Py_EQ);
    if (r < 0) {
      clear_expected_error({PyExc_TypeError});  // `in` of values that do not compare; anything else is named by the trace
      return std::nullopt;
    }
    if (r) return true;
  }
  return false;
}

// BINARY_OP's sequence step: concatenation and repetition of lists and
// tuples (`l += [x]` changes l itself). `handled` false when `op` on these
// values is neither; null with the failure set when it cannot be traced.
ValuePtr sequence_binary_op(TraceContext cx, const bc::BinaryOpArg& op, const ValuePtr& lhs, const ValuePtr& rhs,
                            bool& handled) {
  handled = true;
  const bool inplace = op.inplace;
  if (op.op() == bc::BinaryOp::add && lhs->is_sequence() && (rhs->is_sequence() || rhs->is_constant())) {
    std::vector<ValuePtr> extra;
    if (rhs->is_sequence()) {
      extra = rhs->items;
    } else if (PyTuple_Check(rhs->obj.get()) || PyList_Check(rhs->obj.get())) {
      for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(rhs->obj.get()); ++i)
        extra.push_back(Value::constant(PySequence_Fast_GET_ITEM(rhs->obj.get(), i)));
    } else {
      return cx.unsupported("adding a " + rhs->type_name() + " to a " + lhs->type_name()), nullptr;
    }
    if (inplace && lhs->kind == ValueKind::list) {
      cx.record_container_mutation(lhs);
      cx.journal(lhs);
      for (auto& v : extra) lhs->items.push_back(v);
      return lhs;
    }
    std::vector<ValuePtr> items = lhs->items;
    for (auto& v : extra) items.push_back(v);
    ValuePtr joined = Value::sequence(lhs->kind, std::move(items));
    if (lhs->kind == ValueKind::tuple && lhs->obj.get() == size_type()) joined->obj = lhs->obj;  // torch.Size + tuple
    return joined;
  }
  if (op.op() == bc::BinaryOp::add && lhs->is_constant() && rhs->is_sequence() && PyTuple_Check(lhs->obj.get())) {
    std::vector<ValuePtr> items;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(lhs->obj.get()); ++i) items.push_back(Value::constant(PyTuple_GET_ITEM(lhs->obj.get(), i)));
    for (auto& v : rhs->items) items.push_back(v);
    return Value::sequence(rhs->kind, std::move(items));
  }
  if (op.op() == bc::BinaryOp::multiply && lhs->is_sequence() && rhs->is_constant() && PyLong_Check(rhs->obj.get())) {
    long n = PyLong_AsLong(rhs->obj.get());
    std::vector<ValuePtr> items;
    for (long i = 0; i < n; ++i)
      for (auto& v : lhs->items) items.push_back(v);
    ValuePtr repeated = Value::sequence(lhs->kind, std::move(items));
    if (lhs->kind == ValueKind::tuple && lhs->obj.get() == size_type()) repeated->obj = lhs->obj;
    return repeated;
  }
  handled = false;
  return nullptr;
}

// `float(n * K)`, K an int constant beyond int64 that a double holds
// exactly (10**20: its odd part 5**20 < 2**53), the product going straight
// to float() (`to_float`: nothing else sees it): CPython's float of the
// exact product is that product rounded once, and so is float(n) *
// float(K) while |n| < 2**53 (float(n) exact: a fact) and |K| < 2**969 (no
// overflow). K as that float constant then, so the product is the size
// used as a number times a float (size_number_binary); null otherwise.
ValuePtr float_factor_for(TraceContext cx, const ValuePtr& size, const ValuePtr& big, bool to_float) {
  if (!to_float || !size->is_symint() || !big->is_constant() || !PyLong_CheckExact(big->obj.get())) return nullptr;
  int overflow = 0;
  PyLong_AsLongLongAndOverflow(big->obj.get(), &overflow);
  if (!overflow) return nullptr;  // within int64: symint_binary's
  const double k = PyLong_AsDouble(big->obj.get());
  PyRef back = PyRef::steal(k == -1.0 && PyErr_Occurred() ? nullptr : PyLong_FromDouble(k));
  if (!back || PyObject_RichCompareBool(back.get(), big->obj.get(), Py_EQ) != 1 || std::fabs(k) >= std::ldexp(1.0, 969)) {
    PyErr_Clear();
    return nullptr;  // not a double (10**23), or too large
  }
  constexpr int64_t kExact = int64_t{1} << 53;
  if (!size_holds(cx, Py_LT, size, kExact) || !size_holds(cx, Py_GT, size, -kExact)) return nullptr;
  return Value::constant_steal(PyFloat_FromDouble(k));
}

}  // namespace

bool InstructionTranslator::op_binary_op(const bc::Instruction& inst) {
  ValuePtr rhs = pop();
  ValuePtr lhs = pop();
  const std::optional<bc::BinaryOpArg> decoded = bc::decode_binary_op(inst.arg);
  if (!decoded) return unsupported("BINARY_OP with argument " + std::to_string(inst.arg));
  const bc::BinaryOpArg op = *decoded;
  const bool inplace = op.inplace;
  const std::string symbol(op.symbol());
  bool handled = false;
  if (lhs->is_symint() || rhs->is_symint()) {  // sizes: + - * // % stay symbolic, the rest takes the numbers
    if (op.op() == bc::BinaryOp::multiply) {  // float(n * 10**20): PRECALL 1; CALL 1 over NULL, float
      const auto& code = code_->instructions;
      const bool to_float = ip_ + 2 < code.size() && stack_.size() >= 2 &&
                            code[ip_ + 1]->opcode == static_cast<int>(bc::Opcode::PRECALL) && code[ip_ + 1]->arg == 1 &&
                            code[ip_ + 2]->opcode == static_cast<int>(bc::Opcode::CALL) && code[ip_ + 2]->arg == 1 &&
                            peek(1)->kind == ValueKind::null &&
                            (peek(0)->kind == ValueKind::callable || peek(0)->is_constant()) &&
                            peek(0)->obj.get() == reinterpret_cast<PyObject*>(&PyFloat_Type);
      if (ValuePtr k = float_factor_for(*this, lhs, rhs, to_float)) rhs = std::move(k);
      else if (ValuePtr k = float_factor_for(*this, rhs, lhs, to_float)) lhs = std::move(k);
    }
    if (ValuePtr r = symint_binary(*this, op.op(), lhs, rhs, handled); handled) {
      push(std::move(r));
      return true;
    }
    if (ValuePtr r = size_number_binary(*this, op, lhs, rhs, handled); handled) {  // x.sum() / n, n ** -0.5
      if (!r) return false;
      push(std::move(r));
      return true;
    }
    if (lhs->is_symint()) lhs = specialize(*this, lhs);
    if (rhs->is_symint()) rhs = specialize(*this, rhs);
  }
  if (ValuePtr r = binary_dunder(*this, op, lhs, rhs, handled); handled) {
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (is_python_number(lhs) || is_python_number(rhs)) {  // a number from Tensor.item()
    ValuePtr r = number_binary_op(*this, op, lhs, rhs);
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (lhs->is_tensor() || rhs->is_tensor()) {
    ValuePtr r = tensor_binary_op(*this, op, lhs, rhs);
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (inplace && is_mutable_set(lhs)) {  // s |= t changes s itself
    if (ValuePtr r = set_inplace_op(*this, op.op(), lhs, rhs)) {
      push(std::move(r));
      return true;
    }
    if (failed()) return false;
  }
  if (is_keyed_set(lhs) || is_keyed_set(rhs)) {  // s | t, s & t, s - t, s ^ t
    ValuePtr r = keyed_set_binary_op(*this, op.op(), lhs, rhs);
    if (!r) return failed() ? false : unsupported("operator " + symbol + " on sets of tensors or modules");
    push(std::move(r));
    return true;
  }
  if (lhs->is_constant() && rhs->is_constant()) {
    ValuePtr r = wrap_constant_result(PyRef::steal(op.info->apply(lhs->obj.get(), rhs->obj.get())));
    if (!r) return unsupported("constant " + symbol + " raised");
    push(std::move(r));
    return true;
  }
  if (ValuePtr r = sequence_binary_op(*this, op, lhs, rhs, handled); handled) {
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  return unsupported("operator " + symbol + " on " +
                     lhs->type_name() + " and " + rhs->type_name());
}

namespace {
// Both sides members of enum.Enum classes whose equality is not a Python
// __eq__ of their own (Enum's identity, or a mixed-in str's or int's).
bool enum_members_compared(const ValuePtr& lhs, const ValuePtr& rhs) {
  PyObject* enum_type = cached_module_attr("enum", "Enum");
  if (!enum_type || !PyType_Check(enum_type)) return clear_probe_error(), false;
  for (const ValuePtr& v : {lhs, rhs}) {
    if (!v->obj || v->kind != ValueKind::object || !PyObject_TypeCheck(v->obj.get(), reinterpret_cast<PyTypeObject*>(enum_type)))
      return false;
    PyRef name = PyRef::steal(PyUnicode_InternFromString("__eq__"));
    PyObject* eq = name ? _PyType_Lookup(Py_TYPE(v->obj.get()), name.get()) : nullptr;  // borrowed
    if (!eq || PyFunction_Check(eq)) return clear_probe_error(), false;
  }
  return true;
}
}  // namespace

bool InstructionTranslator::op_compare_op(const bc::Instruction& inst) {
  ValuePtr rhs = pop();
  ValuePtr lhs = pop();
  int op = compare_op_of(inst);
  if (ValuePtr r = compare_sizes(*this, op, lhs, rhs)) {
    push(std::move(r));
    return true;
  }
  if (lhs->is_symint()) lhs = specialize(*this, lhs);
  if (rhs->is_symint()) rhs = specialize(*this, rhs);
  if (is_python_number(lhs) || is_python_number(rhs)) {
    ValuePtr r = number_compare(*this, op, lhs, rhs);
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (lhs->is_tensor() || rhs->is_tensor()) {
    ValuePtr r = tensor_compare(*this, op, lhs, rhs);
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  PyRef a = lhs->as_python();
  PyRef b = a ? rhs->as_python() : PyRef();
  if (a && b && (op == Py_EQ || op == Py_NE) && enum_members_compared(lhs, rhs)) {
    // Members of enum.Enum classes are singletons: `self.act == Act.GELU`
    // is decided now, each side read from an input guarded by identity.
    for (const ValuePtr& v : {lhs, rhs})
      if (v->source && !v->is_python_constant()) guards().add(Guard{GuardKind::id_match, v->source, PyRef::borrow(v->obj.get())});
  } else if (!a || !b || (!lhs->is_python_constant() && !rhs->is_python_constant() && lhs->kind == ValueKind::object)) {
    return unsupported("comparing a " + lhs->type_name() + " with a " + rhs->type_name());
  }
  ValuePtr v = wrap_constant_result(PyRef::steal(PyObject_RichCompare(a.get(), b.get(), op)));
  if (!v) return false;
  push(std::move(v));
  return true;
}

bool InstructionTranslator::op_is_op(const bc::Instruction& inst) {
  ValuePtr rhs = pop();
  ValuePtr lhs = pop();
  if (rhs->is_symint()) rhs = specialize(*this, rhs);  // `n is 3` of a size: the number's identity, as eager's
  if (lhs->is_symint()) lhs = specialize(*this, lhs);
  // A number computed in the graph is a new int/float object after it: its
  // identity with another number depends on its value (CPython's small ints).
  auto number_like = [](const ValuePtr& v) {
    return is_python_number(v) || (v->is_constant() && (PyLong_Check(v->obj.get()) || PyFloat_Check(v->obj.get())));
  };
  if ((is_python_number(lhs) && number_like(rhs)) || (is_python_number(rhs) && number_like(lhs))) {
    if (refuse_dynamic_ints({lhs, rhs}, "`is`")) return false;
    return unsupported("`is` between Python numbers depends on their values");
  }
  bool same;
  if (lhs->is_tensor() || rhs->is_tensor()) {
    same = lhs->is_tensor() && rhs->is_tensor() && lhs->node == rhs->node;
  } else if (lhs->obj && rhs->obj && !lhs->is_sequence() && !rhs->is_sequence() && lhs->kind != ValueKind::dict &&
             rhs->kind != ValueKind::dict) {
    same = lhs->obj.get() == rhs->obj.get();
    if (!same) note_identity_compared(lhs, rhs);  // two module inputs apart now: still apart on reuse
  } else {
    same = lhs == rhs;
  }
  push(Value::constant((same != (inst.arg == 1)) ? Py_True : Py_False));
  return true;
}

namespace {
// `n in d` for a dict subclass read through a source (MultiStepLR's
// `milestones`, a collections.Counter): its keys guarded, the item a
// constant or a dynamic number whose equality with each key is a guarded
// fact (number_facts.h). nullopt: not this case (or a failure, reported).
std::optional<bool> contains_in_dict_object(InstructionTranslator& t, const ValuePtr& item, const ValuePtr& container) {
  if (container->kind != ValueKind::object || !container->obj || !container->source ||
      !PyDict_Check(container->obj.get()) || (!item->is_constant() && !expr_of(item)))
    return std::nullopt;
  PyRef keys = PyRef::steal(PyDict_Keys(container->obj.get()));
  PyRef key_tuple = PyRef::steal(keys ? PyList_AsTuple(keys.get()) : nullptr);
  if (!key_tuple) return t.unsupported("cannot read the keys of a " + container->type_name()), std::nullopt;
  if (item->is_constant()) {
    const int r = PyDict_Contains(container->obj.get(), item->obj.get());
    if (r < 0) return t.unsupported("`in` raised at trace time"), std::nullopt;  // an unhashable item: named by the trace
    t.guards().add(Guard{GuardKind::dict_keys, container->source, key_tuple});
    return r == 1;
  }
  bool found = false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key_tuple.get()); ++i) {
    ValuePtr equal = compare_as_fact(t, Py_EQ, item, Value::constant(PyTuple_GET_ITEM(key_tuple.get(), i)));
    if (!equal) return std::nullopt;  // a key that is no plain number
    found |= equal->obj.get() == Py_True;
  }
  t.guards().add(Guard{GuardKind::dict_keys, container->source, key_tuple});
  return found;
}

// `d[k]` of such a dict subclass whose __getitem__ is dict's (a Counter):
// `k` a constant or a dynamic number equal to one of the keys (a guarded
// fact), the keys guarded, the value read as an input. Null: not this case,
// or a missing key (which the subclass answers itself: __missing__).
ValuePtr item_of_dict_object(InstructionTranslator& t, const ValuePtr& obj, const ValuePtr& index) {
  if (obj->kind != ValueKind::object || !obj->obj || !obj->source || !PyDict_Check(obj->obj.get()) ||
      (!index->is_constant() && !expr_of(index)))
    return nullptr;
  PyRef name = PyRef::steal(PyUnicode_InternFromString("__getitem__"));
  if (!name || _PyType_Lookup(Py_TYPE(obj->obj.get()), name.get()) != _PyType_Lookup(&PyDict_Type, name.get()))
    return nullptr;  // its own __getitem__: a user object's (call_dunder)
  PyRef keys = PyRef::steal(PyDict_Keys(obj->obj.get()));
  PyRef key_tuple = PyRef::steal(keys ? PyList_AsTuple(keys.get()) : nullptr);
  if (!key_tuple) return PyErr_Clear(), nullptr;  // unreadable keys: the general path names it
  PyObject* key = index->is_constant() ? index->obj.get() : nullptr;
  if (const NumberExpr* e = key ? nullptr : expr_of(index)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key_tuple.get()) && !key; ++i) {
      PyObject* k = PyTuple_GET_ITEM(key_tuple.get(), i);
      const int equal = PyObject_RichCompareBool(e->example.get(), k, Py_EQ);
      if (equal < 0) PyErr_Clear();  // numbers compare without raising
      if (equal == 1 && compare_as_fact(t, Py_EQ, index, Value::constant(k))) key = k;
    }
    if (!key) return nullptr;
  }
  PyObject* value = PyDict_GetItemWithError(obj->obj.get(), key);
  if (!value) return PyErr_Clear(), nullptr;  // missing (or an unhashable key): the general path
  t.guards().add(Guard{GuardKind::dict_keys, obj->source, key_tuple});
  return t.wrap_input(value, Source::item(obj->source, key));
}

}  // namespace

bool InstructionTranslator::op_contains_op(const bc::Instruction& inst) {
  ValuePtr container = pop();
  ValuePtr item = pop();
  if (item->kind == ValueKind::tuple && !item->obj &&
      std::all_of(item->items.begin(), item->items.end(), [](const ValuePtr& e) { return e->is_constant(); })) {
    // a tuple of constants made in the frame (RIFE's `k = (str(device), str(size))`
    // grid-cache key): searched as the tuple it is
    if (PyRef t = item->as_python()) item = Value::constant(t.get());
    if (failed()) return false;
  }
  std::optional<bool> found;
  const Value* keys_of = container->kind == ValueKind::dict ? container.get()
                        : container->kind == ValueKind::dict_view && container->as_dict_view().which == DictViewKind::keys
                            ? container->as_dict_view().dict.get()
                            : nullptr;  // the dict whose keys `in` searches
  bool dict_like = keys_of != nullptr;
  if (dict_like && (item->is_tensor() || is_tensor_key(item) || is_module_key(item) || is_class_key(item))) {  // identity
    ValuePtr key = dict_key(*this, item);
    if (!key) return false;
    found = find_dict_key(*this, *keys_of, key) >= 0;
  } else if (is_python_number(item) && (found = contains_in_dict_object(*this, item, container))) {
    // a dynamic number in a dict subclass's keys: guarded facts
  } else if (is_python_number(item)) {
    if (failed()) return false;
    return unsupported("`in` with a Python number computed in the graph needs its value");
  } else if ((item->is_tensor() || is_module_key(item)) && container->is_constant() &&
             PyAnySet_Check(container->obj.get())) {
    found = false;  // hashed by identity: equal to no constant
  } else if (item->is_constant()) {
    if (keys_of) {
      found = contains_constant(keys_of->keys, item->obj.get());
    } else if (container->is_sequence()) {
      found = contains_constant(container->items, item->obj.get());
    } else if (container->is_constant()) {
      int r = PySequence_Contains(container->obj.get(), item->obj.get());
      if (r >= 0) found = r == 1;
      clear_expected_error({PyExc_TypeError});  // not a container; anything else is named by the trace
    }
  }
  if (!found && item->is_constant() && container->kind == ValueKind::object && container->source && container->obj &&
      PyAnySet_CheckExact(container->obj.get())) {
    // A set input of constants (a module's `_non_persistent_buffers_set`,
    // which state_dict() asks about each buffer): the answer of a copy of
    // it, the set guarded equal to that copy.
    PyObject* real = container->obj.get();
    PyRef copy = PyRef::steal(PyFrozenSet_CheckExact(real) ? PyFrozenSet_New(real) : PySet_New(real));
    bool constants = static_cast<bool>(copy);
    if (PyRef it = PyRef::steal(copy ? PyObject_GetIter(copy.get()) : nullptr))
      while (PyRef e = PyRef::steal(PyIter_Next(it.get()))) constants &= is_immutable_constant(e.get());
    if (PyErr_Occurred()) return unsupported("reading a set input raised");  // unsupported() names the error
    if (constants) {
      int r = PySequence_Contains(copy.get(), item->obj.get());
      if (r >= 0) {
        found = r == 1;
        guards().add(Guard{GuardKind::const_eq, container->source, PyRef::borrow(copy.get())});
      }
      clear_expected_error({PyExc_TypeError});  // an unhashable item: the general path names it
    }
  }
  if (!found) found = contains_in_dict_object(*this, item, container);
  if (failed()) return false;
  if (!found) return unsupported("'in' with a " + item->type_name() + " and a " + container->type_name());
  push(Value::constant((*found != (inst.arg == 1)) ? Py_True : Py_False));
  return true;
}

bool InstructionTranslator::op_unary(const bc::Instruction& inst) {
  ValuePtr v = pop();
  using O = bc::Opcode;
  const bc::Opcode op = inst.code();
  const std::string name(inst.name());
  if (op == O::UNARY_NOT) {
    auto truth = truthiness(v);
    if (!truth) return false;
    push(Value::constant(*truth ? Py_False : Py_True));
    return true;
  }
  if (v->is_symint() && op == O::UNARY_POSITIVE) {
    push(std::move(v));
    return true;
  }
  if (v->is_symint() && op == O::UNARY_NEGATIVE) {
    bool handled = false;
    push(symint_binary(*this, bc::BinaryOp::subtract, Value::constant_steal(PyLong_FromLong(0)), v, handled));
    return true;
  }
  if (v->is_symint()) v = specialize(*this, v);
  if (is_python_number(v)) {
    ValuePtr r = number_unary(*this, op, v);
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (v->is_tensor()) {
    ValuePtr r = tensor_unary(*this, op, v);
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (is_user_object(v)) {  // -obj, +obj, ~obj: its class's dunder
    const char* dunder = op == O::UNARY_NEGATIVE ? "__neg__" : op == O::UNARY_POSITIVE ? "__pos__" : "__invert__";
    bool handled = false;
    ValuePtr r = call_dunder(*this, v, dunder, {}, handled);
    if (!handled) return unsupported(name + " on a " + v->type_name() + " without " + dunder);
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (!v->is_constant()) return unsupported(name + " on a " + v->type_name());
  PyRef r = PyRef::steal(op == O::UNARY_NEGATIVE   ? PyNumber_Negative(v->obj.get())
                         : op == O::UNARY_POSITIVE ? PyNumber_Positive(v->obj.get())
                                                   : PyNumber_Invert(v->obj.get()));
  ValuePtr out = wrap_constant_result(std::move(r));
  if (!out) return false;
  push(std::move(out));
  return true;
}

namespace {

// List[int], Dict[str, Tensor], list[int], Optional[Tensor]: a typing
// generic subscripted by classes is a constant (annotations in code).
ValuePtr subscript_generic(const ValuePtr& obj, const ValuePtr& index) {
  if (obj->is_tensor() || !obj->obj || obj->is_sequence() || obj->kind == ValueKind::dict) return nullptr;
  PyObject* o = obj->obj.get();
  PyRef module = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(o)), "__module__"));
  bool typing = module && PyUnicode_Check(module.get()) && std::string(PyUnicode_AsUTF8(module.get())) == "typing";
  if (!clear_expected_error({PyExc_AttributeError})) return nullptr;  // a metaclass raising: named by the trace
  bool builtin_generic = o == reinterpret_cast<PyObject*>(&PyList_Type) || o == reinterpret_cast<PyObject*>(&PyDict_Type) ||
                         o == reinterpret_cast<PyObject*>(&PyTuple_Type) || o == reinterpret_cast<PyObject*>(&PyType_Type);
  if (!typing && !builtin_generic) return nullptr;
  PyRef key = index->as_python();
  if (!key) return nullptr;
  PyRef r = PyRef::steal(PyObject_GetItem(o, key.get()));
  if (!r) {
    clear_expected_error({PyExc_TypeError});  // a subscript typing refuses; anything else is named by the trace
    return nullptr;
  }
  return Value::constant(r.get());
}

// A slice (or a tuple of them) with a 0-d tensor among its bounds
// (op_build_slice): only tensor indexing takes it.
bool tensor_bounded_slice(const ValuePtr& index) {
  if (index->kind == ValueKind::slice)
    return std::any_of(index->items.begin(), index->items.end(), [](const ValuePtr& p) { return p->is_tensor(); });
  if (index->kind != ValueKind::tuple) return false;
  return std::any_of(index->items.begin(), index->items.end(), tensor_bounded_slice);
}

// BINARY_SUBSCR's steps: a list or tuple indexed by a constant `key`
// (an int or a slice; x.shape[1:] stays a torch.Size); an nn.Module
// container (`modules`, its items) indexed by an int, a ModuleDict's key or
// a slice. Null with the failure set when it cannot be traced.
ValuePtr sequence_item(TraceContext cx, const ValuePtr& obj, PyObject* key) {
  if (PyLong_Check(key)) {
    long n = static_cast<long>(obj->items.size());
    long i = PyLong_AsLong(key);
    if (i < 0) i += n;
    if (i < 0 || i >= n) return cx.unsupported("index out of range"), nullptr;
    return obj->items[static_cast<size_t>(i)];
  }
  if (PySlice_Check(key)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return cx.unsupported("bad slice"), nullptr;
    Py_ssize_t len = PySlice_AdjustIndices(static_cast<Py_ssize_t>(obj->items.size()), &start, &stop, step);
    std::vector<ValuePtr> items;
    for (Py_ssize_t k = 0; k < len; ++k) items.push_back(obj->items[static_cast<size_t>(start + k * step)]);
    ValuePtr sliced = Value::sequence(obj->kind, std::move(items));
    if (obj->kind == ValueKind::tuple && obj->obj.get() == size_type()) sliced->obj = obj->obj;  // x.shape[1:]: a torch.Size
    return sliced;
  }
  return cx.unsupported("sequence index of type " + std::string(Py_TYPE(key)->tp_name)), nullptr;
}

ValuePtr module_container_item(TraceContext cx, const ValuePtr& obj, const std::vector<ValuePtr>& modules, PyObject* key) {
  if (PyLong_Check(key)) {
    long n = static_cast<long>(modules.size());
    long i = PyLong_AsLong(key);
    if (i < 0) i += n;
    if (i < 0 || i >= n) return cx.unsupported("module index out of range"), nullptr;
    return modules[static_cast<size_t>(i)];
  }
  if (PyUnicode_Check(key)) {
    // A ParameterDict keeps its items as parameters, a ModuleDict as modules.
    PyObject* parameter_dict = cached_module_attr("torch.nn", "ParameterDict");
    bool parameters = parameter_dict && PyObject_IsInstance(obj->obj.get(), parameter_dict) == 1;
    clear_unless_interruption();  // a failing __instancecheck__: not one
    const char* table = parameters ? "_parameters" : "_modules";
    PyRef item = PyRef::steal(PyObject_GetItem(obj->obj.get(), key));
    ValuePtr v = item ? cx.wrap_input(item.get(), Source::item(Source::attr(obj->source, table), key)) : nullptr;
    if (!v) return cx.unsupported("ModuleDict has no such key"), nullptr;
    return v;
  }
  if (PySlice_Check(key)) {  // ModuleList[a:b] / Sequential[a:b]: the modules, callable in order
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return cx.unsupported("bad slice"), nullptr;
    Py_ssize_t len = PySlice_AdjustIndices(static_cast<Py_ssize_t>(modules.size()), &start, &stop, step);
    std::vector<ValuePtr> items;
    for (Py_ssize_t k = 0; k < len; ++k) items.push_back(modules[static_cast<size_t>(start + k * step)]);
    ValuePtr slice = Value::sequence(ValueKind::list, std::move(items));
    slice->payload = ModuleSlice{};
    return slice;
  }
  return cx.unsupported("module container index of type " + std::string(Py_TYPE(key)->tp_name)), nullptr;
}

}  // namespace

bool InstructionTranslator::op_binary_subscr(const bc::Instruction&) {
  ValuePtr index = pop();
  ValuePtr obj = pop();
  auto push_result = [this](ValuePtr v) {
    if (!v) return false;
    push(std::move(v));
    return true;
  };
  if (obj->is_tensor()) {
    ValuePtr r = tensor_getitem(*this, obj, index);
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (tensor_bounded_slice(index))  // list[t:n]: Python needs the bound's value now
    return unsupported("a " + obj->type_name() + " subscripted by a slice bounded by a tensor (its value is known "
                       "only when the graph runs; data-dependent)");
  index = specialize(*this, index);  // a list or tuple indexed by a size: by the number
  if (ValuePtr generic = subscript_generic(obj, index)) {
    push(std::move(generic));
    return true;
  }
  if (is_keyed_set(obj)) return unsupported("'set' object is not subscriptable (TypeError)");
  if (obj->kind == ValueKind::dict) {  // constant or tensor keys (dict_keys.cpp)
    ValuePtr key = dict_key(*this, index);
    if (!key) return false;
    int i = find_dict_key(*this, *obj, key);
    ValuePtr v = i >= 0 ? obj->items[static_cast<size_t>(i)] : dict_missing(*this, obj, key);
    if (!v) return false;
    push(std::move(v));
    return true;
  }
  if (ValuePtr v = item_of_dict_object(*this, obj, index)) {
    push(std::move(v));
    return true;
  }
  if (failed()) return false;
  if (!index->is_constant() && !is_user_object(obj)) return unsupported("subscript of type " + index->type_name());
  PyObject* key = index->obj.get();
  if (obj->is_sequence()) return push_result(sequence_item(*this, obj, key));
  if (auto modules = module_container_items(*this, obj))  // ModuleList[i], Sequential[i], ModuleDict[k]
    return push_result(module_container_item(*this, obj, *modules, key));
  if (is_user_object(obj)) {  // obj[k]: its class's __getitem__
    bool handled = false;
    ValuePtr r = call_dunder(*this, obj, "__getitem__", {index}, handled);
    if (!handled) return unsupported("'" + obj->type_name() + "' object is not subscriptable (no Python __getitem__)");
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  if (obj->is_constant()) {
    ValuePtr r = wrap_constant_result(PyRef::steal(PyObject_GetItem(obj->obj.get(), key)));
    if (!r) return false;
    push(std::move(r));
    return true;
  }
  return unsupported("subscript of a " + obj->type_name());
}

bool InstructionTranslator::op_store_subscr(const bc::Instruction&) {
  ValuePtr index = pop();
  ValuePtr obj = pop();
  ValuePtr value = pop();
  if (obj->is_tensor()) return tensor_setitem(*this, obj, index, value);
  if (tensor_bounded_slice(index))  // list[t:n]: Python needs the bound's value now
    return unsupported("a " + obj->type_name() + " subscripted by a slice bounded by a tensor (its value is known "
                       "only when the graph runs; data-dependent)");
  if (is_user_object(obj)) {  // obj[k] = v: its class's __setitem__
    bool handled = false;
    ValuePtr r = call_dunder(*this, obj, "__setitem__", {index, value}, handled);
    if (!handled) return unsupported("'" + obj->type_name() + "' object does not support item assignment here");
    return r != nullptr;
  }
  if (obj->source && obj->kind != ValueKind::list && obj->kind != ValueKind::dict)
    return unsupported("item assignment on a " + obj->type_name() + " that existed before the frame");
  if (obj->kind == ValueKind::list || obj->kind == ValueKind::dict) {
    record_container_mutation(obj);
    journal(obj);
  }
  if (obj->kind == ValueKind::dict) {
    ValuePtr key = dict_key(*this, index);
    if (!key) return false;
    int i = find_dict_key(*this, *obj, key);
    if (i >= 0) {
      obj->items[static_cast<size_t>(i)] = value;
    } else {
      obj->keys.push_back(key);
      obj->items.push_back(value);
    }
    return true;
  }
  if (!index->is_constant()) return unsupported("subscript of type " + index->type_name());
  PyObject* key = index->obj.get();
  if (obj->kind == ValueKind::list && PyLong_Check(key)) {
    long n = static_cast<long>(obj->items.size());
    long i = PyLong_AsLong(key);
    if (i < 0) i += n;
    if (i < 0 || i >= n) return unsupported("list assignment index out of range");
    obj->items[static_cast<size_t>(i)] = value;
    return true;
  }
  return unsupported("item assignment on a " + obj->type_name());
}

}  // namespace tj::tracer
