// The InstructionTranslator: symbolic execution of one CPython 3.11 frame.
//
// It runs the frame's decoded bytecode (bytecode.h) over Values (values.h),
// starting from the frame's real arguments, globals and closure cells, and
// records every tensor operation as an ATen node in a graph::Graph. Every
// input value it reads is wrapped once, with the guards that make the trace
// valid (guards.h); `x.shape`, `x.dtype`, Python arithmetic on constants
// and branches on them are decided at trace time (specialization).
//
// The translator never raises: what it cannot handle ends the trace with an
// `Unsupported` value (the reason, the opcode or callable, and the user's
// file:line). Handlers are small and grouped by opcode family in
// translate_*.cpp; one table maps opcodes to them.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "support/py_errors.h"
#include "tracer/binary_ops.h"
#include "tracer/bytecode.h"
#include "tracer/guards.h"
#include "tracer/objects.h"
#include "tracer/sets_and_dicts.h"
#include "tracer/trace_api.h"
#include "tracer/trace_state.h"
#include "tracer/values.h"

namespace tj::tracer {

// Calls a real Python callable with the Python objects of constant values
// (trace-time folding). The result, or null with the call's error set.
PyRef call_with_constants(PyObject* fn, const std::vector<ValuePtr>& args,
                              const std::vector<std::pair<std::string, ValuePtr>>& kwargs);

// An instance of a class written in Python: made in the frame
// (`object_class` set) or read from an input (translate_objects.cpp).
bool is_user_object(const ValuePtr& v);

// Dict keys (dict_keys.cpp): an input tensor used as a key is an object
// value over the real tensor (identity-keyed), named "<tensor key>".
bool is_tensor_key(const ValuePtr& key);
// An nn.Module read from an input (ID_MATCH-guarded): a key by identity.
bool is_module_key(const ValuePtr& v);
// A class or plain function as a dict key, hashed by identity (input_wrapping.cpp).
bool is_identity_key(PyObject* k);
bool is_class_key(const ValuePtr& v);
// A set made in the frame: a constant value over a real (mutable) set, or
// a keyed set (translate_sets.cpp).
bool is_mutable_set(const ValuePtr& v);
// A set with tensors or modules in it: a dict value over an empty set.
bool is_keyed_set(const ValuePtr& v);
// A tensor value standing for a Python number from Tensor.item().
bool is_python_number(const ValuePtr& v);
// `tensor_value`: the input tensor value it keys (null: a key read from a dict input).
ValuePtr tensor_key_of(PyObject* tensor, const ValuePtr& tensor_value);  // tensor borrowed

// The value an attribute the frame deleted has in `attr_overrides`
// (translate_delattr.cpp); the marker object is borrowed, never freed.
PyObject* deleted_attr_marker();
bool is_deleted_attr(const ValuePtr& v);
// Why a call of torch's rnn code (torch/nn/utils/rnn.py, nn/modules/rnn.py)
// is not traced: packing, or an argument that is a PackedSequence (its
// sizes are data); none when it is (translate_inline.cpp).
std::optional<std::string> packed_sequence_refusal(const std::string& file, const std::string& qualname,
                                                   bool packed_argument);
std::optional<std::string> packed_sequence_refusal(const std::string& file, const std::string& qualname,
                                                   PyObject* const* args, int nargs);
// Whether `obj`'s own instance __dict__ holds `key` (attributes.cpp).
bool real_instance_has(PyObject* obj, PyObject* key);

class InstructionTranslator {
  friend class TraceContext;  // the narrow door of the families outside the class (trace_context.h)

 public:
  explicit InstructionTranslator(const FrameInputs& frame);
  // A translator for an inlined call, sharing `parent`'s graph and guards.
  InstructionTranslator(InstructionTranslator& parent, InlineFrame frame);
  TraceResult run();
  // Runs an inlined call to its RETURN_VALUE: the returned value, or null
  // with `failure()` set. A generator's yields are collected instead.
  ValuePtr run_inline();
  const std::optional<Unsupported>& failure() const { return failure_; }

