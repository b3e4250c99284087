// Value trackers: what the symbolic executor keeps on its stack and in its
// locals instead of real Python objects.
//
// One struct with a kind, not a class hierarchy: each kind uses a few of
// the shared fields, and fields only one kind has live in that kind's
// payload (`payload`, read through `as_function()` / `as_iterator()`;
// more kinds are to move there). Values are shared (ValuePtr); a list or
// dict is one Value that every reference points at, so mutating it
// through one name is seen through all, as in Python.
//   - constant: an immutable Python object known at trace time (int, float,
//     bool, str, None, Ellipsis, slice, range, tuple of constants,
//     torch.dtype/device/Size, code objects); arithmetic on constants is
//     folded by running the real operation.
//   - tensor: a graph node with its fake description.
//   - tuple / list / dict: containers of values (dict keys are constants).
//   - callable: a Python callable the tracer knows how to call (a torch
//     function, a builtin, a Tensor method bound to `self_value`).
//   - module: a Python module (attribute reads return values).
//   - object: any other Python object read from a source; only its type is
//     known to be stable (type guard).
//   - iterator: a FOR_ITER iterator over a finite list of values (unrolled):
//     the values in `items`, the next one at `position`, the rest in an
//     IteratorPayload.
//   - null: the NULL that PUSH_NULL / LOAD_GLOBAL push before a callable.
//   - function: a function made in the frame (MAKE_FUNCTION): its code in
//     `obj`, its qualified name in `name`, closure cells in `items`, the
//     rest in a FunctionPayload.
//   - cell: a closure cell; `items[0]` is its content (null: empty).
//   - dict_view: a live `d.keys()` / `d.values()` / `d.items()` view of the
//     dict value `self_value` (`name` says which); read at each use, so it
//     sees later insertions as Python's views do.
//   - symint: a Python int that is a size of a tensor whose dims may vary,
//     or arithmetic on such sizes (dynamic shapes, symbolic_sizes.cpp):
//     `node` is its size node in the graph (graph/sym_ints.h), `obj` the
//     int it is in this trace. Code that needs the number itself takes it
//     with InstructionTranslator::specialize, which guards on it.
//   - slice: a slice with a symint among its bounds (`x[:, :T]`): `items`
//     are start, stop, step (None constants where absent).
//   - size_text: a string formatted from sizes (`f"got {x.shape}"`): `obj`
//     the string for this trace's sizes, `items` the sizes it shows. Only
//     a use of the text itself (not an assert's unused message) guards them.
//   - object with `object_class`: an instance of a user class made in the
//     frame (translate_objects.cpp), rebuilt after the graph if it escapes.
//   A callable with `self_value` is a bound method (self prepended).
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "graph/graph.h"
#include "support/py_ref.h"
#include "tracer/source.h"

namespace tj::tracer {

// seed_result: what torch.seed() returned, known once the runtime replays it
// before the graph (translate_with.cpp); `position` is its side effect's index.
enum class ValueKind { null, constant, tensor, tuple, list, dict, callable, tensor_method, module, object, iterator, function, cell, dict_view, symint, slice, size_text, seed_result };

struct Value;
using ValuePtr = std::shared_ptr<Value>;

// function: what MAKE_FUNCTION gave it besides its code and closure.
// No source for its globals is kept: a call of it reads them as G[...]
// when they are the root frame's and refuses global reads otherwise
// (op_load_global).
struct FunctionPayload {
  PyObject* globals = nullptr;  // its globals (borrowed from the frame)
  std::vector<ValuePtr> defaults;
  std::vector<std::pair<std::string, ValuePtr>> kwdefaults;
};

// iterator: what Python would see of it besides its items and position.
struct IteratorPayload {
  // The type Python gives it (list_iterator, generator, enumerate, ...; a
  // static type, borrowed). Only a list_iterator is made again after the
  // graph; a generator is lazy in Python and must not be computed ahead
  // of use.
  PyTypeObject* python_type = &PySeqIter_Type;
  // Made by a generator: after each yield, and at its end, how many writes
  // to values outside the generator it had done (its length is
  // items.size() + 1). Stopping after item k is what Python does iff
  // nothing outside changed after that item.
  std::vector<size_t> effect_marks;
  // Made by GET_ITER from an iterable: only its loop or the generator
  // expression it feeds can reach it, so moving it is no write anyone else
  // sees.
  bool hidden = false;
};

struct Value {
  ValueKind kind = ValueKind::null;
  SourcePtr source;            // where it was read from (inputs), or null (made in the frame)
  PyRef obj;               // constant/callable/module/object: the Python object
  graph::Node* node = nullptr; // tensor, symint
  std::vector<ValuePtr> items; // tuple/list/dict values/iterator items
  std::vector<ValuePtr> keys;  // dict keys (constants), parallel to items
  ValuePtr self_value;         // tensor_method: the tensor
  std::string name;            // tensor_method: the method name
  size_t position = 0;         // iterator: next item
  // The fields of one kind: a FunctionPayload for a function, an
  // IteratorPayload for an iterator, nothing (monostate) for the other
  // kinds so far.
  std::variant<std::monostate, FunctionPayload, IteratorPayload> payload;
  // Attributes assigned during the trace (object/module values).
  std::vector<std::pair<std::string, ValuePtr>> attr_overrides;
  // object: its `__dict__` once read as a dict value; attribute writes and
  // reads go through it from then on (one storage, two views).
  ValuePtr instance_dict;
  // Creation order: a value made before another has a smaller stamp
  // (copies keep it). Tells a generator's own values from the ones it
  // writes outside itself.
  uint64_t birth = next_birth();
  static uint64_t next_birth() {
    static uint64_t counter = 0;
    return ++counter;
  }
  // functools.partial applied to a callable value: arguments bound first.
  std::vector<ValuePtr> bound_args;
  std::vector<std::pair<std::string, ValuePtr>> bound_kwargs;
  // object made in the frame by calling a user-defined class (no source):
  // the class's value; `obj` is an empty instance standing for its type
  // and `attr_overrides` are all its attributes (translate_objects.cpp).
  ValuePtr object_class;
  // tensor that stands for a Python number made by Tensor.item() (a 0-d
  // float64/int64/bool node; `obj` is float/int/bool): symbolic_numbers.cpp.
  bool python_number = false;
  // python_number fed by int inputs (automatic dynamic ints): the input
  // sources it depends on and a bound on its magnitude (int64 arithmetic
  // is Python's while it stays <= 2**62); null for Tensor.item()'s numbers.
  struct DynamicIntOrigin {
    std::vector<std::string> sources;
    double bound = 0;
  };
  std::shared_ptr<const DynamicIntOrigin> dynamic_int;
  // dict that is a collections.defaultdict: its factory (dict_keys.cpp).
  ValuePtr default_factory;

