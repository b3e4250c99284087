// Opcode handlers: locals, constants, globals, the value stack, containers,
// iteration and jumps decided at trace time. See translator.h.
#include <cassert>

#include <algorithm>
#include <functional>

#include "tracer/objects.h"
#include "tracer/py_str.h"
#include "tracer/sizes.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {
constexpr Py_ssize_t kMaxUnrolledRange = 25000;  // a quarter of the trace's instruction budget

// Items of a value that can be iterated at trace time, or nullopt.
std::optional<std::vector<ValuePtr>> iterate_items(InstructionTranslator& t, const ValuePtr& v) {
  switch (v->kind) {
    case ValueKind::tuple:
    case ValueKind::list: return v->items;
    case ValueKind::dict: return is_keyed_set(v) ? v->items : v->keys;
    case ValueKind::dict_view: return v->view_items();
    case ValueKind::iterator: return std::vector<ValuePtr>(v->items.begin() + static_cast<long>(v->position), v->items.end());
    case ValueKind::constant: {
      // A range too long to unroll within the trace budget is not spelled
      // out item by item (the loop runs in CPython instead).
      // (Longer than a Py_ssize_t holds: OverflowError, and too long too.)
      Py_ssize_t length = PyRange_Check(v->obj.get()) ? PyObject_Length(v->obj.get()) : 0;
      if (length > kMaxUnrolledRange || (length < 0 && pending_error_is({PyExc_OverflowError}))) {
        t.unsupported("a loop over a range of more than " + std::to_string(kMaxUnrolledRange) + " items (not unrolled)");
        return std::nullopt;
      }
      PyRef it = PyRef::steal(PyObject_GetIter(v->obj.get()));
      if (!it) break;
      std::vector<ValuePtr> items;
      while (PyRef item = PyRef::steal(PyIter_Next(it.get()))) {
        items.push_back(Value::constant(item.get()));
        if (items.size() > 100000) break;
      }
      if (PyErr_Occurred() || items.size() > 100000) break;
      return items;
    }
    default: break;
  }
  clear_expected_error({PyExc_TypeError});  // not iterable; unsupported() names any other error
  t.unsupported("cannot iterate over a " + v->type_name() + " at trace time");
  return std::nullopt;
}
}  // namespace

std::optional<std::vector<ValuePtr>> InstructionTranslator::iterable_items(const ValuePtr& v, const std::string& who) {
  if (auto modules = module_container_items(*this, v)) return modules;
  if (failed()) return std::nullopt;
  if (v->is_tensor()) {
    ValuePtr unbound = call_value(Value::tensor_method(v, "unbind"), {}, {});
    if (!unbound) return std::nullopt;
    return unbound->items;
  }
  auto items = iterate_items(*this, v);
  if (!items && failure_) failure_->reason = who + "() over a " + v->type_name() + ": " + failure_->reason;
  return items;
}

bool InstructionTranslator::op_nop(const bc::Instruction&) { return true; }
bool InstructionTranslator::op_precall(const bc::Instruction&) { return true; }

bool InstructionTranslator::op_load_fast(const bc::Instruction& inst) {
  ValuePtr v = load_local(inst.arg);
  if (!v) return unsupported("local variable '" + utf8(inst.argval.get()) + "' read before assignment");
  push(std::move(v));
  return !failed();
}

bool InstructionTranslator::op_store_fast(const bc::Instruction& inst) {
  set_local(inst.arg, pop());
  return true;
}

bool InstructionTranslator::op_delete_fast(const bc::Instruction& inst) {
  set_local(inst.arg, nullptr);
  return true;
}

bool InstructionTranslator::op_load_const(const bc::Instruction& inst) {
  push(Value::constant(inst.argval.get()));
  return true;
}

void InstructionTranslator::record_container_mutation(const ValuePtr& container) {
  if (!container->source) return;
  for (const auto& e : shared_->side_effects)
    if (e.target == container && e.kind != SideEffect::Kind::set_attr) return;
  shared_->side_effects.push_back(SideEffect{
      container->kind == ValueKind::dict ? SideEffect::Kind::replace_dict : SideEffect::Kind::replace_list, container, "", nullptr});
}

bool InstructionTranslator::op_store_global(const bc::Instruction& inst) {
  if (frame_.globals != shared_->root_globals) return unsupported("assignment to a global of another module");
  std::string name = utf8(inst.argval.get());
  ValuePtr value = pop();
  shared_->side_effects.push_back(SideEffect{SideEffect::Kind::set_global, nullptr, name, value});
  for (auto& [n, v] : shared_->global_stores)
    if (n == name) {
      v = value;
      return true;
    }
  shared_->global_stores.emplace_back(name, value);
  return true;
}

