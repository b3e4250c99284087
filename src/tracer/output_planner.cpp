// Output planning: after the trace, the templates the runtime rebuilds the
// frame's return value and its side effects from (OutputTemplate over the
// graph's outputs and inputs, identity kept through a memo), the graph's
// output node, and the guards every trace ends with (grad mode, default
// dtype, CPU autocast, no aliasing, size facts). See trace_api.h.
#include <algorithm>

#include "graph/effects.h"
#include "graph/sym_ints.h"
#include "tracer/numpy_values.h"
#include "tracer/autocast.h"
#include "tracer/py_str.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "support/tensor_bridge.h"
#include "tracer/translator.h"
#include "tracer/append_log.h"

namespace tj::tracer {

PyObject* number_of_function();  // symbolic_numbers.cpp: a 0-d tensor's .item() after the graph

void InstructionTranslator::finish_result(const ValuePtr& returned, TraceResult& result) {
  std::vector<graph::Arg> outputs;
  std::unordered_map<graph::Node*, int> output_index;
  // A torch.inference_mode block left open at a graph break is entered for
  // real after the graph (before grad mode is set again: its exit restores
  // the mode it found), so the resume function runs inside it.
  if (shared_->inference.manager && !shared_->inference.closed)
    shared_->side_effects.push_back(SideEffect{SideEffect::Kind::call_method, nullptr, "__enter__", shared_->inference.manager});
  // A grad mode left changed (a break inside `with torch.no_grad():`, a
  // torch.set_grad_enabled(False) call) is set again after the graph runs.
  if (grad_mode_enabled() != shared_->entry_grad_enabled)
    shared_->side_effects.push_back(SideEffect{SideEffect::Kind::set_grad_enabled, nullptr, "",
                                               Value::constant(grad_mode_enabled() ? Py_True : Py_False)});
  add_autocast_side_effects(*this);
  // Side effects first (their templates may create objects the output reuses).
  for (const SideEffect& effect : shared_->side_effects) {
    SideEffectTemplate t{effect.kind, {}, effect.name, {}};
    bool ok = true;
    if (effect.target) {
      // The target is the pre-existing object itself: passed in by its source.
      t.target.kind = OutputTemplate::Kind::input;
      t.target.index = static_cast<int>(shared_->input_sources.size());
      shared_->input_sources.push_back(effect.target->source);
    }
    if (effect.kind == SideEffect::Kind::replace_list) {
      if (is_append_log(*effect.target)) t.name = "extend";  // a list only appended to: append_log.cpp
      ok = build_output(Value::sequence(ValueKind::list, effect.target->items), t.value, outputs, output_index);
    } else if (effect.kind == SideEffect::Kind::replace_dict) {
      ok = build_output(Value::dict(effect.target->keys, effect.target->items), t.value, outputs, output_index);
    } else {
      ok = build_output(effect.value, t.value, outputs, output_index);
    }
    if (!ok) {
      result.graph_break.reset();
      result.unsupported = failure_;
      return;
    }
    result.side_effects.push_back(std::move(t));
  }
  result.globals = PyRef::borrow(frame_.globals);
  if (!build_output(returned, result.output, outputs, output_index)) {
    result.graph_break.reset();
    result.unsupported = failure_;
    return;
  }
  duck_size_inputs(*this);
  shared_->graph->output(graph::Arg::tuple(std::move(outputs)));
  shared_->guards.add(Guard{GuardKind::grad_mode, nullptr, {}, {}, 0, 0, shared_->entry_grad_enabled});
  Guard dtype_guard{GuardKind::default_dtype, nullptr};
  dtype_guard.dtype = default_dtype();
  shared_->guards.add(std::move(dtype_guard));
  Guard autocast_guard{GuardKind::autocast_cpu, nullptr};
  autocast_guard.flag = shared_->entry_autocast.enabled;
  autocast_guard.dtype = shared_->entry_autocast.dtype;
  shared_->guards.add(std::move(autocast_guard));
  add_no_aliasing_guard();
  add_distinct_objects_guard();
  finish_size_inputs(*this, result);  // before their size nodes, used by no op, are erased
  for (auto& [fact, why] : shared_->specializations)  // those of a span undone by a break are gone
    if (fact < shared_->size_facts.size()) result.specializations.push_back(std::move(why));
  add_size_facts_guard(*this);  // its graph keeps the comparisons; this one needs only the sizes ops use
  graph::erase_unused_sym_nodes(*shared_->graph);
  for (graph::Node* n : shared_->graph->nodes())
    if (n->kind() == graph::NodeKind::call_function && n->op() && !n->op()->is_builtin()) ++result.op_count;
  result.graph = std::move(shared_->graph);
  result.input_sources = std::move(shared_->input_sources);
  result.int_inputs = std::move(shared_->int_inputs);
  result.needed_ints = shared_->needed_ints;
  result.speculative_reads = shared_->speculative_reads;
  if (!shared_->dynamic_inputs.empty() && shared_->sizes_read) {
    result.sizes_read = shared_->sizes_read;
    shared_->guards.specialize_dynamic_dims();
  } else if (!shared_->dynamic_inputs.empty()) {
    result.dynamic = std::move(shared_->dynamic_inputs);
  }
  result.guards = std::move(shared_->guards);
}

bool InstructionTranslator::build_cell_output(const ValuePtr& cell, OutputTemplate& out,
                                              std::vector<graph::Arg>& outputs,
                                              std::unordered_map<graph::Node*, int>& output_index) {
  using Kind = OutputTemplate::Kind;
  if (!cell || cell->kind != ValueKind::cell) return unsupported("a closure without cells of its own");
  if (cell->obj) {  // a real cell (the compiled function's closure): that very cell
    out.kind = Kind::constant;
    out.constant = PyRef::borrow(cell->obj.get());
    return true;
  }
  if (cell->source)  // a cell of an inlined function input's closure, read through its contents
    return unsupported("cannot rebuild a closure over a closure cell of a function passed in");
  output_memo_alive_.push_back(cell);
  auto [it, inserted] = output_memo_.emplace(cell.get(), static_cast<int>(output_memo_.size()));
  if (!inserted) {
    out.kind = Kind::memo_ref;
    out.index = it->second;
    return true;
  }
  out.kind = Kind::cell;
  out.memo = it->second;
  // A cell variable of the compiled frame: its own cell (LOAD_CLOSURE in
  // the transformed code), passed in as an input.
  PyCodeObject* co = frame_.code;
  for (int slot = 0; !inlined_ && slot < co->co_nlocalsplus - co->co_nfreevars; ++slot) {
    if (locals_[static_cast<size_t>(slot)] != cell) continue;
    out.index = static_cast<int>(shared_->input_sources.size());
    shared_->input_sources.push_back(Source::closure_cell(-1, utf8(PyTuple_GET_ITEM(co->co_localsplusnames, slot))));
    break;
  }
  if (!cell->items.empty() && cell->items[0]) {
    out.items.emplace_back();
    return build_output(cell->items[0], out.items.back(), outputs, output_index);
  }
  return true;
}

void InstructionTranslator::add_no_aliasing_guard() {
  // A graph that writes its inputs was traced knowing which inputs share
  // memory (a write through one seen by the other); calls where inputs
  // that were distinct share memory need another trace (as TorchDynamo's
  // guard on duplicate inputs). Graphs that write nothing do not care.
  std::vector<graph::Node*> placeholders = shared_->graph->placeholders();
  if (placeholders.size() < 2 || !(shared_->tensor_identity_matters || graph::effects_of(*shared_->graph).writes_inputs))
    return;
  Guard g{GuardKind::no_aliasing, nullptr};
  for (size_t i = 0; i < placeholders.size() && i < shared_->input_sources.size(); ++i) {
    const graph::TensorMeta* meta = placeholders[i]->meta().tensor();
    const bool int_input = std::find(shared_->int_inputs.begin(), shared_->int_inputs.end(), i) != shared_->int_inputs.end();
    const bool size_input = std::any_of(shared_->size_inputs.begin(), shared_->size_inputs.end(),
                                        [&](const auto& s) { return s.first == static_cast<int>(i); });
    if (!meta || meta->storage_id < 0 || int_input || size_input) continue;
    g.sources.push_back(shared_->input_sources[i]);
    g.storage_ids.push_back(meta->storage_id);
  }
  bool distinct = std::any_of(g.storage_ids.begin(), g.storage_ids.end(),
                              [&](int64_t id) { return id != g.storage_ids.front(); });
  if (distinct) shared_->guards.add(std::move(g));
}

bool InstructionTranslator::build_output(const ValuePtr& v, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                                         std::unordered_map<graph::Node*, int>& output_index) {
  using Kind = OutputTemplate::Kind;
  if (v->is_symint() && unbacked(*this, v)) {
    // A size known only when the graph runs (live at a break: `if
    // idx.numel() == 0` breaks at the comparison): a 0-d tensor the graph
    // computes, made a Python int after it, never the placeholder.
    ValuePtr t = call_aten(*this, "aten::scalar_tensor", {v},
                           {{"dtype", Value::constant_steal(dtype_object(c10::ScalarType::Long))}});
    if (!t) return false;
    out.kind = Kind::tuple;
    out.constant = PyRef::borrow(number_of_function());
    out.items.emplace_back();
    return build_output(t, out.items.back(), outputs, output_index);
  }
  if (v->is_symint() || v->kind == ValueKind::size_text) {  // a plain int or str after the graph
    ValuePtr plain = specialize(*this, v);
    if (failed()) return false;  // a size that depends on tensor data (refuse_unbacked_fact): never its placeholder
    return build_output(plain, out, outputs, output_index);
  }
  if (is_python_number(v)) return build_number_output(v, out, outputs, output_index);
  if (v->kind == ValueKind::seed_result) return build_seed_output(v, out);
  if (v->is_tensor()) return build_tensor_output(v, out, outputs, output_index);
  if (v->kind == ValueKind::partial) return unsupported("cannot rebuild a bound or partial callable made during tracing");
  if (v->bound_self() && PyFunction_Check(v->obj.get())) {
    // A function bound to a value (obj.method, super().method): the same
    // function bound to the rebuilt self.
    out.kind = Kind::method;
    out.constant = PyRef::borrow(v->obj.get());
    out.items.emplace_back();
    return build_output(v->bound_self(), out.items.back(), outputs, output_index);
  }
  if (v->bound_self())
    return unsupported("cannot rebuild a bound or partial callable made during tracing");
  if (v->source && !v->is_constant() && v->kind != ValueKind::tensor) {
    // An object read from the frame's inputs: return that very object
    // (mutations of it are replayed as side effects).
    out.kind = Kind::input;
    out.index = static_cast<int>(shared_->input_sources.size());
    shared_->input_sources.push_back(v->source);
    return true;
  }
  bool fresh_object = v->kind == ValueKind::object && v->object_class();
  if (fresh_object && std::find(objects_being_built_.begin(), objects_being_built_.end(), v.get()) != objects_being_built_.end())
    return unsupported("an object made in the traced function that refers to itself cannot be rebuilt after the graph");
  bool made_set = v->is_constant() && PySet_CheckExact(v->obj.get());  // one set reached twice stays one
  if (v->kind == ValueKind::list || v->kind == ValueKind::dict || v->kind == ValueKind::iterator || fresh_object ||
      made_set) {
    output_memo_alive_.push_back(v);
    auto [it, inserted] = output_memo_.emplace(v.get(), static_cast<int>(output_memo_.size()));
    if (!inserted) {
      out.kind = Kind::memo_ref;
      out.index = it->second;
      return true;
    }
    out.memo = it->second;
    if (fresh_object) return build_fresh_object_output(v, out, outputs, output_index);
    if (is_keyed_set(v)) {  // a new set of its elements per call
      out.kind = Kind::tuple;
      out.constant = PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get())));
      for (const ValuePtr& item : v->items) {
        out.items.emplace_back();
        if (!build_output(item, out.items.back(), outputs, output_index)) return false;
      }
      return true;
    }
    if (v->kind == ValueKind::dict && v->obj && !PyDict_CheckExact(v->obj.get()))  // OrderedDict/defaultdict made here
      return build_typed_dict_output(v, out, outputs, output_index);
  }
  if (v->kind == ValueKind::function) return build_function_output(v, out, outputs, output_index);
  return build_value_output(v, out, outputs, output_index);
}

