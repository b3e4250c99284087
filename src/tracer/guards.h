// Guard collection: what must hold about the frame's inputs for a trace to
// be reused. The tracer adds a guard for every value it read from a source
// (and for the global state it depended on); the runtime compiles the list
// into a C++ check evaluated on the frame's locals and globals before each
// reuse (runtime/guard_check.h). Printing is deterministic: golden tests
// pin the list.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "tracer/source.h"

namespace tj::tracer {

enum class GuardKind {
  tensor_match,   // dtype, device, sizes, strides, requires_grad, dispatch keys (dynamic dims: size >= 2, strides
                  // those of a dense tensor with the traced dim order)
  type_match,     // type(value) is expected
  id_match,       // value is expected (functions, modules, torch callables)
  const_eq,       // type(value) is type(expected) and value == expected
  length,         // type(value) is expected type and len(value) == n
  dict_keys,      // a dict with exactly these keys, in order
  grad_mode,      // torch.is_grad_enabled() == flag
  default_dtype,  // torch.get_default_dtype() == dtype
  autocast_cpu,   // torch.is_autocast_cpu_enabled() == flag (and its dtype is `dtype` when enabled)
  same_object,    // value is the value of `other` (an input seen through two sources)
  no_aliasing,    // the tensors at `sources` whose `storage_ids` differ share no storage
  size_facts,     // the facts about sizes the trace relied on still hold (dynamic shapes)
  dynamic_int,    // type(value) is int and -2**31 <= value < 2**31 (an int traced as a graph input);
                  // with `flag`: type(value) is float (a float traced as a graph input)
  not_grad_leaf,  // a tensor that is not a leaf requiring grad nor a view of one (in-place ops traced on it)
  no_module_hooks,  // an nn.Module with no forward pre-hook, forward hook nor backward hook (module_hooks_empty)
  module_match,     // an nn.Module input: type(value) is expected, the names in `absent` are absent from its
                    // __dict__ / tables (module_names_absent), and with no_module_hooks module_hooks_empty. Not
                    // its identity: instances of one class share a compile (their members are guarded each)
  distinct_objects,  // the objects at `sources` are pairwise distinct (identity comparisons the trace made)
  number_fact,       // a comparison on a dynamic number (number_fact) has the outcome it had when traced
};

// The tables of an nn.Module that a name is resolved through, in
// Module.__getattr__'s order after the instance __dict__.
enum class ModuleTable : int { instance_dict = 0, parameters = 1, buffers = 2, modules = 3 };

// What a trace with symbolic sizes relied on (symbolic_sizes.cpp): each
// fact is a size node of the trace's graph (a comparison, or a size used
// as a plain number) and the value it had. The runtime evaluates them for
// each new size signature of the inputs by inferring the graph's metas
// for those sizes (runtime/size_facts.h).
struct SizeFacts {
  std::shared_ptr<const graph::Graph> graph;  // the trace's graph, size nodes included
  std::vector<SourcePtr> inputs;              // the sources of its placeholders, in order
  std::vector<size_t> used_inputs;            // the placeholders the facts depend on (indices into inputs)
  std::vector<const graph::Node*> used_placeholders;  // those placeholders in `graph`, parallel
  std::vector<const graph::Node*> fact_nodes;         // in `graph`, parallel to facts
  // The facts read only the inputs' sizes (no tensor computed in the
  // graph): evaluated directly on each call, without inferring metas.
  bool direct = false;
  std::vector<std::pair<std::string, int64_t>> facts;  // size node name, value
  std::vector<std::string> descriptions;      // "L['x'].size(0) > 16", parallel to facts
  // The runtime's results per size signature: -1 all hold, else the failing fact.
  mutable std::mutex mu;
  mutable std::map<std::vector<int64_t>, int> checked;
};

// A comparison the trace made on an automatic dynamic number (an int or a
// float traced as a graph input): the number is the source's value taken
// through `steps` (each `value op constant`, or `constant op value`, or a
// one-argument call), compared with `other` by `compare_op` (Py_LT..Py_GE),
// the number on the left unless `number_right`. The guard holds while the
// comparison's outcome is `outcome`: values with the same outcome share
// the compile (TorchDynamo's guards on symbolic facts), where a CONST_EQ
// would recompile for each value.
enum class NumberOp { add, subtract, multiply, true_divide, floor_divide, remainder, power, negate, call };
struct NumberStep {
  NumberOp op;
  PyRef constant;  // the other operand; the callable for `call`; null for `negate`
  bool constant_first = false;
};
// A number computed from one dynamic input: the source's value taken
// through `steps`; `example` is its value when traced, `text` how it
// prints ("L['s'].last_epoch % 3").
struct NumberExpr {
  SourcePtr source;
  std::vector<NumberStep> steps;
  PyRef example;
  std::string text;
};
struct NumberFact {
  std::vector<NumberStep> steps;
  int compare_op = 0;
  PyRef other;
  bool number_right = false;
  bool outcome = false;
  std::string text;  // "L['s'].last_epoch % 3 != 0"
};
// The value `steps` make of `v` (a new reference), or null with the error
// cleared (an interruption is kept for the caller).
PyRef apply_number_steps(PyObject* v, const std::vector<NumberStep>& steps);
// The comparison's outcome on `number`: 1, 0, or -1 with the error cleared
// (as apply_number_steps).
int number_fact_outcome(const NumberFact& fact, PyObject* number);

struct Guard {
  GuardKind kind;
  SourcePtr source;      // null for global-state guards
  PyRef expected;    // id/type/const/length (the type)/dict_keys (tuple of keys)
  graph::TensorMeta tensor;
  uint64_t dispatch_keys = 0;
  int64_t length = 0;
  bool flag = false;
  bool no_module_hooks = false;  // id_match / module_match of an nn.Module: and module_hooks_empty (as NO_MODULE_HOOKS)
  // module_match: names (interned str) absent from a table at trace time,
  // so each name the trace read resolves as it did (a method of the class,
  // a parameter rather than a buffer).
  std::vector<std::pair<ModuleTable, PyRef>> absent;
  c10::ScalarType dtype = c10::ScalarType::Float;
  SourcePtr other;       // same_object: the first source of the object
  // no_aliasing: the graph's tensor inputs and their storage ids at trace
  // time (equal ids: they shared memory then, and may now).
  std::vector<SourcePtr> sources;
  std::vector<int64_t> storage_ids;
  std::vector<bool> dynamic_dims;  // tensor_match: per dim, any size >= 2 (empty: none)
  std::shared_ptr<SizeFacts> size_facts;  // size_facts
  std::shared_ptr<const NumberFact> number_fact;  // number_fact