  // --- used by the handler families ---
  using Handler = bool (InstructionTranslator::*)(const bc::Instruction&);

  // Ends the trace as unsupported; always returns false so handlers can
  // `return unsupported(...)`.
  bool unsupported(std::string reason);
  // When the pending Python error is an interruption (KeyboardInterrupt,
  // MemoryError; any error when `any_error`: what a signal handler raised),
  // keeps it for trace_frame to raise and abandons the trace: true then.
  bool keep_interruption(bool any_error = false);
  bool interrupted() const { return shared_->interrupted; }
  // Sets the kept interruption as the pending Python error again.
  void restore_interruption();
  // The trace used a tensor's sizes in Python (`what`: "x.shape", "len()",
  // ...): a value or decision that would differ for other sizes, so the
  // entry keeps every size exact (dynamic_shapes.cpp).
  void note_sizes_read(const char* what);
  bool failed() const { return failure_.has_value(); }

  // The sizes family (symbolic sizes, sizes as numbers, data-dependent
  // sizes) is free functions over a TraceContext: sizes.h.
  bool has_dynamic_inputs() const { return !shared_->dynamic_inputs.empty(); }

  void push(ValuePtr v) { stack_.push_back(std::move(v)); }
  ValuePtr pop();
  std::vector<ValuePtr> pop_n(size_t n);  // in stack order (deepest first)
  ValuePtr& peek(size_t depth = 0) { return stack_[stack_.size() - 1 - depth]; }

  // Wraps a real Python object read from `source` as a Value, adding guards.
  ValuePtr wrap_input(PyObject* obj, SourcePtr source);
  // Wraps a real object produced at trace time (no source, no guard).
  ValuePtr wrap_constant_result(PyRef obj);  // null: the folding failed (unsupported)