bool InstructionTranslator::op_load_global(const bc::Instruction& inst) {
  PyObject* name = inst.argval.get();
  if (frame_.globals == shared_->root_globals) {
    for (auto& [n, v] : shared_->global_stores) {
      if (n == utf8(name)) {  // written earlier in the trace
        if (inst.arg & 1) push(Value::null());
        push(v);
        return true;
      }
    }
  }
  PyObject* obj = PyDict_GetItemWithError(frame_.globals, name);
  bool is_builtin = false;
  if (!obj && !PyErr_Occurred() && frame_.builtins && PyDict_Check(frame_.builtins)) {
    obj = PyDict_GetItemWithError(frame_.builtins, name);
    is_builtin = obj != nullptr;
  }
  if (!obj) return unsupported("name '" + utf8(name) + "' is not defined");
  if (inst.arg & 1) push(Value::null());
  // Where the read is guarded: G[...] for the frame's own module; through
  // the inlined function's __globals__ otherwise; torch's own code and
  // builtins in inlined calls are taken as fixed.
  SourcePtr source;
  if (!inlined_ || frame_.globals == shared_->root_globals) {
    source = Source::global(utf8(name));
  } else if (globals_source_ && !is_builtin) {
    source = Source::item(globals_source_, name);
  } else if (!unguarded_globals_ && !is_builtin) {
    return unsupported("global '" + utf8(name) + "' of an inlined function without a source");
  }
  ValuePtr v = wrap_input(obj, source);
  if (!v) return false;
  push(std::move(v));
  return true;
}

bool InstructionTranslator::op_load_deref(const bc::Instruction& inst) {
  PyCodeObject* co = frame_.code;
  int first_free = co->co_nlocalsplus - co->co_nfreevars;
  if (inst.arg < first_free) {  // a cell of this frame (MAKE_CELL made it)
    ValuePtr cell = locals_[inst.arg];
    ValuePtr v = cell && cell->kind == ValueKind::cell ? cell->items[0] : load_local(inst.arg);
    if (!v) return unsupported("cell variable '" + utf8(inst.argval.get()) + "' read before assignment");
    push(std::move(v));
    return true;
  }
  // A free variable: an inlined call's cell, or the frame's own closure cell.
  ValuePtr cell = locals_[inst.arg];
  if (!cell || cell->kind != ValueKind::cell) cell = frame_free_cell(inst.arg, true);
  if (!cell) return false;
  ValuePtr content = cell->items[0];
  if (!content) return unsupported("free variable '" + utf8(inst.argval.get()) + "' referenced before assignment");
  push(std::move(content));
  return true;
}

bool InstructionTranslator::op_store_deref(const bc::Instruction& inst) {
  PyCodeObject* co = frame_.code;
  int first_free = co->co_nlocalsplus - co->co_nfreevars;
  ValuePtr cell = locals_[inst.arg];
  if (inst.arg >= first_free && (!cell || cell->kind != ValueKind::cell)) cell = frame_free_cell(inst.arg, false);
  if (inst.arg >= first_free && !cell) return false;
  if (cell && cell->kind == ValueKind::cell) {
    ValuePtr value = pop();
    if (cell->source && cell->source->kind != SourceKind::closure_cell)
      return unsupported("assignment to a nonlocal variable (a side effect on a closure cell)");
    journal(cell);
    cell->items[0] = value;
    // A cell of the compiled frame's own closure: its content is assigned
    // after the graph; every closure reading it here sees the new value.
    if (cell->source) shared_->side_effects.push_back(SideEffect{SideEffect::Kind::set_attr, cell, "cell_contents", value});
    return true;
  }
  set_local(inst.arg, pop());
  return true;
}

// `del f` of a cell variable (Module.load_state_dict's `del load`, its
// recursive closure): a cell of an inlined call, made in the trace, is
// emptied (a later read breaks, where CPython raises NameError). Cells of
// the compiled frame itself or read from an input stay unsupported.
bool InstructionTranslator::op_delete_deref(const bc::Instruction& inst) {
  PyCodeObject* co = frame_.code;
  const int first_free = co->co_nlocalsplus - co->co_nfreevars;
  ValuePtr cell = inst.arg < first_free ? locals_[inst.arg] : nullptr;
  if (!parent_ || !cell || cell->kind != ValueKind::cell || cell->source)
    return unsupported("del of a closure variable ('" + utf8(inst.argval.get()) + "') of the compiled frame");
  if (!cell->items[0]) return unsupported("del of an unbound closure variable (NameError)");
  journal(cell);
  cell->items[0] = nullptr;
  return true;
}

