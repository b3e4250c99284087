// Inlining: calls of Python functions, methods, nested defs, lambdas,
// comprehensions and generators are traced in place by a child
// translator that shares the graph, the guards and the inputs; nn.Module
// calls inline `forward` between the forward pre-hooks and hooks
// Module.__call__ would run, with guards on every hook table (so that
// registering or removing a hook retraces; backward hooks break the
// graph); cells and MAKE_FUNCTION model closures.
// A failure inside an inlined call ends it; the caller then breaks the
// graph at its own CALL (the call runs in CPython, and the hook traces its
// frame on its own). A few library functions are inlined as a polyfill
// instead (tracejit/_polyfills.py).
#include <algorithm>
#include <cstring>
#include <optional>

#include "support/tensor_bridge.h"
#include "support/py_lookup.h"
#include "tracer/objects.h"
#include "tracer/py_str.h"
#include "tracer/skip_policy.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

constexpr int kMaxInlineDepth = 24;

bool is_instance_of(PyObject* obj, const char* module, const char* name) {
  PyObject* type = cached_module_attr(module, name);
  if (!type) return false;
  int r = PyObject_IsInstance(obj, type);
  // A user __class__ or __instancecheck__ that raises: not an instance (the
  // call then goes the general way); an interruption stays set.
  clear_unless_interruption();
  return r == 1;
}

bool is_none(const ValuePtr& v) { return v->is_constant() && v->obj.get() == Py_None; }

// The polyfill (tracejit/_polyfills.py) inlined in place of `fn`, or null
// (borrowed). The table is read once; without it nothing is replaced.
PyObject* polyfill_for(PyObject* fn) {
  static PyObject* table = [] {
    PyObject* make = cached_module_attr("tracejit._polyfills", "replacements");
    PyRef t = PyRef::steal(make ? PyObject_CallNoArgs(make) : nullptr);
    if (t && !PyDict_Check(t.get())) t = PyRef();
    PyErr_Clear();  // best effort, once per process: without the table, no polyfills
    return t.release();  // kept for the life of the process
  }();
  PyObject* polyfill = table ? PyDict_GetItemWithError(table, fn) : nullptr;
  clear_expected_error({PyExc_TypeError});  // an unhashable callable has none; a __hash__ raising is named by the trace
  return polyfill;
}

// The source of a module's globals dict (`sys.modules['m'].__dict__`), or
// null when `globals` is no imported module's __dict__.
SourcePtr module_globals_source(PyObject* globals) {
  PyObject* name = PyDict_GetItemString(globals, "__name__");  // borrowed
  if (!name || !PyUnicode_Check(name)) return nullptr;
  PyRef module = PyRef::steal(PyImport_GetModule(name));
  if (!module) {
    PyErr_Clear();  // not imported (or sys.modules unreadable): no source
    return nullptr;
  }
  if (!PyModule_Check(module.get()) || PyModule_GetDict(module.get()) != globals) return nullptr;
  return Source::attr(Source::module(utf8(name)), "__dict__");
}
}  // namespace

// ------------------------------------------------------------- closures

bool InstructionTranslator::op_make_cell(const bc::Instruction& inst) {
  ValuePtr content = inst.arg < nargs_ ? load_local(inst.arg) : locals_[inst.arg];
  if (failed()) return false;
  if (content && content->kind == ValueKind::cell) return true;  // already a cell (inlined arguments)
  set_local(inst.arg, Value::cell(content));
  return true;
}

bool InstructionTranslator::op_load_closure(const bc::Instruction& inst) {
  ValuePtr v = locals_[inst.arg];
  if (!v || v->kind != ValueKind::cell) v = frame_free_cell(inst.arg, true);
  if (!v) return false;
  push(v);
  return true;
}

ValuePtr InstructionTranslator::frame_free_cell(int slot, bool read) {
  // One cell value per free variable of the compiled frame, made on first
  // use: reads, writes (replayed as the real cell's cell_contents) and the
  // closures made here (LOAD_CLOSURE) all share it.
  PyCodeObject* co = frame_.code;
  int first_free = co->co_nlocalsplus - co->co_nfreevars;
  if (inlined_ || slot < first_free || !frame_.closure || slot - first_free >= PyTuple_GET_SIZE(frame_.closure))
    return unsupported("free variable without a closure cell"), nullptr;
  int index = slot - first_free;
  ValuePtr cell = frame_cell_value(index, read);
  if (!cell) return nullptr;
  set_local(slot, cell, /*wrapped=*/arg_wrapped_[static_cast<size_t>(slot)]);
  return cell;
}

