// Value trackers: what the symbolic executor keeps on its stack and in its
// locals instead of real Python objects.
//
// One struct with a kind, not a class hierarchy: a few fields every kind
// may use (below), and the fields only one kind has in that kind's
// payload (`payload`, a variant read through the typed accessors
// `as_function()`, `as_method()`, ...). Values are shared (ValuePtr); a
// list or dict is one Value that every reference points at, so mutating
// it through one name is seen through all, as in Python.
//
// The shared fields: `kind`; `source` (where an input was read from, null
// for a value made in the frame); `items` (the elements of a container,
// iterator, closure or slice); `node` (tensor, symint); `birth`; and `obj`,
// whose meaning is the kind's:
//   - constant: the Python object it is, known at trace time (int, float,
//     bool, str, None, Ellipsis, slice, range, tuple of constants,
//     torch.dtype/device/Size, code objects, methods of constants, and sets
//     of constants, which set methods replace: translate_sets.cpp);
//     arithmetic on constants is folded by running the real operation.
//   - tensor: the graph node and its fake description are `node`; `obj` is
//     an input tensor's type (for isinstance), the number's type (float,
//     int, bool) for a tensor standing for a Python number (NumberPayload,
//     symbolic_numbers.cpp), null for other tensors made in the graph.
//   - tuple: an input's real tuple; for one made in the frame null, or the
//     class it is an instance of (a namedtuple, a torch.return_types
//     structseq, torch.Size for x.shape): PyType_Check tells which.
//   - list: an input's real list, or null (a sliced nn.Sequential is a
//     list with a ModuleSlice).
//   - dict: an input's real dict (or OrderedDict/defaultdict); for one made
//     in the frame null, or an empty instance of its type (an OrderedDict/
//     defaultdict, or a set or frozenset keyed by its elements:
//     translate_sets.cpp). `keys` are parallel to `items`.
//   - callable: the Python callable (a torch function, a builtin, a class,
//     a Python function; one bound to a value has a MethodPayload).
//   - tensor_method: none (MethodPayload: the value and the method name).
//   - module: the Python module (attribute reads return values).
//   - object: the object, only its type known to be stable (type guard);
//     a super object (SuperPayload) is the real super() it stands for, a
//     tensor dict key (TensorKeyPayload) the tensor it hashes as, an
//     instance of a user class made in the frame (FreshObjectPayload) an
//     empty instance standing for its type.
//   - iterator: none; the values in `items`, the next one at `position`,
//     the rest in an IteratorPayload.
//   - null: none; the NULL that PUSH_NULL / LOAD_GLOBAL push before a
//     callable.
//   - function: its code object; a function made in the frame
//     (MAKE_FUNCTION), closure cells in `items`, the rest in a
//     FunctionPayload.
//   - cell: the real cell of the frame's free variable it reads, or null
//     for a cell made in the frame; `items[0]` its content (null: empty).
//   - dict_view: none (DictViewPayload): a live `d.keys()` / `d.values()` /
//     `d.items()` view, read at each use, so it sees later insertions as
//     Python's views do.
//   - symint: the int it is in this trace; a Python int that is a size of a
//     tensor whose dims may vary, or arithmetic on such sizes (dynamic
//     shapes, symbolic_sizes.cpp): `node` is its size node in the graph
//     (graph/sym_ints.h). Code that needs the number itself takes it with
//     InstructionTranslator::specialize, which guards on it.
//   - slice: none; a slice with a symint among its bounds (`x[:, :T]`):
//     `items` are start, stop, step (None constants where absent).
//   - size_text: the string for this trace's sizes; a string formatted from
//     sizes (`f"got {x.shape}"`), `items` the sizes it shows. Only a use of
//     the text itself (not an assert's unused message) guards them.
//   - seed_result: the int type (for type() and isinstance()); what
//     torch.seed() returned, known once the runtime replays it before the
//     graph (translate_with.cpp); `position` is its side effect's index.
//   - partial: none; `functools.partial(f, ...)` made in the frame: `f`'s
//     value and the arguments bound first in a PartialPayload.
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

enum class ValueKind { null, constant, tensor, tuple, list, dict, callable, tensor_method, module, object, iterator, function, cell, dict_view, symint, slice, size_text, seed_result, partial };

struct Value;
using ValuePtr = std::shared_ptr<Value>;

// function: what MAKE_FUNCTION gave it besides its code and closure.
// No source for its globals is kept: a call of it reads them as G[...]
// when they are the root frame's and refuses global reads otherwise
// (op_load_global).
struct FunctionPayload {
  std::string qualname;         // its co_qualname (the name error messages give)
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
  // A generator of nn.Module's own tree walks (`model.parameters()`,
  // `named_modules()`: torch/nn/modules/module.py) that wrote nothing
  // outside itself: computing it ahead changes nothing, so it may leave
  // the graph (at a break, as a call's argument) as a new generator over
  // its remaining items.
  bool rebuildable_generator = false;
};

