// TraceContext: the narrow door through which a family of handlers kept
// outside InstructionTranslator works on a trace: sets and dicts
// (sets_and_dicts.h); the methods of lists, dicts and tuples
// (translate_containers.cpp); the iterable functions
// (translate_iterables.cpp); autocast (autocast.h); imports (imports.h);
// autograd.Function (autograd_function_ctx.h); the sizes family (sizes.h);
// the builtins (builtins.h); backward and autograd.grad (backward.h);
// attribute reads (get_attr) and writes (attr_writes.h). It offers only what those
// families need: reporting a break, journaling a value before an in-place
// change (so a graph break undoes it), recording a change of an input
// container, reading the items of an iterable, calling a value,
// specializing sizes, the identity facts of dict keys (guards on which
// tensor or module a key is), guards and side effects, the autocast state,
// the graph and the effect counts a sandboxed region compares. A family
// function takes a TraceContext by value; a handler passes its translator
// (`*this`) and the conversion makes the context, so the family cannot
// reach the translator's run loop, stack, locals or private state.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracer/binary_ops.h"
#include "tracer/bytecode.h"
#include "tracer/guards.h"
#include "tracer/trace_api.h"
#include "tracer/trace_state.h"
#include "tracer/values.h"

namespace tj::tracer {

class InstructionTranslator;

class TraceContext {
 public:
  using Kwargs = std::vector<std::pair<std::string, ValuePtr>>;

  TraceContext(InstructionTranslator& t) : t_(t) {}  // NOLINT: implicit, see above

  // Ends the trace as unsupported (a graph break at the current
  // instruction); always false. `failed()`: a failure is set.
  bool unsupported(std::string reason);
  bool failed() const;

  // Call before changing a value in place; record_container_mutation when
  // the value is a container the frame was given.
  void journal(const ValuePtr& v);
  void record_container_mutation(const ValuePtr& container);

  // The items iterating over `v` gives now (nullopt + unsupported naming
  // `who`); an iterator value moved on by `n` items, as a consumer moves
  // it; whether a consumer may stop after `n` items of `v` (false with the
  // failure set); the truth of a value known at trace time (nullopt +
  // unsupported when it depends on data).
  std::optional<std::vector<ValuePtr>> iterable_items(const ValuePtr& v, const std::string& who);
  void consume(const ValuePtr& v, size_t n);
  bool may_stop_after(const ValuePtr& v, size_t n, const std::string& who);
  std::optional<bool> truthiness(const ValuePtr& v);
  // A call of a value, or of the builtin `fn` (a function of `builtins`
  // or a builtin type), as the CALL instruction makes it.
  ValuePtr call_value(const ValuePtr& fn, std::vector<ValuePtr> args, Kwargs kwargs);
  ValuePtr call_builtin(PyObject* fn, std::vector<ValuePtr> args, Kwargs kwargs);

  // The sizes family (sizes.h): the trace's shared state (its size nodes,
  // size facts, dynamic inputs, placeholders and their sources); the
  // instruction being traced (null outside the run loop); the sizes of the
  // inputs on every rank (compiler collective; null without one); a read
  // of sizes that keeps every size exact (note_sizes_read); BINARY_OP and
  // a math function of Python numbers (torch_ops.h's number_binary_op and
  // number_function).
  TraceShared& shared();
  const bc::Instruction* current_instruction() const;
  // The instruction after the current one in its code (null at the end).
  const bc::Instruction* next_instruction() const;
  const std::unordered_map<std::string, std::vector<std::vector<int64_t>>>* rank_sizes() const;
  void note_sizes_read(const char* what);
  ValuePtr number_binary_op(bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs);
  ValuePtr number_function(PyObject* fn, const std::vector<ValuePtr>& args, bool& handled);

  // Sizes: whether `v` is or holds one; `v` with its sizes as guarded
  // numbers; `lhs == rhs` (`op`: Py_EQ, ...) of sizes as a fact (null
  // when neither is a size); the product of ints and sizes (null for others).
  static bool shows_sizes(const ValuePtr& v);
  ValuePtr specialize(const ValuePtr& v);
  ValuePtr compare_sizes(int op, const ValuePtr& lhs, const ValuePtr& rhs);
  ValuePtr size_product(const std::vector<ValuePtr>& sizes);

  // Identity of keys: the real tensor an input tensor value was read from
  // (borrowed, or null); two modules compared by identity (DISTINCT_OBJECTS);
  // the input tensor `tensor` must stay the object `obj` (ID_MATCH); which
  // input tensors are one object matters (NO_ALIASING).
  PyObject* input_tensor_object(const ValuePtr& v) const;
  void note_identity_compared(const ValuePtr& a, const ValuePtr& b);
  void guard_identity(const ValuePtr& tensor, PyObject* obj);
  void note_tensor_identity_matters();