bool InstructionTranslator::op_push_null(const bc::Instruction&) {
  push(Value::null());
  return true;
}

bool InstructionTranslator::op_pop_top(const bc::Instruction&) {
  pop();
  return true;
}

bool InstructionTranslator::op_copy(const bc::Instruction& inst) {
  push(peek(static_cast<size_t>(inst.arg) - 1));
  return true;
}

bool InstructionTranslator::op_swap(const bc::Instruction& inst) {
  std::swap(peek(0), peek(static_cast<size_t>(inst.arg) - 1));
  return true;
}

bool InstructionTranslator::op_return_value(const bc::Instruction&) {
  return_value_ = pop();
  return true;
}

// ------------------------------------------------------------ containers

bool InstructionTranslator::op_build_sequence(const bc::Instruction& inst) {
  auto items = pop_n(static_cast<size_t>(inst.arg));
  push(Value::sequence(inst.code() == bc::Opcode::BUILD_TUPLE ? ValueKind::tuple : ValueKind::list, std::move(items)));
  return true;
}

bool InstructionTranslator::op_build_map(const bc::Instruction& inst) {
  auto flat = pop_n(static_cast<size_t>(inst.arg) * 2);
  std::vector<ValuePtr> keys, values;
  for (size_t i = 0; i < flat.size(); i += 2) {
    ValuePtr key = dict_key(*this, flat[i]);  // constants, or tensors by identity
    if (!key) return false;
    keys.push_back(key);
    values.push_back(flat[i + 1]);
  }
  ValuePtr d = Value::dict({}, {});
  for (size_t i = 0; i < keys.size(); ++i) {
    int j = find_dict_key(*this, *d, keys[i]);
    if (j >= 0) {
      d->items[static_cast<size_t>(j)] = values[i];
    } else {
      d->keys.push_back(keys[i]);
      d->items.push_back(values[i]);
    }
  }
  push(std::move(d));
  return true;
}

bool InstructionTranslator::op_build_const_key_map(const bc::Instruction& inst) {
  ValuePtr keys = pop();
  auto values = pop_n(static_cast<size_t>(inst.arg));
  if (!keys->is_constant() || !PyTuple_Check(keys->obj.get())) return unsupported("BUILD_CONST_KEY_MAP without constant keys");
  std::vector<ValuePtr> ks;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys->obj.get()); ++i)
    ks.push_back(Value::constant(PyTuple_GET_ITEM(keys->obj.get(), i)));
  push(Value::dict(std::move(ks), std::move(values)));
  return true;
}

bool InstructionTranslator::op_build_slice(const bc::Instruction& inst) {
  auto parts = pop_n(static_cast<size_t>(inst.arg));
  // A size, or a 0-d integer tensor (x[:lengths[0]]: its value when the graph
  // runs, data_dependent.cpp); a subscript of anything but a tensor by such
  // a slice breaks (tensor_bounded_slice in translate_ops.cpp).
  auto symbolic = [](const ValuePtr& p) {
    return p->is_symint() || (p->is_tensor() && p->meta().sizes.empty() && c10::isIntegralType(p->meta().dtype, true));
  };
  if (std::any_of(parts.begin(), parts.end(), symbolic)) {
    // x[:, :T]: a slice with a size among its bounds, for tensor indexing (others specialize it or refuse)
    if (parts.size() == 2) parts.push_back(Value::constant(Py_None));
    ValuePtr slice = Value::sequence(ValueKind::tuple, std::move(parts));
    slice->kind = ValueKind::slice;
    push(std::move(slice));
    return true;
  }
  for (const auto& p : parts)
    if (!p->is_constant()) return unsupported("slice bound of type " + p->type_name());
  ValuePtr v = wrap_constant_result(PyRef::steal(
      PySlice_New(parts[0]->obj.get(), parts[1]->obj.get(), parts.size() == 3 ? parts[2]->obj.get() : nullptr)));
  if (!v) return false;
  push(std::move(v));
  return true;
}