ValuePtr InstructionTranslator::frame_cell_value(int index, bool read) {
  PyObject* real = PyTuple_GET_ITEM(shared_->root_closure, index);
  if (auto it = shared_->frame_cells.find(real); it != shared_->frame_cells.end()) return it->second;
  PyCodeObject* co = shared_->root_code;
  std::string name = utf8(PyTuple_GET_ITEM(co->co_localsplusnames, co->co_nlocalsplus - co->co_nfreevars + index));
  PyObject* content = read ? PyCell_GET(real) : nullptr;
  ValuePtr wrapped = content ? wrap_input(content, Source::closure(index, name)) : nullptr;
  if (content && !wrapped) return nullptr;
  ValuePtr cell = Value::cell(wrapped);
  cell->source = Source::closure_cell(index, name);
  cell->obj = PyRef::borrow(real);
  shared_->frame_cells.emplace(real, cell);
  return cell;
}

bool InstructionTranslator::op_make_function(const bc::Instruction& inst) {
  ValuePtr code = pop();
  ValuePtr closure = (inst.arg & 0x08) ? pop() : nullptr;
  if (inst.arg & 0x04) pop();  // annotations
  ValuePtr kwdefaults = (inst.arg & 0x02) ? pop() : nullptr;
  ValuePtr defaults = (inst.arg & 0x01) ? pop() : nullptr;
  if (!code->is_constant() || !PyCode_Check(code->obj.get())) return unsupported("MAKE_FUNCTION without a code object");
  FunctionPayload payload;
  payload.globals = frame_.globals;
  if (defaults) {
    if (defaults->is_sequence()) {
      payload.defaults = defaults->items;
    } else if (defaults->is_constant() && PyTuple_Check(defaults->obj.get())) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(defaults->obj.get()); ++i)
        payload.defaults.push_back(Value::constant(PyTuple_GET_ITEM(defaults->obj.get(), i)));
    }
  }
  if (kwdefaults && kwdefaults->kind == ValueKind::dict)
    for (size_t i = 0; i < kwdefaults->keys.size(); ++i)
      payload.kwdefaults.emplace_back(utf8(kwdefaults->keys[i]->obj.get()), kwdefaults->items[i]);
  ValuePtr fn = Value::function(code->obj, utf8(reinterpret_cast<PyCodeObject*>(code->obj.get())->co_qualname),
                                std::move(payload));
  if (closure) fn->items = closure->items;
  push(fn);
  return true;
}

bool InstructionTranslator::op_return_generator(const bc::Instruction&) {
  if (!inlined_) return unsupported("RETURN_GENERATOR outside an inlined generator");
  push(Value::constant(Py_None));
  return true;
}

bool InstructionTranslator::op_yield_value(const bc::Instruction&) {
  if (!inlined_ || !(frame_.code->co_flags & CO_GENERATOR)) return unsupported("YIELD_VALUE outside an inlined generator");
  yielded_.push_back(pop());
  yield_marks_.push_back(generator_effect_mark());
  if (yielded_.size() > 100000) return unsupported("a generator yielded too many values to unroll");
  push(Value::constant(Py_None));  // the value sent back in
  return true;
}

// -------------------------------------------------------------- calls