  std::string to_string() const;
};

// What a DYNAMIC_INT guard accepts: an exact int (not bool) in
// [-2**31, 2**31), so that sums and products of two such ints stay exact
// in the graph's int64 arithmetic.
bool fits_dynamic_int(PyObject* v);
// An automatic dynamic number: an int as fits_dynamic_int, or (`is_float`) an exact float.
bool fits_dynamic_number(PyObject* v, bool is_float);

// What a NO_MODULE_HOOKS guard accepts: an object whose _forward_pre_hooks,
// _forward_hooks and _backward_hooks (nn.Module's hook tables) all have
// length 0. False when one cannot be read (its error cleared, unless an
// interruption). One guard per module called, read once: registering a hook
// retraces.
bool module_hooks_empty(PyObject* module);

// What a MODULE_MATCH guard's `absent` list asks of a module: none of the
// names is in its table. False when a table cannot be read.
bool module_names_absent(PyObject* module, const std::vector<std::pair<ModuleTable, PyRef>>& absent);

// What eager's autograd makes of a differentiable in-place op on `t` in
// grad mode: nothing (no grad), a refusal (a leaf requiring grad, or a
// view of one), or history (a tensor computed with grad).
enum class GradState { no_grad, leaf, computed };
GradState grad_state(const at::Tensor& t);

class GuardSet {
 public:
  // Adds a guard unless an identical one (same kind and source) is there.
  void add(Guard guard);
  // The guard of this kind on `source` added so far, or null: a check can
  // be folded into it instead of reading the source again.
  Guard* find(GuardKind kind, const Source& source);
  const std::vector<Guard>& guards() const { return guards_; }
  // Every tensor_match guard checks exact sizes and strides again.
  void specialize_dynamic_dims() {
    for (Guard& g : guards_) g.dynamic_dims.clear();
  }
  // One guard per line, in the order added.
  std::string to_string() const;

 private:
  std::vector<Guard> guards_;
  std::unordered_map<std::string, size_t> keys_;  // "<kind> <source>" -> index in guards_: add() and find() in O(1)
};

}  // namespace tj::tracer
