// The builtins that read the frame being traced itself, as free functions
// over a TraceContext (builtins.h): `super()` (its zero-argument form reads
// the method's first argument and its `__class__` cell) and `locals()` /
// `vars()` (every bound local, cell and free variable by name).
#include "tracer/builtins.h"
#include "tracer/py_str.h"
#include "tracer/resume.h"
#include "tracer/trace_api.h"

namespace tj::tracer {

ValuePtr make_super(TraceContext cx, const std::vector<ValuePtr>& args) {
  ValuePtr cls;
  ValuePtr self;
  if (args.size() == 2) {
    cls = args[0];
    self = args[1];
  } else if (args.empty()) {
    // The zero-argument form: the method's first argument and its __class__ cell.
    PyCodeObject* co = cx.frame_code();
    if (co->co_argcount < 1) return cx.unsupported("super() in a function without arguments"), nullptr;
    ValuePtr first = cx.frame_slot(0);
    self = first && first->kind == ValueKind::cell ? first->items[0] : cx.load_local(0);
    for (int slot = 0; slot < co->co_nlocalsplus; ++slot) {
      if (utf8(PyTuple_GET_ITEM(co->co_localsplusnames, slot)) != "__class__") continue;
      ValuePtr v = cx.frame_slot(slot);
      if (v && v->kind == ValueKind::cell) {
        cls = v->items[0];
      } else if (!v && cx.frame_closure()) {
        int first_free = co->co_nlocalsplus - co->co_nfreevars;
        PyObject* content = PyCell_GET(PyTuple_GET_ITEM(cx.frame_closure(), slot - first_free));
        if (content) cls = Value::callable(content);
      } else {
        cls = v;
      }
    }
  } else {
    return cx.unsupported("super() with one argument"), nullptr;
  }
  if (!cls || !self || !cls->obj || !PyType_Check(cls->obj.get()) || !self->obj || self->kind != ValueKind::object)
    return cx.unsupported("super() outside a method of an object"), nullptr;
  PyRef real = PyRef::steal(PyObject_CallFunctionObjArgs(reinterpret_cast<PyObject*>(&PySuper_Type), cls->obj.get(),
                                                         self->obj.get(), nullptr));
  if (!real) return cx.unsupported("super() failed at trace time"), nullptr;
  ValuePtr v = Value::object(real.get());
  v->payload = SuperPayload{self};
  return v;
}

ValuePtr locals_dict(TraceContext cx) {
  // What locals() shows: every bound local, cell and free variable by
  // name, in slot order, as it is now (cells by their content). A resume
  // function's own stack parameters (and kSuperSelf) are not the user's.
  PyCodeObject* co = cx.frame_code();
  bool resume = is_resume_code(co);
  int first_free = co->co_nlocalsplus - co->co_nfreevars;
  ValuePtr d = Value::dict({}, {});
  for (int slot = 0; slot < co->co_nlocalsplus; ++slot) {
    PyObject* name = PyTuple_GET_ITEM(co->co_localsplusnames, slot);
    if (resume && (utf8(name).starts_with("___stack") || utf8(name) == kSuperSelf)) continue;
    ValuePtr v = cx.load_local(slot);
    if (cx.failed()) return nullptr;
    if (!v && slot >= first_free) v = cx.compiled_frame_cell(slot);
    if (cx.failed()) return nullptr;
    if (v && v->kind == ValueKind::cell) v = v->items[0];
    if (!v) continue;
    d->keys.push_back(Value::constant(name));
    d->items.push_back(v);
  }
  return d;
}

}  // namespace tj::tracer
