// `warnings.warn` in traced code (library code warns: grid_sample's changed
// default, deprecations). The call is recorded as a side effect and replayed
// in program order when the graph has run (or before a graph break), with
// the location eager's `warn` would name: the file, line, module and globals
// of the frame `stacklevel` levels up, found in the inline stack. The runtime
// replays it through `warnings.warn_explicit` with that module's
// `__warningregistry__`, so filters, "once per location" and `-W error`
// behave as in eager. A location above the compiled frame (the frame's
// caller and further up) is only known at run time: the replay then calls
// `warnings.warn` itself with the stacklevel counted from the frame's caller.
//
// Also here: a `logging.Logger` method (`logger.debug(f"...")` in a forward)
// on a logger that is off for the call's level does nothing, as eager's
// `isEnabledFor` check returns early: the call is dropped, guarded on the
// logger staying off (its `disabled` flag, and the level's entry in the
// logger's `_cache`, which `setLevel` and `logging.disable` clear). A logger
// that is on breaks the graph at the call (the record names the caller's
// file and line, which a replay after the graph would not).
#include <algorithm>
#include <cstring>
#include <iterator>

#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "support/py_ref.h"
#include "tracer/py_str.h"
#include "tracer/translate_call.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// The constant behind an argument (a class read from builtins or a module
// is a callable value), or null when it is not one.
PyObject* constant_of(const ValuePtr& v) {
  return v && (v->is_constant() || v->kind == ValueKind::callable) ? v->obj.get() : nullptr;
}

}  // namespace

ValuePtr call_warn(TraceContext cx, const std::vector<ValuePtr>& args,
                   const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  // warn(message, category=None, stacklevel=1, source=None)
  ValuePtr message = args.size() > 0 ? args[0] : nullptr;
  ValuePtr category = args.size() > 1 ? args[1] : nullptr;
  ValuePtr stacklevel = args.size() > 2 ? args[2] : nullptr;
  ValuePtr source = args.size() > 3 ? args[3] : nullptr;
  if (args.size() > 4) return cx.unsupported("warnings.warn with more than four arguments"), nullptr;
  const std::pair<const char*, ValuePtr*> params[] = {
      {"message", &message}, {"category", &category}, {"stacklevel", &stacklevel}, {"source", &source}};
  for (const auto& [name, v] : kwargs) {
    auto param = std::find_if(std::begin(params), std::end(params), [&](const auto& p) { return name == p.first; });
    if (param == std::end(params)) return cx.unsupported("warnings.warn with the keyword '" + name + "'"), nullptr;
    *param->second = v;
  }
  PyObject* text = constant_of(message);
  if (!text) return cx.unsupported("warnings.warn of a message that is not a constant"), nullptr;
  bool warning_instance = PyObject_IsInstance(text, PyExc_Warning) == 1;
  if (!clear_probe_error()) return cx.unsupported("warnings.warn: checking the message's type raised"), nullptr;
  if (!PyUnicode_Check(text) && !warning_instance)
    return cx.unsupported("warnings.warn of a message that is neither a str nor a Warning"), nullptr;
  PyObject* kind = category ? constant_of(category) : Py_None;
  if (!kind || !(kind == Py_None || (PyType_Check(kind) && PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(kind),
                                                                               reinterpret_cast<PyTypeObject*>(PyExc_Warning)))))
    return cx.unsupported("warnings.warn with a category that is not a constant Warning class"), nullptr;
  if (warning_instance) kind = reinterpret_cast<PyObject*>(Py_TYPE(text));
  if (kind == Py_None) kind = PyExc_UserWarning;
  long level = 1;
  if (stacklevel) {
    PyObject* l = constant_of(stacklevel);
    if (!l || !PyLong_CheckExact(l)) return cx.unsupported("warnings.warn with a stacklevel that is not a constant int"), nullptr;
    level = PyLong_AsLong(l);
    if (level == -1 && PyErr_Occurred()) {
      clear_probe_error();
      return cx.unsupported("warnings.warn with a stacklevel out of range"), nullptr;
    }
  }
  if (source && constant_of(source) != Py_None) return cx.unsupported("warnings.warn with a source object"), nullptr;
  // The frame `level` levels up: this one at level 1 (as in CPython, a
  // level below 1 is the warning's own frame), then its inlining callers.
  graph::SourceLoc loc;
  PyObject* globals = nullptr;
  PyRef record;
  if (cx.inline_caller(level, &loc, &globals)) {
    PyObject* module = PyDict_GetItemString(globals, "__name__");  // borrowed; may be absent
    record = PyRef::steal(Py_BuildValue("(OOsiOO)", text, kind, loc.file.c_str(), loc.line, module ? module : Py_None,
                                        globals));
  } else {
    // Above the compiled frame: counted from its caller at run time.
    long above = level - (cx.inline_depth() + 1);
    record = PyRef::steal(Py_BuildValue("(OOOl)", text, kind, Py_None, above + 1));
  }
  if (!record) {
    clear_probe_error();
    return cx.unsupported("warnings.warn: recording the call failed"), nullptr;
  }
  cx.add_side_effect(SideEffect{SideEffect::Kind::warn, nullptr, "", Value::constant(record.get())});
  return Value::constant(Py_None);
}

