// Rebuilding a compiled frame's Python values after its graph has run
// (the output template over the graph's outputs and the call's inputs) and
// replaying its side effects; see output_rebuild.h.
#include "runtime/output_rebuild.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <unordered_map>
#include <mutex>
#include <stdexcept>
#include <unordered_set>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include "graph/effects.h"
#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/printer.h"
#include "graph/sym_ints.h"
#include "runtime/cpp_errors.h"
#include "runtime/eval_frame.h"
#include "runtime/input_snapshot.h"
#include "runtime/runtime_state.h"
#include "runtime/tracejit_module.h"
#include "support/log.h"
#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

namespace {
// `generator_of(items)`: a generator yielding `items` (a plain function
// compiled once; its frames, a generator's, never reach the frame hook).
// Borrowed, or null with a Python error set.
PyObject* generator_of() {
  static PyObject* fn = nullptr;  // kept for the process
  if (fn) return fn;
  PyRef globals = PyRef::steal(PyDict_New());
  if (!globals || PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins()) < 0) return nullptr;
  PyRef ran = PyRef::steal(PyRun_String("def generator_of(items):\n    yield from items\n", Py_file_input,
                                        globals.get(), globals.get()));
  if (!ran) return nullptr;
  fn = Py_XNewRef(PyDict_GetItemString(globals.get(), "generator_of"));
  if (!fn) PyErr_SetString(PyExc_RuntimeError, "tracejit: generator_of was not defined");
  return fn;
}
}  // namespace

namespace {
using Kind = tracer::OutputTemplate::Kind;

// Remembers `obj` as template `t`'s object in `memo` (when `t` has a slot).
void remember(const tracer::OutputTemplate& t, std::vector<PyObject*>& memo, const PyRef& obj) {
  if (t.memo >= 0) {
    if (memo.size() <= static_cast<size_t>(t.memo)) memo.resize(static_cast<size_t>(t.memo) + 1, nullptr);
    memo[static_cast<size_t>(t.memo)] = obj.get();
  }
}

// A closure cell: the frame's own (an input) or a new one.
PyRef rebuild_cell(const tracer::OutputTemplate& t, const std::vector<PyRef>& outputs, PyObject* const* inputs,
                   std::vector<PyObject*>& memo) {
  // The frame's own cell (an input) or a new one; remembered before
  // its content is built, which may be a closure over this very cell.
  PyRef cell = t.index >= 0 ? PyRef::borrow(inputs[t.index]) : PyRef::steal(PyCell_New(nullptr));
  if (!cell) return {};
  if (!PyCell_Check(cell.get())) {
    PyErr_SetString(PyExc_SystemError, "tracejit: a closure cell input is not a cell");
    return {};
  }
  remember(t, memo, cell);
  if (!t.items.empty()) {
    PyRef content = rebuild(t.items[0], outputs, inputs, memo);
    if (!content || PyCell_Set(cell.get(), content.get()) < 0) return {};
  }
  return cell;
}

// A function made in the frame: its code and globals, defaults, closure, kwdefaults.
PyRef rebuild_function(const tracer::OutputTemplate& t, const std::vector<PyRef>& outputs, PyObject* const* inputs,
                       std::vector<PyObject*>& memo) {
  PyRef fn = PyRef::steal(PyFunction_New(t.constant.get(), t.keys[0].get()));
  if (!fn || t.items.empty()) return fn;
  const size_t ndefaults = t.items.size() - static_cast<size_t>(t.closure_cells) - (t.has_kwdefaults ? 1 : 0);
  auto tuple_of = [&](size_t begin, size_t end) -> PyRef {
    PyRef tuple = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(end - begin)));
    for (size_t i = begin; tuple && i < end; ++i) {
      PyRef d = rebuild(t.items[i], outputs, inputs, memo);
      if (!d) return {};
      PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i - begin), d.release());  // steals
    }
    return tuple;
  };
  if (ndefaults > 0) {
    PyRef defaults = tuple_of(0, ndefaults);
    if (!defaults || PyFunction_SetDefaults(fn.get(), defaults.get()) < 0) return {};
  }
  if (t.closure_cells > 0) {
    PyRef closure = tuple_of(ndefaults, ndefaults + static_cast<size_t>(t.closure_cells));
    if (!closure || PyFunction_SetClosure(fn.get(), closure.get()) < 0) return {};
  }
  if (t.has_kwdefaults) {
    PyRef kwdefaults = rebuild(t.items.back(), outputs, inputs, memo);
    if (!kwdefaults || PyFunction_SetKwDefaults(fn.get(), kwdefaults.get()) < 0) return {};
  }
  return fn;
}