  graph::Graph& graph() { return *shared_->graph; }
  GuardSet& guards() { return shared_->guards; }
  int depth() const { return depth_; }
  // Inlines a call of Python code (a function, a method, a nested def, a
  // generator) with these argument values. See translate_inline.cpp.
  ValuePtr inline_function(PyObject* code, PyObject* globals, SourcePtr function_source,
                           const std::vector<ValuePtr>& closure, const std::vector<ValuePtr>& defaults,
                           const std::vector<std::pair<std::string, ValuePtr>>& kwdefaults, std::vector<ValuePtr> args,
                           std::vector<std::pair<std::string, ValuePtr>> kwargs, const std::string& name);
  // A call of a Python callable object (function, method, nn.Module, partial).
  ValuePtr call_python(const ValuePtr& fn, std::vector<ValuePtr> args,
                       std::vector<std::pair<std::string, ValuePtr>> kwargs);
  // Its cases (translate_inline.cpp): a functools.partial object; a Python function.
  ValuePtr call_partial_object(const ValuePtr& fn, std::vector<ValuePtr> args,
                               std::vector<std::pair<std::string, ValuePtr>> kwargs);
  ValuePtr call_python_function(const ValuePtr& fn, std::vector<ValuePtr> args,
                                std::vector<std::pair<std::string, ValuePtr>> kwargs);
  // A call of the nn.Module `mod`: its class's `forward` inlined between
  // the forward pre-hooks and forward hooks Module.__call__ runs (torch's
  // global ones first), every hook table guarded (translate_inline.cpp).
  ValuePtr call_module(const ValuePtr& mod, const ValuePtr& forward, std::vector<ValuePtr> args,
                       std::vector<std::pair<std::string, ValuePtr>> kwargs);
  // Appends the hooks of the table `owner.<name>` (read through
  // `owner_source`, guarded: an empty one by its length, else by its keys)
  // to `out`; false with unsupported set.
  bool read_module_hooks(PyObject* owner, const SourcePtr& owner_source, const char* name, std::vector<ValuePtr>* out);
  // Records that a pre-existing list/dict (a value with a source) changed.
  void record_container_mutation(const ValuePtr& container);
  // nn.Module inputs are guarded by MODULE_MATCH (input_wrapping.cpp): the
  // name `name` was absent from `table` of `module` when the trace resolved
  // it (a method found on the class, a member in a later table); a value
  // whose identity a result depends on (`is`, a key) joins DISTINCT_OBJECTS.
  void note_module_name_absent(const ValuePtr& module, ModuleTable table, PyObject* name);
  void note_identity_compared(const ValuePtr& a, const ValuePtr& b);
  void add_distinct_objects_guard();
  // A closure cell of a function rebuilt after the graph (output_planner.cpp).
  bool build_cell_output(const ValuePtr& cell, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                         std::unordered_map<graph::Node*, int>& output_index);
  // `.0` of a comprehension's frame: the range/list/tuple iterator its
  // caller made, as an iterator value (input_wrapping.cpp); null otherwise.
  ValuePtr wrap_comprehension_iterator(PyObject* obj, const SourcePtr& source);
  // A function defined in another function, guarded by its code, globals and
  // defaults' shape instead of its identity (input_wrapping.cpp).
  bool nested_function(PyObject* fn) const;
  // The value of cell `index` of the compiled frame's closure, one per cell
  // (translate_inline.cpp).
  ValuePtr frame_cell_value(int index, bool read);
  void guard_nested_function(PyObject* fn, const SourcePtr& source);
  // STORE_ATTR, DELETE_ATTR: the attribute-write family is free functions
  // over a TraceContext (attr_writes.h); super() and locals() are the
  // builtins' (builtins.h), nn.Module containers' items the objects' (objects.h).
  bool op_store_attr(const bc::Instruction&);
  bool op_delete_attr(const bc::Instruction&);
  bool op_store_global(const bc::Instruction&);
  bool op_import_name(const bc::Instruction&);
  bool op_import_from(const bc::Instruction&);
  const bc::Instruction* current() const { return current_; }
  void jump_to(const bc::Instruction* target);
  // The source location of the current instruction, for node metadata.
  graph::SourceLoc current_loc() const;

  // Truthiness of a value known at trace time; nullopt (and unsupported
  // set) when it depends on tensor data or on unknown objects.
  std::optional<bool> truthiness(const ValuePtr& v);
  // A branch on a one-element tensor whose other side only raises: traced
  // along the side that does not, the condition checked after the graph
  // (a `check` side effect; translate_checks.cpp). `handled`: taken; false
  // with the failure set.
  bool runtime_check_branch(const bc::Instruction& inst, const ValuePtr& cond, bool& handled);