// tensor_method: a method of a tensor, tuple, list, dict or set value
// (`x.add`, `xs.append`, `d.get`), called through tensor_methods.cpp or the
// container handlers. callable: a Python function bound to a value
// (`obj.method`, `super().method`, a property's getter, a user class's
// `__getattr__`): `self` is passed first when it is called.
struct MethodPayload {
  ValuePtr self;
  std::string name;  // the attribute it was read as; empty where there is none (a getter)
};

// dict_view: which view of which dict value.
enum class DictViewKind { keys, values, items };
struct DictViewPayload {
  ValuePtr dict;  // a dict value (shared: the view sees its later writes)
  DictViewKind which = DictViewKind::keys;
};
// "keys", "values" or "items": the dict method that makes the view.
const char* dict_view_method(DictViewKind which);

// list: the modules of `Sequential[a:b]` / `ModuleList[a:b]` (in `items`),
// which calling chains as the sliced Sequential would.
struct ModuleSlice {};

// object: `super()` in a method (translate_inline.cpp); `obj` is the real
// super object, `self` the value of the instance it was made for.
struct SuperPayload {
  ValuePtr self;
};

// object: a tensor as a dict key (dict_keys.cpp); `obj` is the tensor
// object itself, which hashes by identity.
struct TensorKeyPayload {
  // The tensor value it keys, for a tensor of the frame; null for a key of
  // a dict input (guarded by DICT_KEYS to be that very tensor).
  ValuePtr tensor;
};

// object: an instance of a user class made in the frame
// (translate_objects.cpp): `obj` is an empty instance standing for its
// type, `attr_overrides` are all its attributes; rebuilt after the graph if
// it escapes.
struct FreshObjectPayload {
  ValuePtr cls;  // the class's value
};

// object read from an input: its `__dict__` once read as a dict value;
// attribute writes and reads go through it from then on (one storage, two
// views; attributes.cpp).
struct InstanceDictPayload {
  ValuePtr dict;
};

// tensor: a Python number made by Tensor.item() or an automatic dynamic
// int (a 0-d float64/int64/bool node; `obj` is float/int/bool), see
// symbolic_numbers.cpp.
struct NumberExpr;  // guards.h
struct DynamicIntOrigin {
  std::vector<std::string> sources;  // the int inputs it depends on
  double bound = 0;                  // a bound on its magnitude
  // Computed from one input by steps with constants (its value when traced
  // included): a comparison on it is a NUMBER_FACT guard. Null otherwise.
  std::shared_ptr<const NumberExpr> expr;
};
struct NumberPayload {
  // Fed by int inputs (automatic dynamic ints): int64 arithmetic is
  // Python's while the magnitude stays <= 2**62. Null for Tensor.item()'s
  // numbers.
  std::shared_ptr<const DynamicIntOrigin> dynamic_int;
  // A number computed from sizes (size_numbers.cpp): it has the sign of
  // this size node (0 exactly when it is 0), so a division by it, its
  // square root or a power of it holds where a size fact says so. Null
  // when unknown.
  graph::Node* size_sign = nullptr;
  // A number that is `quotient_num / quotient_den`, a true division of
  // two ints (sizes or int constants, a size among them): math.floor,
  // math.ceil, math.trunc and int() of it are sizes again
  // (size_numbers.cpp). Null otherwise.
  ValuePtr quotient_num, quotient_den;
  // An int read from a tensor (Tensor.item()/.tolist(), symbolic_numbers.cpp)
  // or computed from such ints: a bound on its magnitude (2**31 from an
  // int32 tensor, infinity from an int64 one), so that int64 arithmetic is
  // traced only where it cannot leave int64's range (Python's ints grow).
  // Negative where not tracked.
  double int_magnitude = -1;
};

// dict: a collections.defaultdict's factory (dict_keys.cpp); a missing
// key inserts what calling it makes.
struct DefaultDictPayload {
  ValuePtr factory;
};

// partial: what functools.partial(fn, *args, **kwargs) bound. `fn` is a
// copy of the callable's value without its source (the partial was not
// read from there).
struct PartialPayload {
  ValuePtr fn;
  std::vector<ValuePtr> args;
  std::vector<std::pair<std::string, ValuePtr>> kwargs;
};