ValuePtr InstructionTranslator::inline_function(PyObject* code_obj, PyObject* globals, SourcePtr function_source,
                                                const std::vector<ValuePtr>& closure,
                                                const std::vector<ValuePtr>& defaults,
                                                const std::vector<std::pair<std::string, ValuePtr>>& kwdefaults,
                                                std::vector<ValuePtr> args,
                                                std::vector<std::pair<std::string, ValuePtr>> kwargs,
                                                const std::string& name) {
  auto* co = reinterpret_cast<PyCodeObject*>(code_obj);
  if (depth_ + 1 > kMaxInlineDepth) return unsupported("call to " + name + ": inlining deeper than " + std::to_string(kMaxInlineDepth)), nullptr;
  if (co->co_flags & (CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
    return unsupported("call to the coroutine " + name), nullptr;
  std::string file = utf8(co->co_filename);

  // Bind the arguments to the parameters, as CPython does.
  const int npos = co->co_argcount, nkw = co->co_kwonlyargcount;
  std::vector<ValuePtr> locals(static_cast<size_t>(co->co_nlocalsplus));
  auto param = [&](int i) { return utf8(PyTuple_GET_ITEM(co->co_localsplusnames, i)); };
  std::vector<ValuePtr> extra;
  for (size_t i = 0; i < args.size(); ++i) {
    if (static_cast<int>(i) < npos)
      locals[i] = args[i];
    else
      extra.push_back(args[i]);
  }
  int slot = npos + nkw;
  if (co->co_flags & CO_VARARGS) {
    locals[static_cast<size_t>(slot++)] = Value::sequence(ValueKind::tuple, std::move(extra));
  } else if (!extra.empty()) {
    return unsupported(name + "() got too many positional arguments"), nullptr;
  }
  ValuePtr varkw = (co->co_flags & CO_VARKEYWORDS) ? Value::dict({}, {}) : nullptr;
  for (auto& [kname, v] : kwargs) {
    int found = -1;
    for (int i = co->co_posonlyargcount; i < npos + nkw; ++i)
      if (param(i) == kname) found = i;
    if (found >= 0) {
      if (locals[static_cast<size_t>(found)]) return unsupported(name + "() got multiple values for '" + kname + "'"), nullptr;
      locals[static_cast<size_t>(found)] = v;
    } else if (varkw) {
      varkw->keys.push_back(Value::constant_steal(PyUnicode_FromString(kname.c_str())));
      varkw->items.push_back(v);
    } else {
      return unsupported(name + "() got an unexpected keyword argument '" + kname + "'"), nullptr;
    }
  }
  if (varkw) locals[static_cast<size_t>(slot)] = varkw;
  for (int i = 0; i < npos; ++i) {
    if (locals[static_cast<size_t>(i)]) continue;
    int d = i - (npos - static_cast<int>(defaults.size()));
    if (d < 0) return unsupported(name + "() missing argument '" + param(i) + "'"), nullptr;
    locals[static_cast<size_t>(i)] = defaults[static_cast<size_t>(d)];
  }
  for (int i = npos; i < npos + nkw; ++i) {
    if (locals[static_cast<size_t>(i)]) continue;
    for (auto& [k, v] : kwdefaults)
      if (k == param(i)) locals[static_cast<size_t>(i)] = v;
    if (!locals[static_cast<size_t>(i)]) return unsupported(name + "() missing keyword argument '" + param(i) + "'"), nullptr;
  }
  // Free variables: the closure's cells, in order, after the cells.
  int first_free = co->co_nlocalsplus - co->co_nfreevars;
  if (static_cast<int>(closure.size()) != co->co_nfreevars) return unsupported("call to " + name + " with a mismatched closure"), nullptr;
  for (int i = 0; i < co->co_nfreevars; ++i) locals[static_cast<size_t>(first_free + i)] = closure[static_cast<size_t>(i)];

  InlineFrame f;
  f.code = co;
  f.globals = globals;
  f.depth = depth_ + 1;
  f.locals = std::move(locals);
  if (is_installed_file(file) || is_polyfill_file(file)) {
    f.unguarded_globals = true;
  } else if (globals != shared_->root_globals) {
    if (function_source) {
      f.globals_source = Source::attr(function_source, "__globals__");
    } else if (SourcePtr module = module_globals_source(globals)) {
      // A function reached without a source (a method found on a class, a
      // function a library handed back): its module's globals, through
      // sys.modules, when that module's __dict__ is these globals.
      f.globals_source = module;
    }
  } else {
    f.globals_source = nullptr;
  }
  InstructionTranslator child(*this, std::move(f));
  ValuePtr result = child.run_inline();
  if (!result) {
    const Unsupported& u = *child.failure();
    return unsupported(u.reason + " (in " + name + ", " + u.filename + ":" + std::to_string(u.lineno) + ")"), nullptr;
  }
  return result;
}

namespace {
// The `__call__` a Module subclass defines in place of torch's
// Module.__call__, bound to the module value; null when it has none.
ValuePtr own_module_call(const ValuePtr& module) {
  static PyObject* base_call = [] {
    PyObject* module_class = cached_module_attr("torch.nn", "Module");
    return module_class ? PyObject_GetAttrString(module_class, "__call__") : nullptr;  // kept for the process
  }();
  PyRef call = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(module->obj.get())), "__call__"));
  if (!call) PyErr_Clear();
  if (!call || !base_call || call.get() == base_call || !PyFunction_Check(call.get())) return nullptr;
  ValuePtr bound = Value::bound_method(call.get(), module, "");
  bound->source = module->source ? Source::attr(Source::attr(module->source, "__class__"), "__call__") : nullptr;
  return bound;
}
}  // namespace