bool InstructionTranslator::op_build_string(const bc::Instruction& inst) {
  auto parts = pop_n(static_cast<size_t>(inst.arg));
  PyRef list = PyRef::steal(PyList_New(0));
  std::vector<ValuePtr> sizes;  // of the parts formatted from sizes
  for (const auto& p : parts) {
    if (p->kind == ValueKind::size_text) sizes.insert(sizes.end(), p->items.begin(), p->items.end());
    if (!p->is_constant() && p->kind != ValueKind::size_text)
      return unsupported("f-string part of type " + p->type_name());
    if (list && PyList_Append(list.get(), p->obj.get()) < 0) list = PyRef();  // its error: named by the folding's failure
  }
  PyRef empty = PyRef::steal(PyUnicode_FromString(""));
  ValuePtr v = wrap_constant_result(PyRef::steal(list && empty ? PyUnicode_Join(empty.get(), list.get()) : nullptr));
  if (!v) return false;
  if (!sizes.empty()) {
    v->kind = ValueKind::size_text;
    v->items = std::move(sizes);
  }
  push(std::move(v));
  return true;
}

// Containers that existed before the frame (they have a source) are
// mutated in the abstract state and replayed as a side effect.
#define TJ_REFUSE_SOURCED_MUTATION(container) record_container_mutation(container)

bool InstructionTranslator::op_list_append(const bc::Instruction& inst) {
  ValuePtr& list = peek(static_cast<size_t>(inst.arg));
  if (list->kind != ValueKind::list) return unsupported("LIST_APPEND on a " + list->type_name());
  TJ_REFUSE_SOURCED_MUTATION(list);
  journal(list);
  ValuePtr item = pop();
  list->items.push_back(std::move(item));
  return true;
}

bool InstructionTranslator::op_list_extend(const bc::Instruction& inst) {
  if (peek(static_cast<size_t>(inst.arg))->kind != ValueKind::list) return unsupported("LIST_EXTEND on a non-list");
  TJ_REFUSE_SOURCED_MUTATION(peek(static_cast<size_t>(inst.arg)));
  journal(peek(static_cast<size_t>(inst.arg)));
  ValuePtr src = pop();
  ValuePtr& list = peek(static_cast<size_t>(inst.arg) - 1);
  auto items = iterate_items(*this, src);
  if (!items) return false;
  for (auto& item : *items) list->items.push_back(item);
  return true;
}

bool InstructionTranslator::op_list_to_tuple(const bc::Instruction&) {
  ValuePtr list = pop();
  push(Value::sequence(ValueKind::tuple, list->items));
  return true;
}

bool InstructionTranslator::op_dict_update(const bc::Instruction& inst) {
  if (peek(static_cast<size_t>(inst.arg))->kind != ValueKind::dict) return unsupported("dict update of a non-dict");
  TJ_REFUSE_SOURCED_MUTATION(peek(static_cast<size_t>(inst.arg)));
  journal(peek(static_cast<size_t>(inst.arg)));
  ValuePtr src = pop();
  ValuePtr& dict = peek(static_cast<size_t>(inst.arg) - 1);
  if (src->kind != ValueKind::dict) return unsupported("dict update from a " + src->type_name());
  for (size_t i = 0; i < src->keys.size(); ++i) {
    bool replaced = false;
    for (size_t j = 0; j < dict->keys.size(); ++j) {
      if (PyObject_RichCompareBool(dict->keys[j]->obj.get(), src->keys[i]->obj.get(), Py_EQ) == 1) {
        if (inst.code() == bc::Opcode::DICT_MERGE) return unsupported("duplicate keyword argument");
        dict->items[j] = src->items[i];
        replaced = true;
      }
    }
    if (!replaced) {
      dict->keys.push_back(src->keys[i]);
      dict->items.push_back(src->items[i]);
    }
  }
  return true;
}

bool InstructionTranslator::op_map_add(const bc::Instruction& inst) {
  if (peek(static_cast<size_t>(inst.arg) + 1)->kind != ValueKind::dict) return unsupported("MAP_ADD on a non-dict");
  TJ_REFUSE_SOURCED_MUTATION(peek(static_cast<size_t>(inst.arg) + 1));
  journal(peek(static_cast<size_t>(inst.arg) + 1));
  ValuePtr value = pop();
  ValuePtr key = dict_key(*this, pop());
  if (!key) return false;
  ValuePtr& dict = peek(static_cast<size_t>(inst.arg) - 1);
  if (int j = find_dict_key(*this, *dict, key); j >= 0) {
    dict->items[static_cast<size_t>(j)] = value;
    return true;
  }
  dict->keys.push_back(key);
  dict->items.push_back(value);
  return true;
}