// An iterator over the items: of a list, a new tuple, or a generator.
PyRef rebuild_iterator(const tracer::OutputTemplate& t, const std::vector<PyRef>& outputs, PyObject* const* inputs,
                       std::vector<PyObject*>& memo) {
  PyRef list = PyRef::steal(PyList_New(0));
  if (!list) return {};
  for (const auto& item : t.items) {
    PyRef v = rebuild(item, outputs, inputs, memo);
    if (!v || PyList_Append(list.get(), v.get()) < 0) return {};
  }
  // A tuple_iterator is the iterator of a new tuple (`constant`: the
  // tuple type); a generator a new generator over the items.
  if (t.constant.get() == reinterpret_cast<PyObject*>(&PyTuple_Type)) list = PyRef::steal(PyList_AsTuple(list.get()));
  if (t.constant.get() == reinterpret_cast<PyObject*>(&PyGen_Type)) {
    PyObject* make = generator_of();
    PyRef gen = make && list ? PyRef::steal(PyObject_CallOneArg(make, list.get())) : PyRef();
    if (gen) remember(t, memo, gen);
    return gen;
  }
  PyRef it = list ? PyRef::steal(PyObject_GetIter(list.get())) : PyRef();
  if (it) remember(t, memo, it);
  return it;
}

// A tuple (maybe a torch.return_types.* one) or a list.
PyRef rebuild_sequence(const tracer::OutputTemplate& t, const std::vector<PyRef>& outputs, PyObject* const* inputs,
                       std::vector<PyObject*>& memo) {
  Py_ssize_t n = static_cast<Py_ssize_t>(t.items.size());
  PyRef out = PyRef::steal(t.kind == Kind::tuple ? PyTuple_New(n) : PyList_New(n));
  if (!out) return {};
  if (t.kind == Kind::list) remember(t, memo, out);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyRef item = rebuild(t.items[static_cast<size_t>(i)], outputs, inputs, memo);
    if (!item) return {};
    if (t.kind == Kind::tuple)
      PyTuple_SET_ITEM(out.get(), i, item.release());  // steals
    else
      PyList_SET_ITEM(out.get(), i, item.release());  // steals
  }
  if (t.kind == Kind::tuple && t.constant) {  // torch.return_types.*
    PyRef typed = PyRef::steal(PyObject_CallOneArg(t.constant.get(), out.get()));
    if (typed) remember(t, memo, typed);  // an object made in the frame, reached twice
    return typed;
  }
  return out;
}

// A dict of the keys and rebuilt items.
PyRef rebuild_dict(const tracer::OutputTemplate& t, const std::vector<PyRef>& outputs, PyObject* const* inputs,
                   std::vector<PyObject*>& memo) {
  PyRef out = PyRef::steal(PyDict_New());
  if (!out) return {};
  remember(t, memo, out);
  for (size_t i = 0; i < t.items.size(); ++i) {
    PyRef item = rebuild(t.items[i], outputs, inputs, memo);
    if (!item || PyDict_SetItem(out.get(), t.keys[i].get(), item.get()) < 0) return {};
  }
  return out;
}

}  // namespace

// The value described by `t` (a new reference), or null with a Python
// error set. `memo` holds the lists and dicts built so far (borrowed: the
// value under construction owns them), so one that appears twice is one
// object. `inputs` are the call's arguments (borrowed).
PyRef rebuild(const tracer::OutputTemplate& t, const std::vector<PyRef>& outputs, PyObject* const* inputs,
              std::vector<PyObject*>& memo) {
  switch (t.kind) {
    case Kind::graph_output: return outputs[static_cast<size_t>(t.index)];
    case Kind::input: return PyRef::borrow(inputs[t.index]);
    case Kind::constant: return t.constant;
    case Kind::memo_ref: return PyRef::borrow(memo.at(static_cast<size_t>(t.index)));
    case Kind::attr: {
      PyRef obj = rebuild(t.items[0], outputs, inputs, memo);
      if (!obj) return {};
      return PyRef::steal(PyObject_GetAttr(obj.get(), t.constant.get()));
    }
    case Kind::dict_view: {
      PyRef dict = rebuild(t.items[0], outputs, inputs, memo);
      if (!dict) return {};
      return PyRef::steal(PyObject_CallMethodNoArgs(dict.get(), t.constant.get()));
    }
    case Kind::method: {
      PyRef self_obj = rebuild(t.items[0], outputs, inputs, memo);
      if (!self_obj) return {};
      return PyRef::steal(PyMethod_New(t.constant.get(), self_obj.get()));
    }
    case Kind::cell: return rebuild_cell(t, outputs, inputs, memo);
    case Kind::function: return rebuild_function(t, outputs, inputs, memo);
    case Kind::iterator: return rebuild_iterator(t, outputs, inputs, memo);
    case Kind::tuple:
    case Kind::list: return rebuild_sequence(t, outputs, inputs, memo);
    case Kind::dict: return rebuild_dict(t, outputs, inputs, memo);
  }
  return {};
}