ValuePtr InstructionTranslator::call_python(const ValuePtr& fn, std::vector<ValuePtr> args,
                                            std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  if (fn->kind == ValueKind::function) {
    const FunctionPayload& made = fn->as_function();
    return inline_function(fn->obj.get(), made.globals, nullptr, fn->items, made.defaults, made.kwdefaults,
                           std::move(args), std::move(kwargs), made.qualname);
  }
  PyObject* f = fn->obj.get();
  if (fn->bound_self()) args.insert(args.begin(), fn->bound_self());
  if (PyMethod_Check(f)) {
    // A bound method object read from somewhere: its function and self.
    PyObject* self = PyMethod_GET_SELF(f);
    PyObject* func = PyMethod_GET_FUNCTION(f);
    ValuePtr self_value = wrap_input(self, fn->source ? Source::attr(fn->source, "__self__") : nullptr);
    if (!self_value) return nullptr;
    ValuePtr inner = Value::bound_method(func, self_value, "");
    inner->source = fn->source ? Source::attr(fn->source, "__func__") : nullptr;
    return call_python(inner, std::move(args), std::move(kwargs));
  }
  if (is_instance_of(f, "functools", "partial")) return call_partial_object(fn, std::move(args), std::move(kwargs));
  if (is_instance_of(f, "torch.nn", "Module") && !PyType_Check(f)) {
    // A module class that defines its own __call__ (pix2pix/CycleGAN's
    // GANLoss, which has no forward): eager calls that, not forward.
    if (ValuePtr call = own_module_call(fn)) return call_python(call, std::move(args), std::move(kwargs));
    if (failed()) return nullptr;
    PyRef forward = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(f)), "forward"));
    if (!forward || !PyFunction_Check(forward.get()))
      return unsupported("a module whose forward is not a Python function"), nullptr;
    PyRef instance_forward = PyRef::steal(PyObject_GenericGetDict(f, nullptr));
    bool overridden = instance_forward && PyDict_Check(instance_forward.get()) &&
                      PyDict_GetItemString(instance_forward.get(), "forward");
    clear_expected_error({PyExc_AttributeError});  // no __dict__: nothing assigned on the instance
    if (overridden) return unsupported("a module with forward assigned on the instance"), nullptr;
    ValuePtr forward_value = Value::callable(forward.get());
    forward_value->source = fn->source ? Source::attr(Source::attr(fn->source, "__class__"), "forward") : nullptr;
    PyRef forward_name = PyRef::steal(PyUnicode_FromString("forward"));
    if (forward_name) note_module_name_absent(fn, ModuleTable::instance_dict, forward_name.get());  // MODULE_MATCH
    return call_module(fn, forward_value, std::move(args), std::move(kwargs));
  }
  if (PyObject* polyfill = PyFunction_Check(f) ? polyfill_for(f) : nullptr) {
    // A library function that branches on tensor data (tracejit/_polyfills.py):
    // the polyfill computes the same values without the branch.
    return call_python(Value::callable(polyfill), std::move(args), std::move(kwargs));
  }
  if (PyFunction_Check(f)) return call_python_function(fn, std::move(args), std::move(kwargs));
  if (fn->kind == ValueKind::object) {  // an instance of a user class: its __call__
    bool handled = false;
    ValuePtr r = call_dunder(*this, fn, "__call__", std::move(args), handled);
    if (handled) return r;
  }
  return unsupported("call to " + fn->type_name() + ", which the tracer does not model"), nullptr;
}