struct Value {
  ValueKind kind = ValueKind::null;
  SourcePtr source;            // where it was read from (inputs), or null (made in the frame)
  PyRef obj;                   // the Python object, per kind (see the top of this file)
  graph::Node* node = nullptr; // tensor, symint
  std::vector<ValuePtr> items; // tuple/list/dict values/iterator items/closure cells/slice bounds
  std::vector<ValuePtr> keys;  // dict (and keyed set) keys, parallel to items
  size_t position = 0;         // iterator: next item; seed_result: its side effect
  // The fields of one kind, which alternative says: FunctionPayload
  // (function), IteratorPayload (iterator), MethodPayload (tensor_method,
  // and a callable bound to a value), DictViewPayload (dict_view),
  // ModuleSlice (list), SuperPayload, TensorKeyPayload, FreshObjectPayload
  // and InstanceDictPayload (object), NumberPayload (tensor),
  // DefaultDictPayload (dict), PartialPayload (partial); nothing
  // (monostate) otherwise.
  std::variant<std::monostate, FunctionPayload, IteratorPayload, MethodPayload, DictViewPayload, ModuleSlice,
               SuperPayload, TensorKeyPayload, FreshObjectPayload, InstanceDictPayload, NumberPayload,
               DefaultDictPayload, PartialPayload>
      payload;
  // Attributes assigned during the trace: writes to an input object or
  // class (callable) replayed after the graph (attributes.cpp); all the
  // attributes of an object made in the frame (FreshObjectPayload).
  std::vector<std::pair<std::string, ValuePtr>> attr_overrides;
  // Creation order: a value made before another has a smaller stamp
  // (copies keep it). Tells a generator's own values from the ones it
  // writes outside itself.
  uint64_t birth = next_birth();
  static uint64_t next_birth() {
    static uint64_t counter = 0;
    return ++counter;
  }

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
  static ValuePtr dict_view(ValuePtr dict, DictViewKind which);
  // `fn` (borrowed) bound to `self`, read as the attribute `name` (may be empty).
  static ValuePtr bound_method(PyObject* fn, ValuePtr self, std::string name);
  static ValuePtr partial(ValuePtr fn, std::vector<ValuePtr> args, std::vector<std::pair<std::string, ValuePtr>> kwargs);
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
  MethodPayload& as_method() {
    auto* p = std::get_if<MethodPayload>(&payload);
    assert(p && (kind == ValueKind::tensor_method || kind == ValueKind::callable) && "a method value's payload");
    return *p;
  }
  const MethodPayload& as_method() const { return const_cast<Value*>(this)->as_method(); }
  const PartialPayload& as_partial() const {
    auto* p = std::get_if<PartialPayload>(&payload);
    assert(p && kind == ValueKind::partial && "a partial's payload");
    return *p;
  }
  const DictViewPayload& as_dict_view() const {
    auto* p = std::get_if<DictViewPayload>(&payload);
    assert(p && kind == ValueKind::dict_view && "a dict view's payload");
    return *p;
  }
  // The value a callable is bound to (MethodPayload::self); null for an
  // unbound callable and for every other kind.
  const ValuePtr& bound_self() const {
    static const ValuePtr none;
    auto* p = std::get_if<MethodPayload>(&payload);
    return p && kind == ValueKind::callable ? p->self : none;
  }
  // A super object's instance; null for other values.
  const ValuePtr& super_self() const {
    static const ValuePtr none;
    auto* p = std::get_if<SuperPayload>(&payload);
    return p && kind == ValueKind::object ? p->self : none;
  }
  // A tensor dict key's payload; null for other values.
  const TensorKeyPayload* tensor_key() const {
    auto* p = std::get_if<TensorKeyPayload>(&payload);
    return p && kind == ValueKind::object ? p : nullptr;
  }
  // An object made in the frame: its class's value (FreshObjectPayload);
  // null for other values.
  const ValuePtr& object_class() const {
    static const ValuePtr none;
    auto* p = std::get_if<FreshObjectPayload>(&payload);
    return p && kind == ValueKind::object ? p->cls : none;
  }
  // An input object's `__dict__` value once read (InstanceDictPayload);
  // null for other values.
  const ValuePtr& instance_dict() const {
    static const ValuePtr none;
    auto* p = std::get_if<InstanceDictPayload>(&payload);
    return p && kind == ValueKind::object ? p->dict : none;
  }
  // A defaultdict's factory (DefaultDictPayload); null for other values.
  const ValuePtr& default_factory() const {
    static const ValuePtr none;
    auto* p = std::get_if<DefaultDictPayload>(&payload);
    return p && kind == ValueKind::dict ? p->factory : none;
  }
  // A tensor standing for a Python number: its payload; null for other values.
  NumberPayload* number() {
    auto* p = std::get_if<NumberPayload>(&payload);
    return p && kind == ValueKind::tensor ? p : nullptr;
  }
  const NumberPayload* number() const { return const_cast<Value*>(this)->number(); }
  // A list of the modules of a sliced nn.Sequential (ModuleSlice).
  bool is_module_slice() const { return kind == ValueKind::list && std::holds_alternative<ModuleSlice>(payload); }
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
  // The Python object this value stands for (owned), when it has no
  // tensors in it (constants, containers of constants, callables, modules,
  // objects); null otherwise. No Python error is left set.
  PyRef as_python() const;
  // A short description for error messages: "Tensor", "int", "list", ...
  std::string type_name() const;
};

}  // namespace tj::tracer