bool InstructionTranslator::op_unpack_sequence(const bc::Instruction& inst) {
  ValuePtr seq = pop();
  std::optional<std::vector<ValuePtr>> items;
  if (seq->is_tensor()) {
    ValuePtr unbound = call_value(Value::tensor_method(seq, "unbind"), {}, {});
    if (!unbound) return false;
    items = unbound->items;
  } else {
    items = iterate_items(*this, seq);
  }
  if (!items) return false;
  if (items->size() != static_cast<size_t>(inst.arg))
    return unsupported("cannot unpack " + std::to_string(items->size()) + " values into " + std::to_string(inst.arg));
  for (auto it = items->rbegin(); it != items->rend(); ++it) push(*it);
  return true;
}

bool InstructionTranslator::op_unpack_ex(const bc::Instruction& inst) {
  ValuePtr seq = pop();
  auto items = iterate_items(*this, seq);
  if (!items) return false;
  size_t before = static_cast<size_t>(inst.arg & 0xff), after = static_cast<size_t>(inst.arg >> 8);
  if (items->size() < before + after) return unsupported("not enough values to unpack");
  std::vector<ValuePtr> middle(items->begin() + static_cast<long>(before), items->end() - static_cast<long>(after));
  for (size_t i = 0; i < after; ++i) push((*items)[items->size() - 1 - i]);
  push(Value::sequence(ValueKind::list, std::move(middle)));
  for (size_t i = before; i-- > 0;) push((*items)[i]);
  return true;
}

bool InstructionTranslator::op_format_value(const bc::Instruction& inst) {
  ValuePtr spec = (inst.arg & 0x04) ? pop() : nullptr;
  ValuePtr raw = pop();
  // Sizes are formatted with this trace's numbers; the text keeps them, to guard when it is used.
  const bool sized = shows_sizes(raw);
  // A size known only when the graph runs has no text yet: the graph breaks here.
  std::function<bool(const ValuePtr&)> data_dependent = [&](const ValuePtr& v) {
    if (v->is_symint()) return unbacked(*this, v);
    return std::any_of(v->items.begin(), v->items.end(), data_dependent);
  };
  if (sized && data_dependent(raw))
    return unsupported("formatting a size that depends on tensor data (known only when the graph runs)");
  ValuePtr value = sized ? size_numbers(*this, raw, /*guard=*/false) : raw;
  if (value->kind == ValueKind::size_text) value = Value::constant(value->obj.get());
  if (value->is_sequence() && value->is_python_constant())  // x.shape: a torch.Size of this trace's sizes
    if (PyRef obj = value->as_python()) value = Value::constant(obj.get());
  if (!value->is_constant() || (spec && !spec->is_constant()))
    return unsupported("formatting a " + value->type_name() + " into a string");
  PyObject* obj = value->obj.get();
  PyRef converted;
  switch (inst.arg & 0x03) {
    case 1: converted = PyRef::steal(PyObject_Str(obj)); break;
    case 2: converted = PyRef::steal(PyObject_Repr(obj)); break;
    case 3: converted = PyRef::steal(PyObject_ASCII(obj)); break;
    default: converted = PyRef::borrow(obj);
  }
  if (!converted) return unsupported("formatting failed");
  ValuePtr v = wrap_constant_result(PyRef::steal(PyObject_Format(converted.get(), spec ? spec->obj.get() : nullptr)));
  if (!v) return false;
  if (sized) {
    v->kind = ValueKind::size_text;
    v->items = {raw};
  }
  push(std::move(v));
  return true;
}

// ----------------------------------------------------- iteration, jumps

bool InstructionTranslator::op_get_iter(const bc::Instruction&) {
  ValuePtr v = pop();
  if (v->kind == ValueKind::iterator) {
    push(std::move(v));
    return true;
  }
  if (v->is_tensor()) {
    ValuePtr unbound = call_value(Value::tensor_method(v, "unbind"), {}, {});
    if (!unbound) return false;
    ValuePtr it = Value::iterator(unbound->items, &PyTupleIter_Type);
    it->as_iterator().hidden = true;
    push(std::move(it));
    return true;
  }
  if (auto modules = module_container_items(*this, v)) {
    ValuePtr it = Value::iterator(std::move(*modules));
    it->as_iterator().hidden = true;
    push(std::move(it));
    return true;
  }
  auto items = iterate_items(*this, v);
  if (!items) return false;
  ValuePtr it = Value::iterator(std::move(*items), v->kind == ValueKind::list    ? &PyListIter_Type
                                : v->kind == ValueKind::tuple ? &PyTupleIter_Type
                                : &PySeqIter_Type);
  it->as_iterator().hidden = true;
  push(std::move(it));
  return true;
}