// A functools.partial object read from an input: its func, args and
// keywords read through its source, then called.
ValuePtr InstructionTranslator::call_partial_object(const ValuePtr& fn, std::vector<ValuePtr> args,
                                                    std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  PyObject* f = fn->obj.get();
  PyRef pfunc = PyRef::steal(PyObject_GetAttrString(f, "func"));
  PyRef pargs = PyRef::steal(PyObject_GetAttrString(f, "args"));
  PyRef pkw = PyRef::steal(PyObject_GetAttrString(f, "keywords"));
  ValuePtr result;
  if (pfunc && pargs && pkw && fn->source) {
    std::vector<ValuePtr> all;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pargs.get()); ++i) {
      PyRef key = PyRef::steal(PyLong_FromSsize_t(i));
      all.push_back(
          wrap_input(PyTuple_GET_ITEM(pargs.get(), i), Source::item(Source::attr(fn->source, "args"), key.get())));
    }
    for (auto& a : args) all.push_back(a);
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    std::vector<std::pair<std::string, ValuePtr>> kw;
    while (PyDict_Next(pkw.get(), &pos, &k, &v)) kw.emplace_back(utf8(k), wrap_input(v, Source::item(Source::attr(fn->source, "keywords"), k)));
    for (auto& p : kwargs) kw.push_back(p);
    ValuePtr inner = wrap_input(pfunc.get(), Source::attr(fn->source, "func"));
    bool ok = inner != nullptr;
    for (auto& a : all) ok &= a != nullptr;
    for (auto& p : kw) ok &= p.second != nullptr;
    if (ok) result = call_value(inner, std::move(all), std::move(kw));
  } else {
    unsupported("a functools.partial without a source");
  }
  return result;
}

namespace {

bool is_packed_sequence(PyObject* o) {
  PyObject* type = cached_module_attr("torch.nn.utils.rnn", "PackedSequence");
  if (!type || !o) return false;
  const int instance = PyObject_IsInstance(o, type);
  if (instance < 0) PyErr_Clear();
  return instance == 1;
}

bool is_packed_sequence_value(const ValuePtr& v) {
  if (!v || !v->obj) return false;
  PyObject* type = cached_module_attr("torch.nn.utils.rnn", "PackedSequence");
  // A namedtuple input is a tuple value that keeps its class in `obj`.
  return is_packed_sequence(v->obj.get()) || (v->kind == ValueKind::tuple && type && v->obj.get() == type);
}

}  // namespace

// Packing a padded batch, and torch's RNN code over a PackedSequence: the
// packed sizes are the lengths' values (`batch_sizes`), so none of it can be
// one graph for every call (TorchDynamo breaks there too). One clean break
// at the call, which CPython runs whole (the RNN's own frame too: run()),
// instead of a break at each of the data-dependent steps inside (6 per LSTM
// call) and their resume functions, recompiling for new lengths.
std::optional<std::string> packed_sequence_refusal(const std::string& file, const std::string& qualname,
                                                   bool packed_argument) {
  const bool rnn_file = file.ends_with("torch/nn/utils/rnn.py") || file.ends_with("torch/nn/modules/rnn.py");
  if (!rnn_file) return std::nullopt;
  if (qualname == "pack_padded_sequence" || qualname == "pack_sequence")
    return "a PackedSequence's batch sizes are the lengths' values (data-dependent sizes)";
  if (!packed_argument) return std::nullopt;
  return "a PackedSequence argument of " + qualname + ": its batch sizes are data (data-dependent sizes)";
}

std::optional<std::string> packed_sequence_refusal(const std::string& file, const std::string& qualname,
                                                   PyObject* const* args, int nargs) {
  bool packed = false;
  for (int i = 0; i < nargs && !packed; ++i) packed = is_packed_sequence(args[i]);
  return packed_sequence_refusal(file, qualname, packed);
}

