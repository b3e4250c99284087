// The contract between the tracer and the runtime: everything src/runtime
// calls in the tracer and the result types it gets back.
//  - What the frame hook hands the tracer (`FrameInputs`) and what a trace
//    gives back (`TraceResult`: the graph, its input sources, the template
//    the frame's return value is rebuilt from, the side effects to replay,
//    the guards, and either nothing unsupported, a reason the frame runs
//    unchanged, or a graph break with the plan of the transformed code).
//  - The entry points: trace_frame, the code objects the runtime installs
//    (make_transformed_code, make_break_code; codegen.h, resume.h), how it
//    tells resume functions apart (is_resume_code), which frames it never
//    traces (skip_frame_reason; skip_policy.h), and the tracer's settings.
//  - The bytecode toolkit's Python bindings for tests and tools
//    (register_bytecode_bindings; py_bytecode.cpp).
// The runtime includes this header, not the translator's.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "graph/sym_ints.h"
#include "support/expected.h"
#include "support/py_ref.h"
#include "tracer/guards.h"
#include "tracer/values.h"

namespace tj::tracer {

// What the frame hook saw (all borrowed).
struct FrameInputs {
  PyCodeObject* code = nullptr;
  PyObject* globals = nullptr;
  PyObject* builtins = nullptr;
  PyObject* closure = nullptr;             // the function's closure tuple, or null
  PyObject* const* localsplus = nullptr;   // the frame's argument slots (and NULLs)
  bool may_break = true;                   // false: a failure runs the frame unchanged
  // Dynamic shapes (dynamic_shapes.cpp): -1 automatic (dynamic=None), 0
  // always static, 1 every dim symbolic; `automatic`: per input source text,
  // the dims a size-only guard failure showed varying.
  int dynamic = -1;
  const std::unordered_map<std::string, std::vector<bool>>* automatic = nullptr;
  // Automatic dynamic ints (dynamic != 0): sources whose int value changed
  // between calls; such an int is a graph input (a 0-d int64 tensor made
  // at each call) instead of a guarded constant.
  const std::unordered_set<std::string>* dynamic_ints = nullptr;
  // The compiler collective's choice (runtime/compiler_collective.h): break
  // the graph before instruction `force_break_at` (an index into the
  // decoded code, a break's span_begin on another rank), giving this reason.
  int force_break_at = -1;
  std::string force_break_reason;
  // ... and every rank's input sizes (source text -> [rank][dim]): duck
  // sizing shares a symbol between two sizes only when they are equal on
  // every rank, so that the ranks' graphs stay alike.
  const std::unordered_map<std::string, std::vector<std::vector<int64_t>>>* rank_sizes = nullptr;
  // tracejit.config.capture_scalar_outputs (the runtime's RuntimeConfig):
  // Tensor.item() stays in the graph as a number (symbolic_numbers.cpp).
  bool capture_scalar_outputs = false;
  // Without capture_scalar_outputs, Tensor.item()/.tolist() are first
  // traced as numbers all the same (symbolic_numbers.cpp): a trace that
  // then stops anywhere is traced again with this false, breaking at the
  // first read (trace_frame), so that a number never crosses a break.
  bool speculate_scalar_reads = true;
  // tracejit.config.capture_dynamic_output_shape_ops: nonzero, x[mask],
  // unique, ... stay in the graph with data-dependent sizes
  // (graph/unbacked_sizes.h); false: the graph breaks at them.
  bool capture_dynamic_output_shape_ops = true;
  // A size meeting a tensor or a float (x.sum() / x.shape[0]) is a graph
  // input computed from the input sizes at each call (size_numbers.cpp);
  // false: it is specialized (the retry when such a trace stopped earlier).
  bool sizes_as_numbers = true;
};

// A graph input that is a size used as a number: a 0-d int64 tensor the
// compiled graph makes at each call from its tensor inputs' sizes (`expr`
// over input indices); the transformed code passes the input `expr` reads
// first in its place. `text` names it for logs, `where` is file:line.
struct SizeInput {
  int index = -1;
  graph::SizeExpr expr;
  int64_t value = 0;  // as traced
  std::string text;
  std::string where;
};

// One input's dim `dim` on every rank (FrameInputs::rank_sizes' [rank][dim]),
// -1 on a rank where the input has no such dim: two sizes may share a
// symbol only when these agree (the tracer's duck sizing; the runtime's
// check that this rank's own duck sizing holds on every rank).
inline std::vector<int64_t> size_on_every_rank(const std::vector<std::vector<int64_t>>& ranks, size_t dim) {
  std::vector<int64_t> out;
  out.reserve(ranks.size());
  for (const std::vector<int64_t>& sizes : ranks) out.push_back(dim < sizes.size() ? sizes[dim] : -1);
  return out;
}

// A tensor input with dimensions traced as dynamic: its guard accepts any
// size >= 2 there, strides following the sizes in the traced order.
struct DynamicInput {
  std::string source;
  std::vector<bool> dims;
  std::vector<int64_t> sizes;  // as traced
  std::string why;             // "automatic", "dynamic=True", "mark_dynamic"
};

struct Unsupported {
  std::string reason;
  std::string filename;
  int lineno = 0;
  std::string to_string() const { return filename + ":" + std::to_string(lineno) + ": " + reason; }
};

// How the frame's return value is rebuilt from the graph's outputs.
// Identity is kept: a list, dict or iterator that appears twice is built once
// (`memo` numbers it; a later occurrence is a `memo_ref`).
struct OutputTemplate {
  // dict_view: `items[0].<constant>()` (keys, values, items): a live view
  // of the rebuilt dict (the caller's own dict when it came in).
  // cell: a closure cell made during tracing: the frame's own cell passed
  // in (`index`: the input; a cell variable of the compiled frame, shared
  // with the frame and its resume functions) or a new one (`index` -1),
  // its content set to `items[0]` when there is one.
  enum class Kind { graph_output, input, constant, tuple, list, dict, attr, method, function, iterator, memo_ref, dict_view,
                    cell };
  Kind kind = Kind::constant;
  int index = -1;                       // graph_output: output index; input: input index; memo_ref: memo; cell: input
  int memo = -1;                        // list/dict/cell: its memo number
  PyRef constant;                   // constant: the value; attr: the attribute name; method: the function;
                                        // function: the code object (items: the defaults, then
                                        // `closure_cells` cells, then a dict of the keyword defaults);
                                        // tuple: a structseq type or null
  std::vector<OutputTemplate> items;    // tuple/list/dict/iterator values; attr/method: the object
  std::vector<PyRef> keys;          // dict keys; function: {globals}
  int closure_cells = 0;                // function: how many of `items` are its closure's cells
  bool has_kwdefaults = false;          // function: its last item is a dict of keyword defaults
};

// Where a frame breaks the graph (ARCHITECTURE.md decision 2): the graph
// traced so far is compiled; the transformed code restores the listed
// locals and the value stack from its outputs, runs the instructions
// [span_begin, span_end) in CPython, then calls one resume function per
// target, which continues the frame from there and is traced in turn.
struct ResumeTarget {
  int instruction = 0;            // index in the decoded instruction list
  int stack_depth = 0;            // values on the stack there
  std::vector<bool> stack_is_null;  // per slot: a NULL (re-pushed by the resume function, not passed)
  std::vector<bool> stack_is_iterator;  // per slot: a loop's iterator, passed as a list of what is left
  std::vector<int> live_locals;   // localsplus slots passed after the non-NULL stack values
};

struct GraphBreak {
  int span_begin = 0;
  int span_end = 0;                    // empty span: resume at span_begin itself
  int failing = 0;                     // the instruction that could not be traced
  std::vector<ResumeTarget> targets;   // fallthrough first, then the jump edge; none if the span ends the frame
  std::vector<int> restored_locals;    // slots set from the graph's outputs before the span
  std::vector<int> restored_cells;     // cell slots whose contents are set (STORE_DEREF) after them
  std::vector<bool> stack_is_null;     // per stack slot at span_begin: a NULL rather than a value
};

// A mutation of a Python object that existed before the frame, replayed
// (in program order) after the graph runs or before a graph break. Lists
// and dicts are replayed as their final contents; attributes and globals
// as their final values.
struct SideEffect {
  // set_grad_enabled: the traced code left grad mode changed (value: a
  // constant bool), e.g. a break inside `with torch.no_grad():`.
  // call_method: `value.name()` is called (a `torch.autocast` block's real
  // __enter__, or __exit__ with three Nones, around a graph break).
  // manual_seed: `torch.manual_seed(value)` (a constant int) called before
  // the graph draws any random number; the only kind replayed *before* the
  // graph runs, so that its random ops draw what eager's would.
  // seed: `torch.seed()` (a new random seed), replayed before the graph in
  // program order with the manual_seed ones.
  // warn: a `warnings.warn` call (value: a constant tuple of the message,
  // the category, then the filename, line, module name and globals of the
  // location it names, or None and the stacklevel counted from the frame's
  // caller), replayed through `warnings.warn_explicit` (or `warnings.warn`)
  // so that filters, the once-per-location registry and -W error act as in
  // eager.
  // del_attr: `del target.name` (an attribute the frame deleted).
  // inference_mode: the graph runs in inference mode (c10::InferenceMode),
  // as the `with torch.inference_mode():` block it began in
  // (translate_with.cpp); nothing is replayed after it.
  // check: (condition tensor, exception class, message, truth wanted): a
  // branch on tensor data whose other side raises (translate_checks.cpp),
  // tested after the graph; raises the class with the message otherwise.
  enum class Kind { set_attr, replace_list, replace_dict, set_global, set_grad_enabled, call_method, manual_seed, seed, warn,
                    del_attr, check, inference_mode };
  Kind kind;
  ValuePtr target;   // the object (a value with a source); null for set_global
  std::string name;  // attribute / global name
  ValuePtr value;    // set_attr / set_global
};

// A side effect as the runtime replays it: templates over the graph's
// outputs and inputs (see OutputTemplate).
struct SideEffectTemplate {
  SideEffect::Kind kind;
  OutputTemplate target;
  std::string name;
  OutputTemplate value;
};

struct TraceResult {
  std::unique_ptr<graph::Graph> graph;
  std::vector<SourcePtr> input_sources;  // one per placeholder, in order
  OutputTemplate output;
  std::vector<SideEffectTemplate> side_effects;  // replayed before `output` is built
  PyRef globals;                              // the frame's globals (for set_global)
  GuardSet guards;
  int op_count = 0;                      // call_function nodes
  int instructions = 0;                  // instructions traced (the frame's and its inlined calls')
  std::optional<Unsupported> unsupported;
  std::optional<GraphBreak> graph_break;  // set: `unsupported` is the reason of the break
  bool no_tensor_work = false;           // abandoned by the trace budget before any tensor work
  // A KeyboardInterrupt (Ctrl-C), MemoryError, or an error a Python signal
  // handler raised, met during the trace: nothing else is set, and the
  // error is left set for the frame's call to raise (as CPython would at
  // its next instruction). Nothing is wrong with the frame: it is traced
  // again at its next call.
  bool interrupted = false;
  // Inputs with dynamic dims (the entry serves every size they allow); or,
  // when there were some but the trace read a size into Python (a shape,
  // len(), a size-dependent decision), where: then every dim was
  // specialized and `dynamic` is empty.
  std::vector<DynamicInput> dynamic;
  std::optional<Unsupported> sizes_read;
  // The placeholders fed from Python ints (FrameInputs::dynamic_ints): the
  // caller passes the int, the compiled graph makes it a 0-d int64 tensor.
  std::vector<int> int_inputs;
  // Int inputs whose value the trace needed (it stopped there): to be
  // traced as constants.
  std::vector<std::string> needed_ints;
  // Tensor.item()/.tolist() reads traced as numbers speculatively
  // (FrameInputs::speculate_scalar_reads).
  int speculative_reads = 0;
  // Sizes used as numbers (SizeInput), by placeholder.
  std::vector<SizeInput> size_inputs;
  // Sizes the trace specialized (guarded by value), each "L['x'].size(0) ==
  // 5 specialized because ..." and where (the `dynamic` log, explain).
  std::vector<Unsupported> specializations;
};

// Traces one frame. Never raises; leaves no Python error set, except an
// interruption (TraceResult::interrupted).
TraceResult trace_frame(const FrameInputs& frame);

// The transformed code of a fully traced frame (codegen.h). `compiled` is
// borrowed (it becomes a constant of the new code). The result keeps the
// original signature; the runtime makes it positional.
Expected<PyRef> make_transformed_code(PyCodeObject* original, PyObject* compiled,
                                      const std::vector<SourcePtr>& inputs);

// The transformed code of a frame that breaks the graph (resume.h).
// `compiled` is borrowed. The result keeps the original signature; the
// runtime makes it positional. `next_resume_number` (the runtime's, one
// counter for the process) numbers the resume functions' qualified names
// (the <n> below) and is advanced by one per resume function.
Expected<PyRef> make_break_code(PyCodeObject* original, PyObject* compiled,
                                const std::vector<SourcePtr>& inputs, const GraphBreak& plan,
                                int& next_resume_number);

// A resume function's co_name is the function it continues (tracebacks
// name the user's function); its co_qualname is "<qualname>.__resume_at_
// <offset>_<n>", which is how the runtime tells resume functions apart.
inline constexpr const char* kResumeMarker = "__resume_at_";
bool is_resume_code(PyCodeObject* code);

// Why a frame of code from `file`, called from CPython (the root of a
// tracejit.compile, or a callee of a frame that ran uncompiled), is not
// traced on its own: the inline rule, and every torch file (torch's
// layers are traced only when inlined into a caller's graph). See
// skip_policy.h.
std::optional<std::string> skip_frame_reason(std::string_view file);

// A frame skipped by skip_frame_reason whose code the tracer would inline
// into a caller's graph (torch.optim, torch.nn.utils, ...): it ran
// uncompiled only because CPython called it (after a break), which
// explain reports. False for the standard library and torch internals.
bool is_inlined_torch_file(std::string_view file);

// Adds `_bc_decode`, `_bc_assemble` and the other bindings of decode() and
// assemble() (py_bytecode.cpp) to the `_tracejit` module; 0, or -1 with a
// Python error set.
int register_bytecode_bindings(PyObject* module);

}  // namespace tj::tracer