bool InstructionTranslator::op_for_iter(const bc::Instruction& inst) {
  ValuePtr& it = peek();
  if (it->kind != ValueKind::iterator) return unsupported("FOR_ITER over a " + it->type_name());
  if (it->position >= it->items.size()) {
    pop();
    jump_to(inst.target);
    return true;
  }
  journal(it);
  push(it->items[it->position++]);
  return true;
}

bool InstructionTranslator::op_jump(const bc::Instruction& inst) {
  jump_to(inst.target);
  return true;
}

bool InstructionTranslator::op_pop_jump_if(const bc::Instruction& inst) {
  ValuePtr cond = pop();
  const bc::JumpCondition condition = inst.info().condition;
  bool take;
  if (condition == bc::JumpCondition::if_none || condition == bc::JumpCondition::if_not_none) {
    bool is_none = cond->is_constant() && cond->obj.get() == Py_None;
    if (cond->kind == ValueKind::null) return unsupported("jump on a NULL");
    take = condition == bc::JumpCondition::if_not_none ? !is_none : is_none;
  } else {
    assert((condition == bc::JumpCondition::if_true || condition == bc::JumpCondition::if_false) &&
           "op_pop_jump_if handles the POP_JUMP_* opcodes");
    if (cond->kind == ValueKind::tensor) {
      bool checked = false;
      if (!runtime_check_branch(inst, cond, checked)) return false;
      if (checked) return true;
    }
    auto truth = truthiness(cond);
    if (!truth) return false;
    take = condition == bc::JumpCondition::if_true ? *truth : !*truth;
  }
  if (take) jump_to(inst.target);
  return true;
}

bool InstructionTranslator::op_jump_if_or_pop(const bc::Instruction& inst) {
  auto truth = truthiness(peek());
  if (!truth) return false;
  bool jump_when = inst.info().condition == bc::JumpCondition::if_true;
  if (*truth == jump_when) {
    jump_to(inst.target);
  } else {
    pop();
  }
  return true;
}

// ------------------------------------------------------------ truthiness

std::optional<bool> InstructionTranslator::truthiness(const ValuePtr& v) {
  if (v->is_symint()) {
    bool handled = false;
    ValuePtr nonzero = symint_compare(*this, Py_NE, v, Value::constant_steal(PyLong_FromLong(0)), handled);
    return nonzero->obj.get() == Py_True;
  }
  switch (v->kind) {
    case ValueKind::constant: {
      int r = PyObject_IsTrue(v->obj.get());
      if (r < 0) {
        unsupported("cannot decide the truth of a " + v->type_name());
        return std::nullopt;
      }
      return r == 1;
    }
    case ValueKind::tuple:
    case ValueKind::list:
    case ValueKind::dict: return !v->items.empty();
    case ValueKind::dict_view: return !v->as_dict_view().dict->items.empty();
    case ValueKind::callable:
    case ValueKind::partial:
    case ValueKind::module:
    case ValueKind::tensor_method: return true;
    case ValueKind::object: {
      PyTypeObject* t = Py_TYPE(v->obj.get());
      for (const char* dunder : {"__bool__", "__len__"}) {
        bool handled = false;
        ValuePtr r = call_dunder(*this, v, dunder, {}, handled);
        if (!handled) continue;
        if (!r) return std::nullopt;
        if (!r->is_constant() || !(PyBool_Check(r->obj.get()) || PyLong_Check(r->obj.get()))) {
          unsupported(std::string(dunder) + " of " + v->type_name() + " returned a " + r->type_name());
          return std::nullopt;
        }
        return PyObject_IsTrue(r->obj.get()) == 1;
      }
      bool custom = (t->tp_as_number && t->tp_as_number->nb_bool) || (t->tp_as_mapping && t->tp_as_mapping->mp_length) ||
                    (t->tp_as_sequence && t->tp_as_sequence->sq_length);
      if (!custom) return true;
      unsupported("truth of a " + v->type_name() + " object depends on its __bool__/__len__");
      return std::nullopt;
    }
    case ValueKind::tensor:
      unsupported("data-dependent branch: the truth value of a tensor is only known at run time");
      return std::nullopt;
    default:
      unsupported("cannot decide the truth of a " + v->type_name());
      return std::nullopt;
  }
}

}  // namespace tj::tracer