ValuePtr call_disabled_logger(InstructionTranslator& t, const ValuePtr& fn, const std::vector<ValuePtr>& args,
                              bool& handled) {
  handled = false;
  PyObject* f = fn ? fn->obj.get() : nullptr;
  if (!f) return nullptr;
  // A bound method `logger.debug`, or the function with the logger first.
  PyObject* self = nullptr;
  PyObject* func = nullptr;
  SourcePtr logger;
  size_t first = 0;
  if (const ValuePtr& bound = fn->bound_self(); bound && bound->obj && bound->source) {
    self = bound->obj.get();
    func = f;
    logger = bound->source;
  } else if (PyMethod_Check(f) && fn->source && fn->source->kind == SourceKind::attr) {
    self = PyMethod_GET_SELF(f);
    func = PyMethod_GET_FUNCTION(f);
    logger = fn->source->base;
  } else if (PyFunction_Check(f) && !args.empty() && args[0]->obj && args[0]->source) {
    self = args[0]->obj.get();
    func = f;
    logger = args[0]->source;
    first = 1;
  }
  PyObject* logger_type = cached_module_attr("logging", "Logger");
  if (!self || !logger || !logger_type || !PyType_Check(logger_type) ||
      !PyObject_TypeCheck(self, reinterpret_cast<PyTypeObject*>(logger_type)))
    return clear_probe_error(), nullptr;
  // The level each method logs at; `log(level, ...)` and `isEnabledFor(level)` take it first.
  static const std::pair<const char*, long> methods[] = {{"debug", 10},    {"info", 20},      {"warning", 30},
                                                         {"warn", 30},     {"error", 40},     {"exception", 40},
                                                         {"critical", 50}, {"fatal", 50},     {"log", -1},
                                                         {"isEnabledFor", -1}};
  long level = 0;
  bool query = false;
  for (const auto& [name, lvl] : methods) {
    PyRef m = PyRef::steal(PyObject_GetAttrString(logger_type, name));
    if (m.get() != func) continue;
    query = std::strcmp(name, "isEnabledFor") == 0;
    if (lvl >= 0) {
      level = lvl;
    } else {
      PyObject* l = args.size() <= first || !args[first]->is_constant() ? nullptr : args[first]->obj.get();
      if (!l || !PyLong_CheckExact(l)) return nullptr;  // a level computed in the trace: the general path
      level = PyLong_AsLong(l);
      if (level == -1 && PyErr_Occurred()) return clear_probe_error(), nullptr;
    }
    break;
  }
  clear_probe_error();
  if (level <= 0) return nullptr;
  PyRef enabled = PyRef::steal(PyObject_CallMethod(self, "isEnabledFor", "l", level));  // fills its _cache, as eager
  if (!enabled) return clear_probe_error(), nullptr;
  if (enabled.get() != Py_False && !query) return nullptr;  // on: the call breaks, run by CPython
  PyRef disabled = PyRef::steal(PyObject_GetAttrString(self, "disabled"));
  if (!disabled || !PyBool_Check(disabled.get())) return clear_probe_error(), nullptr;
  PyRef key = PyRef::steal(PyLong_FromLong(level));
  if (!key) return clear_probe_error(), nullptr;
  if (disabled.get() == Py_False) {
    // isEnabledFor answers from `_cache[level]` once it holds the level.
    PyRef cache = PyRef::steal(PyObject_GetAttrString(self, "_cache"));
    PyObject* cached = cache && PyDict_CheckExact(cache.get()) ? PyDict_GetItemWithError(cache.get(), key.get()) : nullptr;
    if (!cached || cached != enabled.get()) return clear_probe_error(), nullptr;  // no cached answer: the general path
  }
  t.guards().add(Guard{GuardKind::type_match, logger, PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(self)))});
  t.guards().add(Guard{GuardKind::const_eq, Source::attr(logger, "disabled"), disabled});
  if (disabled.get() == Py_False)
    t.guards().add(Guard{GuardKind::const_eq, Source::item(Source::attr(logger, "_cache"), key.get()), enabled});
  handled = true;
  return Value::constant(query ? enabled.get() : Py_None);
}

}  // namespace tj::tracer