  // Calls a value with arguments (CALL, CALL_FUNCTION_EX): dispatched by
  // its kind to one of the call_* below (translate_call.cpp).
  ValuePtr call_value(const ValuePtr& fn, std::vector<ValuePtr> args,
                      std::vector<std::pair<std::string, ValuePtr>> kwargs);
  ValuePtr call_callable(const ValuePtr& fn, std::vector<ValuePtr> args,
                         std::vector<std::pair<std::string, ValuePtr>> kwargs);
  // call_callable's steps (translate_call.cpp): each returns with
  // `handled` set when the callable is one it knows.
  ValuePtr call_functools_idiom(const ValuePtr& fn, std::vector<ValuePtr>& args,
                                std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled);
  ValuePtr call_c_callable(PyObject* f, std::vector<ValuePtr>& args,
                           std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled);
  ValuePtr call_constructor(const ValuePtr& fn, std::vector<ValuePtr>& args,
                            std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled);
  ValuePtr call_method_value(const ValuePtr& fn, std::vector<ValuePtr> args,
                             std::vector<std::pair<std::string, ValuePtr>> kwargs);
  ValuePtr call_module_slice(const ValuePtr& fn, std::vector<ValuePtr> args,
                             std::vector<std::pair<std::string, ValuePtr>> kwargs);
  ValuePtr call_partial(const ValuePtr& fn, std::vector<ValuePtr> args,
                        std::vector<std::pair<std::string, ValuePtr>> kwargs);
  // A call of a builtin function or type (len, isinstance, list, ...) is
  // the builtins family's call_builtin (builtins.h).
  // Calls of all/any, map/filter, ... are the iterables family's
  // call_iterable_function (translate_call.h).
  // The items iterating over `v` gives now (null + unsupported naming
  // `who` when they cannot be known at trace time); `consume` moves an
  // iterator value on by `n` items as a consumer of it would.
  std::optional<std::vector<ValuePtr>> iterable_items(const ValuePtr& v, const std::string& who);
  void consume(const ValuePtr& v, size_t n);
  // Whether a consumer may stop after the first `n` items of iterator `v`
  // (false, with the failure set, when `v` is a generator the tracer ran
  // further and whose later items changed values outside it).
  bool may_stop_after(const ValuePtr& v, size_t n, const std::string& who);
  // Writes to values outside the innermost running generator so far.
  size_t generator_effect_mark() const;
  // An attribute read on a value (LOAD_ATTR, LOAD_METHOD, getattr()) is
  // get_attr over a TraceContext (translate_call.h).

  // --- handler families (translate_*.cpp) ---
  bool op_nop(const bc::Instruction&);
  bool op_load_fast(const bc::Instruction&);
  bool op_store_fast(const bc::Instruction&);
  bool op_delete_fast(const bc::Instruction&);
  bool op_load_const(const bc::Instruction&);
  bool op_load_global(const bc::Instruction&);
  bool op_load_deref(const bc::Instruction&);
  bool op_store_deref(const bc::Instruction&);
  bool op_delete_deref(const bc::Instruction&);
  bool op_load_attr(const bc::Instruction&);
  bool op_load_method(const bc::Instruction&);
  bool op_push_null(const bc::Instruction&);
  bool op_pop_top(const bc::Instruction&);
  bool op_copy(const bc::Instruction&);
  bool op_swap(const bc::Instruction&);
  bool op_return_value(const bc::Instruction&);
  bool op_build_sequence(const bc::Instruction&);
  bool op_build_map(const bc::Instruction&);
  bool op_build_const_key_map(const bc::Instruction&);
  bool op_build_slice(const bc::Instruction&);
  bool op_build_string(const bc::Instruction&);
  bool op_list_append(const bc::Instruction&);
  bool op_list_extend(const bc::Instruction&);
  bool op_list_to_tuple(const bc::Instruction&);
  bool op_dict_update(const bc::Instruction&);
  bool op_map_add(const bc::Instruction&);
  bool op_unpack_sequence(const bc::Instruction&);
  bool op_unpack_ex(const bc::Instruction&);
  bool op_format_value(const bc::Instruction&);
  bool op_get_iter(const bc::Instruction&);
  bool op_for_iter(const bc::Instruction&);
  bool op_jump(const bc::Instruction&);
  bool op_pop_jump_if(const bc::Instruction&);
  bool op_jump_if_or_pop(const bc::Instruction&);
  bool op_kw_names(const bc::Instruction&);
  bool op_precall(const bc::Instruction&);
  bool op_call(const bc::Instruction&);
  bool op_call_function_ex(const bc::Instruction&);
  bool op_binary_op(const bc::Instruction&);
  bool op_compare_op(const bc::Instruction&);
  bool op_is_op(const bc::Instruction&);
  bool op_contains_op(const bc::Instruction&);
  bool op_unary(const bc::Instruction&);
  bool op_binary_subscr(const bc::Instruction&);
  bool op_store_subscr(const bc::Instruction&);
  bool op_delete_subscr(const bc::Instruction&);
  bool op_make_cell(const bc::Instruction&);
  bool op_load_closure(const bc::Instruction&);
  bool op_make_function(const bc::Instruction&);
  bool op_return_generator(const bc::Instruction&);
  bool op_yield_value(const bc::Instruction&);
  bool op_before_with(const bc::Instruction&);  // translate_with.cpp
  bool op_build_set(const bc::Instruction&);    // translate_sets.cpp
  bool op_set_add(const bc::Instruction&);
  bool op_set_update(const bc::Instruction&);
  // The set and dict families themselves are free functions over a
  // TraceContext (sets_and_dicts.h).
  // Calls of context managers the tracer models are call_context_manager
  // over a TraceContext (translate_call.h).
  // torch.seed()'s result: torch.initial_seed() read after the graph (the
  // seeds' call_torch_seed, translate_call.h), which holds while no later
  // reseed of the trace follows it.
  bool build_seed_output(const ValuePtr& v, OutputTemplate& out);
  bool entry_grad_enabled() const { return shared_->entry_grad_enabled; }
  // tracejit.config.capture_scalar_outputs for this trace (FrameInputs).
  bool capture_scalar_outputs() const { return shared_->capture_scalar_outputs; }
  // Whether Tensor.item()/.tolist() may be traced as numbers without
  // capture_scalar_outputs; counts the read (FrameInputs::speculate_scalar_reads).
  bool speculate_scalar_read() {
    if (!shared_->speculate_scalar_reads) return false;
    ++shared_->speculative_reads;
    return true;
  }
  int speculative_reads() const { return shared_->speculative_reads; }
  const AutocastState& autocast_state() const { return shared_->autocast; }