// A traced `warnings.warn` (tracer::SideEffect::Kind::warn): the record
// (message, category, filename, line, module, globals) goes to
// warnings.warn_explicit with that module's registry, as warn() does; a
// record (message, category, None, stacklevel) names a frame above this
// one, reached by warnings.warn itself. 0, or -1 with a Python error set
// (a filter that makes the warning an error raises it, as in eager).
static int replay_warning(PyObject* record) {
  PyObject* warn_explicit = cached_module_attr("warnings", "warn_explicit");
  PyObject* warn = cached_module_attr("warnings", "warn");
  if (!warn_explicit || !warn) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tracejit: the warnings module is missing");
    return -1;
  }
  PyObject* message = PyTuple_GET_ITEM(record, 0);
  PyObject* category = PyTuple_GET_ITEM(record, 1);
  if (PyTuple_GET_ITEM(record, 2) == Py_None)
    return PyRef::steal(PyObject_CallFunction(warn, "OOO", message, category, PyTuple_GET_ITEM(record, 3))) ? 0 : -1;
  PyObject* globals = PyTuple_GET_ITEM(record, 5);
  PyObject* registry = PyDict_GetItemString(globals, "__warningregistry__");  // borrowed
  PyRef made;
  if (!registry) {
    made = PyRef::steal(PyDict_New());
    if (!made || PyDict_SetItemString(globals, "__warningregistry__", made.get()) < 0) return -1;
    registry = made.get();
  }
  return PyRef::steal(PyObject_CallFunction(warn_explicit, "OOOOOOO", message, category, PyTuple_GET_ITEM(record, 2),
                                            PyTuple_GET_ITEM(record, 3), PyTuple_GET_ITEM(record, 4), registry,
                                            globals))
             ? 0
             : -1;
}

// Replays one side effect; 0, or -1 with a Python error set.
int replay(const tracer::SideEffectTemplate& e, const std::vector<PyRef>& outputs, PyObject* const* inputs,
           std::vector<PyObject*>& memo, PyObject* globals) {
  using Kind = tracer::SideEffect::Kind;
  PyRef value = rebuild(e.value, outputs, inputs, memo);
  if (!value) return -1;
  if (e.kind == Kind::manual_seed || e.kind == Kind::seed) return 0;  // replayed before the graph ran (seed_before_graph)
  if (e.kind == Kind::inference_mode) return 0;                         // the graph ran in inference mode (call_graph)
  if (e.kind == Kind::set_grad_enabled) {  // the traced code left grad mode changed
    set_grad_mode_enabled(value.get() == Py_True);
    return 0;
  }
  if (e.kind == Kind::warn) return replay_warning(value.get());
  if (e.kind == Kind::check) {  // (condition, exception class, message, truth wanted): translate_checks.cpp
    int truth = PyObject_IsTrue(PyTuple_GET_ITEM(value.get(), 0));
    if (truth < 0) return -1;
    if ((truth == 1) == (PyTuple_GET_ITEM(value.get(), 3) == Py_True)) return 0;
    PyErr_SetObject(PyTuple_GET_ITEM(value.get(), 1), PyTuple_GET_ITEM(value.get(), 2));
    return -1;
  }
  if (e.kind == Kind::call_method) {  // a torch.autocast block's real __enter__/__exit__
    PyRef r = PyRef::steal(e.name == "__exit__"
                               ? PyObject_CallMethod(value.get(), e.name.c_str(), "OOO", Py_None, Py_None, Py_None)
                               : PyObject_CallMethod(value.get(), e.name.c_str(), nullptr));
    return r ? 0 : -1;
  }
  if (e.kind == Kind::set_global) {
    if (!globals) {
      PyErr_SetString(PyExc_RuntimeError, "tracejit: no globals to store into");
      return -1;
    }
    return PyDict_SetItemString(globals, e.name.c_str(), value.get());
  }
  PyRef target = rebuild(e.target, outputs, inputs, memo);
  if (!target) return -1;
  if (e.kind == Kind::set_attr) return PyObject_SetAttrString(target.get(), e.name.c_str(), value.get());
  if (e.kind == Kind::del_attr) return PyObject_DelAttrString(target.get(), e.name.c_str());
  if (e.kind == Kind::replace_list) {
    if (!PyList_Check(target.get())) {
      PyErr_SetString(PyExc_TypeError, "tracejit: list side effect on a non-list");
      return -1;
    }
    // "extend": the values a frame appended to a list it only appends to
    // (tracer/append_log.cpp), added after its current items.
    Py_ssize_t start = e.name == "extend" ? PY_SSIZE_T_MAX : 0;
    return PyList_SetSlice(target.get(), start, PY_SSIZE_T_MAX, value.get());
  }
  if (!PyRef::steal(PyObject_CallMethod(target.get(), "clear", nullptr))) return -1;
  return PyRef::steal(PyObject_CallMethod(target.get(), "update", "O", value.get())) ? 0 : -1;
}

}  // namespace tj::runtime