  // The frame's globals (borrowed); a real object read from `source`
  // wrapped as an input (guards added; null + failure set).
  PyObject* frame_globals() const;
  ValuePtr wrap_input(PyObject* obj, SourcePtr source);

  // The trace's graph; the source location of the current instruction;
  // `obj.name` as LOAD_ATTR reads it; an ATen op called as torch_ops.h's
  // call_aten; prefixes the current failure's reason (unless it has it).
  graph::Graph& graph();
  graph::SourceLoc current_loc() const;
  ValuePtr get_attr(const ValuePtr& obj, const std::string& name);
  ValuePtr call_aten(const std::string& name, std::vector<ValuePtr> args, Kwargs kwargs = {});
  void prefix_failure(const std::string& prefix);

  // Sandboxes (autograd.Function's forward and backward): how many effects
  // the trace has recorded so far, to tell whether a region added any; the
  // marks of the regions open (TraceShared::GeneratorRun); the grad mode
  // nodes are tagged against (frame entry's, switched for a backward);
  // size facts of nodes no longer in the graph forgotten (after outlining).
  struct EffectCounts {
    size_t side_effects = 0, global_stores = 0, autocast_calls = 0, size_facts = 0;
    bool same_effects(const EffectCounts& o) const {
      return side_effects == o.side_effects && global_stores == o.global_stores && autocast_calls == o.autocast_calls;
    }
  };
  EffectCounts effect_counts() const;
  std::vector<TraceShared::GeneratorRun>& generator_runs();
  bool& entry_grad_enabled();
  void forget_sizes_outside_graph();

  // A guard of the trace; a side effect replayed after the graph.
  void add_guard(Guard guard);
  void add_side_effect(SideEffect effect);

  // Autocast (autocast.h): the state the traced code is in; the blocks
  // entered in the trace, innermost last (manager, state before); the real
  // __enter__/__exit__ calls in program order (manager, true: __enter__).
  AutocastState& autocast_state();
  std::vector<std::pair<ValuePtr, AutocastState>>& autocast_blocks();
  std::vector<std::pair<ValuePtr, bool>>& autocast_calls();

  // The builtins (builtins.h): a real object made at trace time as a value
  // (null: unsupported); a name absent from a MODULE_MATCH-guarded module's
  // table; whether a guard of `kind` on `source` is in the trace; BINARY_OP
  // on tensors (torch_ops.h's tensor_binary_op).
  ValuePtr wrap_constant_result(PyRef obj);
  void note_module_name_absent(const ValuePtr& module, ModuleTable table, PyObject* name);
  bool has_guard(GuardKind kind, const Source& source);
  ValuePtr tensor_binary_op(bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs);

  // Backward (backward.h): a tensor's attribute as LOAD_ATTR reads it
  // (tensor_methods.cpp's tensor_attribute); the hooks of the table
  // `owner.<name>`, guarded (false + failure set); the index of the
  // instruction the root frame (not an inlined call) is at.
  ValuePtr tensor_attribute(const ValuePtr& tensor, const std::string& name);
  bool read_module_hooks(PyObject* owner, const SourcePtr& owner_source, const char* name, std::vector<ValuePtr>* out);
  size_t root_instruction_index() const;

  // The frame being traced (maybe an inlined call), for super() and
  // locals() (builtins.h): its code; its closure (borrowed, null without
  // one); local slot `slot` as the frame holds it now (null: unbound, or an
  // argument not read yet); the slot as LOAD_FAST reads it (an argument
  // wrapped on first read); free variable `slot` of the compiled frame as
  // its cell value, made on first use (null without failure in an inlined
  // call).
  PyCodeObject* frame_code() const;
  PyObject* frame_closure() const;
  ValuePtr frame_slot(int slot) const;
  ValuePtr load_local(int slot);
  ValuePtr compiled_frame_cell(int slot);

  // warnings.warn (translate_warnings.cpp): the frame `level` levels up the
  // inline stack (1: the one being traced): its current location and its
  // globals (borrowed); false when that is above the compiled frame. How
  // deep the frame being traced is inlined (0: the compiled frame).
  bool inline_caller(long level, graph::SourceLoc* loc, PyObject** globals) const;
  int inline_depth() const;

 private:
  InstructionTranslator& t_;
};

}  // namespace tj::tracer