  // Whether the code being traced (this frame, maybe inlined) is in a file
  // whose path contains `part` ("/torch/optim/").
  bool in_file_under(const char* part) const;
  // torch.optim's code or a polyfill of it (tracejit/_polyfills.py), whose
  // arithmetic on numbers read from tensors cannot raise.
  bool in_optimizer_code() const;
  // The frame's code is torch's own Python (a file under /torch/), asked
  // once per translator: the trace budget's no-progress window skips it.
  bool in_torch_code() {
    if (in_torch_code_ < 0) in_torch_code_ = in_file_under("/torch/") ? 1 : 0;
    return in_torch_code_ == 1;
  }
  // The real tensor an input tensor value was read from (borrowed), or null.
  PyObject* input_tensor_object(const ValuePtr& v) const;


  // The backward family (`loss.backward()`, `torch.autograd.grad`) is free
  // functions over a TraceContext: backward.h. After the graph is finished,
  // `backward_escape()` names the root instruction to break at and why when
  // a tensor requiring grad outlives a traced backward (find_backward_escape;
  // trace_frame traces again with that break).
  const std::optional<std::pair<int, std::string>>& backward_escape() const { return backward_escape_; }

  // After a call of library code failed in the frame itself: the reason
  // starts with the user's spelling of the call (`opt.step()`), not with
  // the library's internals (translate_inline.cpp).
  void name_user_call(const ValuePtr& fn);