// A Python function: inlined with its closure cells, defaults and
// kwdefaults read through its source (unless the skip policy leaves it).
ValuePtr InstructionTranslator::call_python_function(const ValuePtr& fn, std::vector<ValuePtr> args,
                                                     std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  PyObject* f = fn->obj.get();
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(f));
  std::string file = utf8(code->co_filename);
  const std::string qualname = utf8(reinterpret_cast<PyFunctionObject*>(f)->func_qualname);
  if (auto skip = skip_inline_reason(file, qualname))
    return unsupported("call to " + qualname + " in " + *skip +
                       " (not inlined by the skip policy)"), nullptr;
  bool packed = std::any_of(args.begin(), args.end(), is_packed_sequence_value);
  for (const auto& kv : kwargs) packed |= is_packed_sequence_value(kv.second);
  if (auto refusal = packed_sequence_refusal(file, qualname, packed)) return unsupported(*refusal), nullptr;
  std::vector<ValuePtr> closure;
  PyObject* cl = PyFunction_GET_CLOSURE(f);
  for (Py_ssize_t i = 0; cl && i < PyTuple_GET_SIZE(cl); ++i) {
    // A cell of the compiled frame's own closure (a closure made before a
    // break, handed to the resume function): the frame's cell value.
    PyObject* real = PyTuple_GET_ITEM(cl, i);
    Py_ssize_t root_index = -1;
    for (Py_ssize_t j = 0; shared_->root_closure && j < PyTuple_GET_SIZE(shared_->root_closure); ++j)
      if (PyTuple_GET_ITEM(shared_->root_closure, j) == real) root_index = j;
    if (root_index >= 0) {
      ValuePtr cell = frame_cell_value(static_cast<int>(root_index), true);
      if (!cell) return nullptr;
      closure.push_back(cell);
      continue;
    }
    PyObject* content = PyCell_GET(PyTuple_GET_ITEM(cl, i));
    PyRef index = PyRef::steal(PyLong_FromSsize_t(i));
    SourcePtr src =
        fn->source ? Source::attr(Source::item(Source::attr(fn->source, "__closure__"), index.get()), "cell_contents")
                   : nullptr;
    ValuePtr v = content ? wrap_input(content, src) : nullptr;
    if (content && !v) return nullptr;
    ValuePtr cell = Value::cell(v);
    cell->source = src ? src : Source::global("<closure>");  // read-only: never written through
    closure.push_back(cell);
  }
  std::vector<ValuePtr> defaults;
  PyObject* d = PyFunction_GET_DEFAULTS(f);
  for (Py_ssize_t i = 0; d && i < PyTuple_GET_SIZE(d); ++i) {
    PyRef key = PyRef::steal(PyLong_FromSsize_t(i));
    ValuePtr v = wrap_input(PyTuple_GET_ITEM(d, i),
                            fn->source ? Source::item(Source::attr(fn->source, "__defaults__"), key.get()) : nullptr);
    if (!v) return nullptr;
    defaults.push_back(v);
  }
  std::vector<std::pair<std::string, ValuePtr>> kwdefaults;
  PyObject* kd = PyFunction_GET_KW_DEFAULTS(f);
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  while (kd && PyDict_Next(kd, &pos, &k, &v)) {
    ValuePtr w = wrap_input(v, fn->source ? Source::item(Source::attr(fn->source, "__kwdefaults__"), k) : nullptr);
    if (!w) return nullptr;
    kwdefaults.emplace_back(utf8(k), w);
  }
  return inline_function(reinterpret_cast<PyObject*>(code), PyFunction_GET_GLOBALS(f), fn->source, closure, defaults,
                         kwdefaults, std::move(args), std::move(kwargs),
                         utf8(reinterpret_cast<PyFunctionObject*>(f)->func_qualname));
}

// ------------------------------------------------------- module hooks

bool InstructionTranslator::read_module_hooks(PyObject* owner, const SourcePtr& owner_source, const char* name,
                                              std::vector<ValuePtr>* out) {
  PyRef table = PyRef::steal(PyObject_GetAttrString(owner, name));
  // No such table (a module whose __init__ did not run): Module.__call__
  // meets the same AttributeError in CPython.
  if (!table) return unsupported(std::string("a module call without its ") + name + " table");
  Py_ssize_t n = PyObject_Length(table.get());
  if (n < 0) return unsupported(std::string("the hook table ") + name + " has no length");
  if (!owner_source) {
    // A module made during the trace: nothing to guard, and nothing
    // registered on it that the trace did not see.
    if (n > 0) return unsupported(std::string("call of a module with hooks registered in ") + name + " (no source to guard them by)");
    return true;
  }
  SourcePtr source = Source::attr(owner_source, name);
  if (n == 0) {
    // An empty table (torch's global ones, mostly): registering a hook retraces.
    Guard g{GuardKind::length, source, PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(table.get())))};
    g.length = 0;
    guards().add(std::move(g));
    return true;
  }
  // An OrderedDict of handle id -> hook: its keys are guarded (removing or
  // adding a hook retraces) and each hook by what it is.
  ValuePtr hooks = wrap_input(table.get(), source);
  if (!hooks) return false;
  if (hooks->kind != ValueKind::dict) return unsupported(std::string("the hook table ") + name + " is not a dict");
  out->insert(out->end(), hooks->items.begin(), hooks->items.end());
  return true;
}

