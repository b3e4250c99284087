// The state one trace shares: what the frame's translator and the
// translators of the calls it inlines have in common (TraceShared: one
// graph, one guard list, one list of inputs, the undo journal, the budgets,
// the dynamic-shape facts), how an inlined call's frame reads its globals
// and free variables (InlineFrame), and the CPU autocast state the traced
// code runs under. Owned by the root InstructionTranslator (translator.h).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "support/py_errors.h"
#include "tracer/bytecode.h"
#include "tracer/guards.h"
#include "tracer/trace_api.h"
#include "tracer/values.h"

namespace tj::tracer {

// CPU autocast as the traced code sees it: casts are inserted into the
// graph for the ops it affects (torch_ops.cpp, autocast_casts).
struct AutocastState {
  bool enabled = false;
  c10::ScalarType dtype = c10::ScalarType::BFloat16;
  bool operator==(const AutocastState&) const = default;
};

// The real CPU autocast state (torch.is_autocast_cpu_enabled(),
// torch.get_autocast_cpu_dtype()).
AutocastState real_autocast_state();

// What the frame's translator and the translators of the calls it
// inlines share: one graph, one guard list, one list of inputs.
struct TraceShared {
  // Each code object the trace runs (the frame's, inlined calls'), decoded once.
  std::unordered_map<PyCodeObject*, std::shared_ptr<const bc::DecodedCode>> decoded;
  std::vector<SideEffect> side_effects;
  std::vector<std::pair<std::string, ValuePtr>> global_stores;  // the root module's globals written so far
  std::unique_ptr<graph::Graph> graph = std::make_unique<graph::Graph>();
  GuardSet guards;
  std::vector<SourcePtr> input_sources;
  std::unordered_map<graph::Node*, int> placeholder_index;
  std::vector<std::pair<const void*, int64_t>> input_storage_ids;  // storage identity -> alias id
  std::vector<std::pair<PyObject*, ValuePtr>> tensor_inputs;       // object (borrowed, alive in the frame) -> value
  std::unordered_map<std::string, ValuePtr> wrapped;              // source text -> the value read from it
  // Mutable non-tensor inputs (objects, classes, functions, modules, lists,
  // dicts) by identity: one object reached through two sources is one value
  // (its writes seen through both), guarded to stay one object.
  std::unordered_map<PyObject*, ValuePtr> input_objects;
  // Set when the frame exposes itself (sys._getframe(), locals() of a
  // resumed frame...): no graph break can keep that faithful, so the frame
  // runs unchanged.
  bool run_unchanged = false;
  // Values as they were before each mutation since the last checkpoint
  // (undone, newest first, when the graph breaks at that checkpoint).
  std::vector<std::pair<ValuePtr, Value>> journal;
  // In-place nodes that wrote values requiring grad in grad mode, with their
  // names (a node a graph break undid is no longer found by its name):
  // the tensors of their view families require grad (grad_writes.cpp).
  std::vector<std::pair<const graph::Node*, std::string>> grad_writes;
  PyObject* root_globals = nullptr;  // borrowed: what G[...] sources read
  // The compiled frame's closure (borrowed) and its cells' values by cell
  // object: a function passed in that closes over one of them (a closure
  // handed to a resume function) shares the frame's cell value, so writes
  // on either side are seen by both (frame_free_cell, call_python).
  PyObject* root_closure = nullptr;
  PyCodeObject* root_code = nullptr;
  std::unordered_map<PyObject*, ValuePtr> frame_cells;
  // Grad mode when the frame was entered (guarded). While tracing, the real
  // grad mode is the traced code's (with torch.no_grad(): ... switches it;
  // translate_with.cpp); nodes made under another mode are tagged with it.
  bool entry_grad_enabled = true;
  // FrameInputs::capture_scalar_outputs of the root frame.
  bool capture_scalar_outputs = false;
  // FrameInputs::speculate_scalar_reads, and how many reads were so traced.
  bool speculate_scalar_reads = true;
  int speculative_reads = 0;
  // FrameInputs::capture_dynamic_output_shape_ops of the root frame, and
  // how many data-dependent ops the graph got (none: no size is data-dependent).
  bool capture_dynamic_output_shape_ops = true;
  int unbacked_ops = 0;
  // CPU autocast (translate_with.cpp): the state when the frame was entered
  // (guarded), the state the traced code is in now, the `torch.autocast`
  // blocks entered in the frame and still open (innermost last, each with
  // the state it restores), and the real __enter__/__exit__ calls the
  // runtime replays after the graph (a block left open at a graph break is
  // entered for real; one entered before the frame, by an earlier graph, is
  // left for real).
  AutocastState entry_autocast;
  AutocastState autocast;
  std::vector<std::pair<ValuePtr, AutocastState>> autocast_blocks;
  std::vector<std::pair<ValuePtr, bool>> autocast_calls;  // (manager, true: __enter__ / false: __exit__)
  // torch.inference_mode (translate_with.cpp): the block entered in this
  // graph (its private manager, a constant; null: none), whether the trace
  // has left it, and the grad mode its exit restores. The whole graph runs
  // in inference mode (an `inference_mode` side effect), so tensor work
  // after the block breaks the graph.
  struct InferenceBlock {
    ValuePtr manager;
    bool closed = false;
    bool prev_grad = true;
  };
  InferenceBlock inference;
  // Trace budgets (trace_budget.cpp): instructions traced so far, the frame's
  // and its inlined calls'; `abandoned`: no graph break can help, the frame
  // runs as it is; `no_tensor_work`: abandoned before any tensor was seen.
  int traced_instructions = 0;
  int last_tensor_work = 0;      // traced_instructions when the graph or the guards last grew
  size_t graph_size_seen = 0;
  size_t guards_seen = 0;        // a new input read (a submodule, a parameter) is progress too
  size_t tensor_reads = 0;       // input tensors read again (wrap_input's cache): progress as well
  size_t tensor_reads_seen = 0;
  bool abandoned = false;
  bool no_tensor_work = false;
  // A KeyboardInterrupt (or MemoryError, or what a Python signal handler
  // raised) met during the trace: taken out of the way of the code that
  // clears errors, the trace abandoned, and handed back by trace_frame
  // (TraceResult::interrupted) so that the frame's call raises it.
  bool interrupted = false;
  FetchedError interruption;
  // Values journaled since the last checkpoint: only the first copy is
  // needed to undo (a list appended to in a loop is copied once, not per append).
  std::unordered_set<const Value*> journaled;
  std::vector<std::pair<ValuePtr, size_t>> position_journal;  // iterators: position before
  // Generators being run by the inliner (innermost last): when each
  // started (a Value birth stamp) and how many writes it has made to
  // values older than itself (see Value::effect_marks).
  struct GeneratorRun {
    uint64_t birth = 0;
    size_t outside_writes = 0;
  };
  std::vector<GeneratorRun> generator_runs;
  // A dict lookup told two input tensors apart by identity (dict_keys.cpp):
  // the graph needs them to stay distinct objects (NO_ALIASING guard).
  bool tensor_identity_matters = false;
  // Input objects (modules, plain objects) whose identity the trace compared
  // and found distinct (`a is b`, a module as a key): DISTINCT_OBJECTS, as
  // MODULE_MATCH does not pin a module's identity (input_wrapping.cpp).
  std::vector<ValuePtr> identity_compared;
  // Dynamic shapes (dynamic_shapes.cpp): the inputs with dynamic dims, and
  // the first place the trace read a size into Python (then none stays dynamic).
  std::vector<DynamicInput> dynamic_inputs;
  std::optional<Unsupported> sizes_read;
  std::vector<int> int_inputs;  // placeholders fed from Python ints (wrap_dynamic_int)
  // The int inputs whose values the trace needed (refuse_dynamic_ints): the
  // runtime makes them constants and traces again.
  std::vector<std::string> needed_ints;
  // Symbolic sizes (symbolic_sizes.cpp): the facts the trace relied on
  // (a size node and its value), the size nodes made per (tensor, dim),
  // and per node whether its sizes may vary (it depends on a dynamic input).
  std::vector<std::pair<graph::Node*, int64_t>> size_facts;
  std::map<std::pair<const graph::Node*, int64_t>, graph::Node*> size_nodes;
  std::unordered_map<const graph::Node*, bool> sizes_vary;
  // Sizes used as numbers (size_numbers.cpp): each a 0-d int64 placeholder
  // (its input index) the runtime computes from the input sizes as the
  // size node says; by size node, the number value made for it.
  bool sizes_as_numbers = true;
  std::vector<std::pair<int, graph::Node*>> size_inputs;
  std::unordered_map<const graph::Node*, ValuePtr> size_number_of;
  // Sizes specialized (`size == value` facts from specialize()): the fact's
  // index, and what and why for logs and explain; `specialize_why` is the
  // reason a caller gives for the specializations it makes (else the
  // instruction's kind says it).
  std::vector<std::pair<size_t, Unsupported>> specializations;
  std::string specialize_why;
  // Traced backwards (translate_backward.cpp): the nodes their autograd
  // graphs freed, and the root frame's instruction of the first one.
  std::unordered_set<const graph::Node*> backwarded;
  int backward_root_ip = -1;
  // backward(retain_graph=True): the nodes it kept, its autograd_grad node
  // (in-place writes after the first one are checked by a later backward
  // through them), and the `.grad` add_ nodes of every traced backward.
  std::unordered_set<const graph::Node*> retained;
  const graph::Node* first_retaining = nullptr;
  std::unordered_set<const graph::Node*> grad_accumulations;
};

// How an inlined call's frame reads its globals and free variables.
struct InlineFrame {
  PyCodeObject* code = nullptr;      // borrowed
  PyObject* globals = nullptr;       // borrowed
  SourcePtr globals_source;          // null: the root frame's globals (G[...]) or torch's own (unguarded)
  bool unguarded_globals = false;    // torch's own code: globals are taken as fixed
  std::vector<ValuePtr> locals;      // bound arguments, by localsplus slot
  int depth = 1;
};

}  // namespace tj::tracer