 private:
  std::optional<std::pair<int, std::string>> backward_escape_;
  // Runs handlers from ip_ until RETURN_VALUE or a failure (taking a
  // checkpoint before each instruction when `checkpoints`).
  void step_until_return(bool checkpoints);
  ValuePtr load_local(int index);
  // Every write of a local slot goes through here (journaled for undo);
  // `wrapped`: the slot no longer reads the frame's argument lazily.
  void set_local(int slot, ValuePtr value, bool wrapped = true);
  // The cell value of a free variable of the compiled frame (its closure's
  // real cell), made on first use; its content is read when `read`.
  ValuePtr frame_free_cell(int slot, bool read);
  ValuePtr wrap_tensor_input(PyObject* obj, const SourcePtr& source);
  // Which dims of an input tensor are traced dynamic (empty: none), and why.
  std::vector<bool> dynamic_dims_for(PyObject* obj, const graph::TensorMeta& t, const Source& source, std::string* why) const;
  // An int the runtime saw change value (FrameInputs::dynamic_ints) as a
  // graph input: a Python number (symbolic_numbers.cpp) fed by a 0-d int64
  // placeholder; null when the policy keeps it a constant.
  ValuePtr wrap_dynamic_int(PyObject* obj, const SourcePtr& source);
 public:
  // In-place op `node` (recorded, its metas inferred) in grad mode, a
  // tensor involved requiring grad: eager's autograd refuses it when its
  // target is an input that is a leaf, or a view of one, and the op is
  // differentiable, or a view the graph made by unbind/split/chunk or in
  // no-grad mode. Then false (unsupported set: a graph break runs the op as
  // it is); otherwise true, the trace relying on the inputs not being such
  // leaves (NOT_GRAD_LEAF guard).
  bool inplace_allowed_by_autograd(const graph::Node& node);
  // Writes of values requiring grad into tensors that did not are free
  // functions over a TraceContext (grad_writes.h).
  // A use of these values that needs the value of a dynamic int one of them
  // comes from (a comparison, a tensor op, a call): unsupported, with the
  // int's sources noted in TraceResult::needed_ints; false when none does.
  bool refuse_dynamic_ints(const std::vector<ValuePtr>& values, const std::string& what);
 private:
  ValuePtr wrap_input_uncached(PyObject* obj, SourcePtr source);
  // Its cases (input_wrapping.cpp): dicts (OrderedDict, defaultdict); callables.
  ValuePtr wrap_dict_input(PyObject* obj, const SourcePtr& source, bool ordered_dict, bool default_dict);
  ValuePtr wrap_callable_input(PyObject* obj, const SourcePtr& source);
  ValuePtr wrap_bound_container_method(PyObject* obj, const SourcePtr& source);
  ValuePtr wrap_sequence_input(PyObject* obj, const SourcePtr& source);
  bool build_output(const ValuePtr& value, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                    std::unordered_map<graph::Node*, int>& output_index);
  // build_output's cases (output_planner.cpp): a tensor; a function made in
  // the frame; the other kinds (views, iterators, containers, constants).
  bool build_tensor_output(const ValuePtr& value, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                           std::unordered_map<graph::Node*, int>& output_index);
  bool build_function_output(const ValuePtr& value, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                             std::unordered_map<graph::Node*, int>& output_index);
  bool build_value_output(const ValuePtr& value, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                          std::unordered_map<graph::Node*, int>& output_index);
  // An object made in the frame, rebuilt after the graph (translate_objects.cpp).
  bool build_fresh_object_output(const ValuePtr& value, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                                 std::unordered_map<graph::Node*, int>& output_index);
  std::vector<const Value*> objects_being_built_;
  // A number from Tensor.item(): a Python number again after the graph (symbolic_numbers.cpp).
  bool build_number_output(const ValuePtr& value, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                           std::unordered_map<graph::Node*, int>& output_index);
  // An OrderedDict/defaultdict made in the frame, rebuilt as its type (dict_keys.cpp).
  bool build_typed_dict_output(const ValuePtr& value, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                               std::unordered_map<graph::Node*, int>& output_index);  // rebuilds in progress (a cycle cannot be rebuilt)
  std::unordered_map<const Value*, int> output_memo_;
  std::vector<ValuePtr> output_memo_alive_;  // keeps memo keys alive (no address reuse)
  // The state before an instruction, to break the graph at it.
  // The locals are not copied: locals_journal_ holds each slot's value and
  // wrapped flag before every write since the checkpoint (set_local).
  struct Checkpoint {
    size_t ip = 0;
    std::vector<ValuePtr> stack;
    size_t nodes = 0;
    size_t side_effects = 0;
    size_t size_facts = 0;
    std::vector<std::pair<std::string, ValuePtr>> global_stores;
    bool grad_enabled = true;
    AutocastState autocast;
    std::vector<std::pair<ValuePtr, AutocastState>> autocast_blocks;
    size_t autocast_calls = 0;
    TraceShared::InferenceBlock inference;
  };
  void take_checkpoint();
  struct LocalUndo {
    int slot;
    ValuePtr value;
    bool wrapped;
  };
  std::vector<LocalUndo> locals_journal_;
  bool journals_locals_ = false;  // the root translator only (inlined frames never roll back)
  // Counts one traced instruction against the trace budgets; false (with
  // the failure set) when the trace must stop (trace_budget.cpp).
  bool within_trace_budget();
  // Turns the current failure into a graph break at the checkpoint, or
  // returns false when the frame must run unchanged instead.
  bool plan_graph_break(TraceResult& result);
  // Its steps (break_planner.cpp): the undo back to the checkpoint (false
  // when a node to drop is still used); the locals and cells restored.
  bool roll_back_to_checkpoint();
  void plan_restored_slots(GraphBreak& plan, const std::function<bool(int)>& is_cell_or_free);
  // The graph's outputs a graph break restores, as one tuple: the plan's
  // restored locals and cells, then the non-NULL stack values
  // (break_planner.cpp).
  ValuePtr break_restore_values(const GraphBreak& plan);
  // Completes `result` after the trace (output_planner.cpp): the side
  // effects' and the returned value's templates, the graph's output node,
  // the final guards, and the graph, inputs and guards moved in.
  void finish_result(const ValuePtr& returned, TraceResult& result);
  bool local_bound(int slot) const;
  // NO_ALIASING over the tensor inputs of a graph that writes its inputs.
  void add_no_aliasing_guard();