ValuePtr InstructionTranslator::call_module(const ValuePtr& mod, const ValuePtr& forward, std::vector<ValuePtr> args,
                                            std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  // What torch's Module.__call__ (_call_impl) runs around forward: torch's
  // global hooks first, then the module's; each table guarded.
  PyObject* torch_module = cached_module_attr("torch.nn.modules", "module");
  if (!torch_module) return unsupported("torch.nn.modules.module cannot be imported"), nullptr;
  SourcePtr global = Source::module("torch.nn.modules.module");
  PyObject* m = mod->obj.get();
  // The common case: no hook on the module, one guard for its three tables.
  // Folded into the module's identity guard when there is one (no second
  // read of its source per call).
  const bool no_hooks = module_hooks_empty(m);
  // A module made in the frame (construct_stateless_module) has no source
  // and no hook of its own: nothing to guard.
  if (!mod->source && !no_hooks) return unsupported("a module without a source that has hooks"), nullptr;
  Guard* id = no_hooks && mod->source ? guards().find(GuardKind::module_match, *mod->source) : nullptr;
  if (!id && no_hooks && mod->source) id = guards().find(GuardKind::id_match, *mod->source);
  if (id)
    id->no_module_hooks = true;
  else if (no_hooks && mod->source)
    guards().add(Guard{GuardKind::no_module_hooks, mod->source});
  std::vector<ValuePtr> backward, pre, post;
  if (!read_module_hooks(torch_module, global, "_global_backward_hooks", &backward) ||
      (!no_hooks && !read_module_hooks(m, mod->source, "_backward_hooks", &backward)))
    return nullptr;
  if (!backward.empty()) return unsupported("call of a module with backward hooks registered"), nullptr;
  if (!read_module_hooks(torch_module, global, "_global_forward_pre_hooks", &pre) ||
      (!no_hooks && !read_module_hooks(m, mod->source, "_forward_pre_hooks", &pre)) ||
      !read_module_hooks(torch_module, global, "_global_forward_hooks", &post) ||
      (!no_hooks && !read_module_hooks(m, mod->source, "_forward_hooks", &post)))
    return nullptr;
  // hook(module, input) -> None or a new input (a tuple, or one value).
  for (const ValuePtr& hook : pre) {
    ValuePtr r = call_value(hook, {mod, Value::sequence(ValueKind::tuple, args)}, {});
    if (!r) return nullptr;
    if (is_none(r)) continue;
    if (r->kind == ValueKind::tuple) {
      args = r->items;
    } else if (r->is_constant() && PyTuple_Check(r->obj.get())) {
      args.clear();
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r->obj.get()); ++i)
        args.push_back(Value::constant(PyTuple_GET_ITEM(r->obj.get(), i)));
    } else {
      args = {r};
    }
  }
  ValuePtr input = Value::sequence(ValueKind::tuple, args);
  args.insert(args.begin(), mod);
  ValuePtr result = call_python(forward, std::move(args), std::move(kwargs));
  // hook(module, input, output) -> None or a new output.
  for (const ValuePtr& hook : post) {
    if (!result) return nullptr;
    ValuePtr r = call_value(hook, {mod, input, result}, {});
    if (r && is_none(r)) continue;
    result = r;
  }
  return result;
}