  static ValuePtr null();
  static ValuePtr constant(PyObject* obj);          // borrowed
  static ValuePtr constant_steal(PyObject* obj);    // new reference taken
  static ValuePtr tensor(graph::Node* node);
  static ValuePtr sequence(ValueKind kind, std::vector<ValuePtr> items);
  static ValuePtr dict(std::vector<ValuePtr> keys, std::vector<ValuePtr> values);
  static ValuePtr callable(PyObject* fn);           // borrowed
  static ValuePtr tensor_method(ValuePtr self, std::string name);
  static ValuePtr module(PyObject* mod);            // borrowed
  static ValuePtr object(PyObject* obj);            // borrowed
  static ValuePtr iterator(std::vector<ValuePtr> items, PyTypeObject* python_type = &PySeqIter_Type);  // a static type
  static ValuePtr cell(ValuePtr content);
  static ValuePtr dict_view(ValuePtr dict, std::string which);  // "keys", "values" or "items"
  static ValuePtr symint(graph::Node* node, int64_t value);
  // A function made in the frame from `code` (a code object value).
  static ValuePtr function(PyRef code, std::string qualname, FunctionPayload payload);

  FunctionPayload& as_function() {
    auto* p = std::get_if<FunctionPayload>(&payload);
    assert(p && kind == ValueKind::function && "a function value's payload");
    return *p;
  }
  const FunctionPayload& as_function() const { return const_cast<Value*>(this)->as_function(); }
  IteratorPayload& as_iterator() {
    auto* p = std::get_if<IteratorPayload>(&payload);
    assert(p && kind == ValueKind::iterator && "an iterator value's payload");
    return *p;
  }
  const IteratorPayload& as_iterator() const { return const_cast<Value*>(this)->as_iterator(); }
  // An iterator only its own loop can reach (IteratorPayload::hidden); false for other kinds.
  bool is_hidden_iterator() const {
    auto* p = std::get_if<IteratorPayload>(&payload);
    return p && p->hidden;
  }

  bool is_constant() const { return kind == ValueKind::constant; }
  bool is_tensor() const { return kind == ValueKind::tensor; }
  bool is_symint() const { return kind == ValueKind::symint; }
  bool is_sequence() const { return kind == ValueKind::tuple || kind == ValueKind::list; }
  const graph::TensorMeta& meta() const;  // tensor only
  // dict_view: what it shows now (keys, values, or (key, value) tuples).
  std::vector<ValuePtr> view_items() const;

  // Whether this value (recursively) holds only constants.
  bool is_python_constant() const;
  // A new reference to the Python object this value stands for, when it
  // has no tensors in it (constants, containers of constants, callables,
  // modules, objects); null otherwise. No Python error is left set.
  PyObject* as_python() const;
  // A short description for error messages: "Tensor", "int", "list", ...
  std::string type_name() const;
};

}  // namespace tj::tracer