 public:
  // Call before mutating a value in place (list/dict items, attributes,
  // cell contents, iterator positions): a graph break undoes it.
  void journal(const ValuePtr& v) {
    for (auto& run : shared_->generator_runs)
      if (v->birth < run.birth && !v->is_hidden_iterator()) ++run.outside_writes;
    if (!shared_->journaled.insert(v.get()).second) return;
    // An iterator only ever moves: keep its position, not a copy of its items.
    if (v->kind == ValueKind::iterator)
      shared_->position_journal.emplace_back(v, v->position);
    else
      shared_->journal.emplace_back(v, *v);
  }

 private:

  Checkpoint checkpoint_;
  bool breakable_ = true;
  int wrap_depth_ = 0;  // false for failures no break can help (decode, runaway loops)

  FrameInputs frame_;
  std::shared_ptr<const bc::DecodedCode> code_;  // shared_->decoded's
  // Sets code_ to the frame's decoded code, decoding it once per trace
  // (an inlined function called again reuses it); false + the failure set.
  bool load_code();
  std::shared_ptr<TraceShared> shared_;
  bool inlined_ = false;
  InstructionTranslator* parent_ = nullptr;  // the caller of an inlined call
  int depth_ = 0;
  SourcePtr globals_source_;
  bool unguarded_globals_ = false;
  int8_t in_torch_code_ = -1;  // in_torch_code()'s answer; -1: not asked
  std::vector<ValuePtr> yielded_;
  std::vector<size_t> yield_marks_;
  std::vector<ValuePtr> stack_;
  std::vector<ValuePtr> locals_;        // per localsplus slot; null: unbound
  std::vector<bool> arg_wrapped_;       // argument slots are wrapped on first read
  std::vector<std::string> kw_names_;
  size_t ip_ = 0;
  const bc::Instruction* current_ = nullptr;
  bool jumped_ = false;
  std::optional<Unsupported> failure_;
  ValuePtr return_value_;
  int nargs_ = 0;
};

}  // namespace tj::tracer