std::optional<std::vector<ValuePtr>> module_container_items(TraceContext cx, const ValuePtr& obj) {
  if (obj->kind != ValueKind::object || !obj->source) return std::nullopt;
  PyObject* o = obj->obj.get();
  bool indexed = is_instance_of(o, "torch.nn", "ModuleList") || is_instance_of(o, "torch.nn", "Sequential");
  bool parameters = is_instance_of(o, "torch.nn", "ParameterList");
  bool keyed = is_instance_of(o, "torch.nn", "ModuleDict") || is_instance_of(o, "torch.nn", "ParameterDict");
  if (!indexed && !keyed && !parameters) return std::nullopt;
  Py_ssize_t n = PyObject_Length(o);
  if (n < 0) {
    clear_expected_error({PyExc_TypeError});  // no __len__; a __len__ raising is named by the trace
    return std::nullopt;
  }
  Guard g{GuardKind::length, obj->source, PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(o)))};
  g.length = n;
  cx.add_guard(std::move(g));
  std::vector<ValuePtr> items;
  if (parameters) {
    // A ParameterList keeps item i as its parameter named "i" (its own
    // __getitem__ reads getattr(self, str(i))); an item that is not a
    // Parameter (a plain tensor set into the list) is left to the trace.
    PyRef table = PyRef::steal(PyObject_GetAttrString(o, "_parameters"));
    if (!table || !PyDict_Check(table.get())) {
      clear_expected_error({PyExc_AttributeError});
      return std::nullopt;
    }
    SourcePtr table_source = Source::attr(obj->source, "_parameters");
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyRef key = PyRef::steal(PyUnicode_FromFormat("%zd", i));
      PyObject* item = key ? PyDict_GetItemWithError(table.get(), key.get()) : nullptr;  // borrowed
      if (!item || item == Py_None) {
        clear_expected_error({});
        return std::nullopt;
      }
      ValuePtr v = cx.wrap_input(item, Source::item(table_source, key.get()));
      if (!v) return std::nullopt;
      items.push_back(v);
    }
    return items;
  }
  if (indexed) {
    // Through _modules (an ordered dict of name -> module), in order.
    PyRef modules = PyRef::steal(PyObject_GetAttrString(o, "_modules"));
    if (!modules || !PyDict_Check(modules.get())) {
      clear_expected_error({PyExc_AttributeError});  // not set up by Module.__init__; the rest is named by the trace
      return std::nullopt;
    }
    SourcePtr table = Source::attr(obj->source, "_modules");
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(modules.get(), &pos, &key, &item)) {
      ValuePtr v = cx.wrap_input(item, Source::item(table, key));
      if (!v) return std::nullopt;
      items.push_back(v);
    }
    return items;
  }
  PyRef keys = PyRef::steal(PySequence_List(o));
  for (Py_ssize_t i = 0; keys && i < PyList_GET_SIZE(keys.get()); ++i)
    items.push_back(Value::constant(PyList_GET_ITEM(keys.get(), i)));
  PyRef owned_keys = PyRef::steal(keys ? PyList_AsTuple(keys.get()) : nullptr);
  if (!keys && !clear_expected_error({PyExc_TypeError})) return std::nullopt;  // named by the trace
  // The keys are baked in: a ModuleDict's are its _modules' (guarded), a
  // ParameterDict's pin the instance (its key order lives in _keys).
  if (owned_keys && is_instance_of(o, "torch.nn", "ModuleDict"))
    cx.add_guard(Guard{GuardKind::dict_keys, Source::attr(obj->source, "_modules"), owned_keys});
  else
    cx.add_guard(Guard{GuardKind::id_match, obj->source, PyRef::borrow(o)});
  return items;
}

namespace {
// How the user spells a source: L['opt'] -> opt, L['self'].layers[0] -> self.layers[0].
std::string user_spelling(const Source& s) {
  switch (s.kind) {
    case SourceKind::local:
    case SourceKind::global:
    case SourceKind::closure:
    case SourceKind::closure_cell: return s.name;
    case SourceKind::module: return "sys.modules['" + s.name + "']";
    case SourceKind::call: return (s.base ? user_spelling(*s.base) : std::string("?")) + "." + s.name + "()";
    case SourceKind::attr: return s.base ? user_spelling(*s.base) + "." + s.name : s.name;
    case SourceKind::item: {
      std::string key = s.index >= 0 ? std::to_string(s.index) : "?";
      if (s.key && PyUnicode_Check(s.key.get())) key = "'" + utf8(s.key.get()) + "'";
      return (s.base ? user_spelling(*s.base) : std::string("?")) + "[" + key + "]";
    }
  }
  return "?";
}
}  // namespace

void InstructionTranslator::name_user_call(const ValuePtr& called) {
  ValuePtr fn = called;
  while (fn && fn->kind == ValueKind::partial) fn = fn->as_partial().fn;  // named as its callable's call
  if (!failure_ || !fn || !fn->obj) return;
  PyObject* f = fn->obj.get();
  if (PyMethod_Check(f)) f = PyMethod_GET_FUNCTION(f);
  PyObject* code = PyFunction_Check(f) ? PyFunction_GET_CODE(f) : nullptr;
  if (!code || !is_installed_file(utf8(reinterpret_cast<PyCodeObject*>(code)->co_filename))) return;
  std::string spelling;
  if (const ValuePtr& self = fn->bound_self(); self && self->source && !fn->as_method().name.empty())
    spelling = user_spelling(*self->source) + "." + fn->as_method().name;
  else if (fn->source && fn->source->kind != SourceKind::attr)
    spelling = user_spelling(*fn->source);
  // A resume function's stack slots have no name the user wrote.
  if (spelling.empty() || spelling.starts_with("___stack"))
    spelling = utf8(reinterpret_cast<PyFunctionObject*>(f)->func_qualname);
  failure_->reason = spelling + "(): " + failure_->reason;
}

}  // namespace tj::tracer