// A tensor: an input (also one written in place), or a graph output.
bool InstructionTranslator::build_tensor_output(const ValuePtr& v, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                                                std::unordered_map<graph::Node*, int>& output_index) {
  using Kind = OutputTemplate::Kind;
  if (auto it = shared_->placeholder_index.find(v->node); it != shared_->placeholder_index.end()) {
    out.kind = Kind::input;
    out.index = it->second;
    return true;
  }
  // An input written in place stands for the in-place node now, but it
  // is still the caller's object: returned as that object.
  const size_t placeholders = v->source ? shared_->graph->placeholders().size() : 0;
  for (size_t i = 0; i < placeholders; ++i) {
    if (shared_->input_sources[i] != v->source) continue;
    out.kind = Kind::input;
    out.index = static_cast<int>(i);
    return true;
  }
  auto [it, inserted] = output_index.emplace(v->node, static_cast<int>(outputs.size()));
  if (inserted) outputs.emplace_back(v->node);
  out.kind = Kind::graph_output;
  out.index = it->second;
  return true;
}

// A function made in the frame (a lambda, a comprehension, a nested
// def): made again from its code, globals, defaults and closure cells
// (each cell one object however many closures share it; a cell of the
// compiled frame is the frame's own, so later writes on either side
// are seen by both).
bool InstructionTranslator::build_function_output(const ValuePtr& v, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                                                  std::unordered_map<graph::Node*, int>& output_index) {
  using Kind = OutputTemplate::Kind;
  const FunctionPayload& made = v->as_function();
  if (!v->attr_overrides.empty())  // functools.wraps copied metadata onto it
    return unsupported("cannot rebuild a function made during tracing whose attributes were written");
  out.kind = Kind::function;
  out.constant = PyRef::borrow(v->obj.get());
  out.keys.push_back(PyRef::borrow(made.globals));
  for (const auto& d : made.defaults) {
    out.items.emplace_back();
    if (!build_output(d, out.items.back(), outputs, output_index)) return false;
  }
  for (const auto& cell : v->items) {
    out.items.emplace_back();
    if (!build_cell_output(cell, out.items.back(), outputs, output_index)) return false;
    ++out.closure_cells;
  }
  if (!made.kwdefaults.empty()) {
    std::vector<ValuePtr> keys, values;
    for (const auto& [name, value] : made.kwdefaults) {
      keys.push_back(Value::constant_steal(PyUnicode_FromString(name.c_str())));
      values.push_back(value);
    }
    out.items.emplace_back();
    if (!build_output(Value::dict(std::move(keys), std::move(values)), out.items.back(), outputs, output_index))
      return false;
    out.has_kwdefaults = true;
  }
  return true;
}

// The other kinds: dict views, tensor methods, iterators, slices, containers, constants.
bool InstructionTranslator::build_value_output(const ValuePtr& v, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                                               std::unordered_map<graph::Node*, int>& output_index) {
  using Kind = OutputTemplate::Kind;
  switch (v->kind) {
    case ValueKind::dict_view:
      // d.keys() / d.values() / d.items(): the view is made after the graph
      // on the dict it watches (the caller's, or the one the frame built).
      out.kind = Kind::dict_view;
      out.constant = PyRef::steal(PyUnicode_FromString(dict_view_method(v->as_dict_view().which)));
      out.items.emplace_back();
      return build_output(v->as_dict_view().dict, out.items.back(), outputs, output_index);
    case ValueKind::tensor_method:
      out.kind = Kind::attr;
      out.constant = PyRef::steal(PyUnicode_FromString(v->as_method().name.c_str()));
      out.items.emplace_back();
      return build_output(v->as_method().self, out.items.back(), outputs, output_index);
    case ValueKind::iterator:
      // Made again from its values, a list_iterator or tuple_iterator (the
      // iterator of a new tuple: `constant` is the tuple type); a generator
      // would be computed ahead of time: any other stays in CPython.
      if (v->as_iterator().python_type != &PyListIter_Type && v->as_iterator().python_type != &PyTupleIter_Type &&
          !v->as_iterator().rebuildable_generator)
        return unsupported(std::string("a ") + v->as_iterator().python_type->tp_name + " cannot leave a compiled graph (it would be a list_iterator)");
      out.kind = Kind::iterator;
      if (v->as_iterator().python_type == &PyTupleIter_Type)
        out.constant = PyRef::borrow(reinterpret_cast<PyObject*>(&PyTuple_Type));
      if (v->as_iterator().rebuildable_generator)  // a generator over what it has left (`constant`: the generator type)
        out.constant = PyRef::borrow(reinterpret_cast<PyObject*>(&PyGen_Type));
      for (size_t i = v->position; i < v->items.size(); ++i) {
        out.items.emplace_back();
        if (!build_output(v->items[i], out.items.back(), outputs, output_index)) return false;
      }
      return true;
    case ValueKind::slice: {
      // a slice with a tensor or size bound, live at a break (list[:t] breaks
      // at its subscript): slice(*bounds) from its rebuilt parts
      static PyObject* make_slice = PyRun_String("lambda parts: slice(*parts)", Py_eval_input, PyEval_GetBuiltins(),
                                                 nullptr);  // kept for the process
      if (!make_slice) {
        PyErr_Clear();  // no rebuilder: the value cannot leave the graph
        return unsupported("cannot return a slice from a compiled frame");
      }
      out.kind = Kind::tuple;
      out.constant = PyRef::borrow(make_slice);
      for (const ValuePtr& part : v->items) {
        out.items.emplace_back();
        if (!build_output(part, out.items.back(), outputs, output_index)) return false;
      }
      return true;
    }
    case ValueKind::tuple:
    case ValueKind::list:
    case ValueKind::dict:
      out.kind = v->kind == ValueKind::tuple ? Kind::tuple : v->kind == ValueKind::list ? Kind::list : Kind::dict;
      if (v->kind == ValueKind::tuple && v->obj && PyType_Check(v->obj.get())) {
        // A structseq type builds from the tuple; a namedtuple class through its _make.
        PyObject* make = PyObject_HasAttrString(v->obj.get(), "_fields") ? PyObject_GetAttrString(v->obj.get(), "_make") : nullptr;
        clear_expected_error({PyExc_AttributeError});  // a namedtuple without _make: built from the tuple
        out.constant = make ? PyRef::steal(make) : PyRef::borrow(v->obj.get());
      }
      for (size_t i = 0; i < v->items.size(); ++i) {
        out.items.emplace_back();
        if (!build_output(v->items[i], out.items.back(), outputs, output_index)) return false;
        if (v->kind == ValueKind::dict) {
          PyRef key = v->keys[i]->as_python();  // a tensor key: the input tensor itself
          if (!key) return unsupported("a dict keyed by a tensor made in the graph cannot leave it");
          out.keys.push_back(std::move(key));
        }
      }
      return true;
    case ValueKind::constant:
      if (PySet_CheckExact(v->obj.get())) {  // a set made in the frame: a new set per call
        out.kind = Kind::tuple;
        out.constant = PyRef::borrow(reinterpret_cast<PyObject*>(&PySet_Type));
        PyRef it = PyRef::steal(PyObject_GetIter(v->obj.get()));
        while (PyRef item = PyRef::steal(it ? PyIter_Next(it.get()) : nullptr)) {
          out.items.emplace_back();
          out.items.back().kind = Kind::constant;
          out.items.back().constant = std::move(item);
        }
        PyErr_Clear();  // iterating a set of constants made in the frame: nothing can raise
        return true;
      }
      if (is_frame_array(v))  // eager makes a new array per call (translate_numpy.cpp)
        return unsupported("a numpy array made in the compiled frame cannot leave its graph");
      [[fallthrough]];
    case ValueKind::callable:
    case ValueKind::module:
    case ValueKind::object:
      out.kind = Kind::constant;
      out.constant = PyRef::borrow(v->obj.get());
      return true;
    default: return unsupported("cannot return a " + v->type_name() + " from a compiled frame");
  }
}

}  // namespace tj::tracer
