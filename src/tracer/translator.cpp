// The translator's core: the opcode table and run loop, the value stack,
// the trace's entry (trace_frame) and its top-level flow (run). The opcode
// handlers live in translate_*.cpp, input wrapping in input_wrapping.cpp,
// graph-break planning in break_planner.cpp, the result's outputs and
// final guards in output_planner.cpp. See translator.h.
#include "tracer/py_str.h"
#include "tracer/translator.h"

#include <algorithm>
#include <array>
#include <cassert>

#include "graph/effects.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/sym_ints.h"
#include "tracer/backward.h"
#include "tracer/liveness.h"
#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"

namespace tj::tracer {

namespace {

using Handler = InstructionTranslator::Handler;

using O = bc::Opcode;

struct HandlerRow {
  bc::Opcode opcode;
  Handler handler;
};

// One row per supported opcode; anything else is unsupported.
const HandlerRow kHandlers[] = {
    {O::NOP, &InstructionTranslator::op_nop},
    {O::RESUME, &InstructionTranslator::op_nop},
    {O::MAKE_CELL, &InstructionTranslator::op_make_cell},
    {O::LOAD_CLOSURE, &InstructionTranslator::op_load_closure},
    {O::MAKE_FUNCTION, &InstructionTranslator::op_make_function},
    {O::RETURN_GENERATOR, &InstructionTranslator::op_return_generator},
    {O::YIELD_VALUE, &InstructionTranslator::op_yield_value},
    {O::COPY_FREE_VARS, &InstructionTranslator::op_nop},
    {O::PRECALL, &InstructionTranslator::op_precall},
    {O::LOAD_FAST, &InstructionTranslator::op_load_fast},
    {O::STORE_FAST, &InstructionTranslator::op_store_fast},
    {O::DELETE_FAST, &InstructionTranslator::op_delete_fast},
    {O::LOAD_CONST, &InstructionTranslator::op_load_const},
    {O::LOAD_GLOBAL, &InstructionTranslator::op_load_global},
    {O::LOAD_DEREF, &InstructionTranslator::op_load_deref},
    {O::LOAD_CLASSDEREF, &InstructionTranslator::op_load_deref},
    {O::STORE_DEREF, &InstructionTranslator::op_store_deref},
    {O::DELETE_DEREF, &InstructionTranslator::op_delete_deref},
    {O::LOAD_ATTR, &InstructionTranslator::op_load_attr},
    {O::LOAD_METHOD, &InstructionTranslator::op_load_method},
    {O::PUSH_NULL, &InstructionTranslator::op_push_null},
    {O::POP_TOP, &InstructionTranslator::op_pop_top},
    {O::COPY, &InstructionTranslator::op_copy},
    {O::SWAP, &InstructionTranslator::op_swap},
    {O::RETURN_VALUE, &InstructionTranslator::op_return_value},
    {O::BUILD_TUPLE, &InstructionTranslator::op_build_sequence},
    {O::BUILD_LIST, &InstructionTranslator::op_build_sequence},
    {O::BUILD_MAP, &InstructionTranslator::op_build_map},
    {O::BUILD_CONST_KEY_MAP, &InstructionTranslator::op_build_const_key_map},
    {O::BUILD_SLICE, &InstructionTranslator::op_build_slice},
    {O::BUILD_STRING, &InstructionTranslator::op_build_string},
    {O::LIST_APPEND, &InstructionTranslator::op_list_append},
    {O::BUILD_SET, &InstructionTranslator::op_build_set},
    {O::SET_ADD, &InstructionTranslator::op_set_add},
    {O::SET_UPDATE, &InstructionTranslator::op_set_update},
    {O::LIST_EXTEND, &InstructionTranslator::op_list_extend},
    {O::LIST_TO_TUPLE, &InstructionTranslator::op_list_to_tuple},
    {O::DICT_UPDATE, &InstructionTranslator::op_dict_update},
    {O::DICT_MERGE, &InstructionTranslator::op_dict_update},
    {O::MAP_ADD, &InstructionTranslator::op_map_add},
    {O::UNPACK_SEQUENCE, &InstructionTranslator::op_unpack_sequence},
    {O::UNPACK_EX, &InstructionTranslator::op_unpack_ex},
    {O::FORMAT_VALUE, &InstructionTranslator::op_format_value},
    {O::GET_ITER, &InstructionTranslator::op_get_iter},
    {O::FOR_ITER, &InstructionTranslator::op_for_iter},
    {O::JUMP_FORWARD, &InstructionTranslator::op_jump},
    {O::JUMP_BACKWARD, &InstructionTranslator::op_jump},
    {O::JUMP_BACKWARD_NO_INTERRUPT, &InstructionTranslator::op_jump},
    {O::POP_JUMP_FORWARD_IF_TRUE, &InstructionTranslator::op_pop_jump_if},
    {O::POP_JUMP_FORWARD_IF_FALSE, &InstructionTranslator::op_pop_jump_if},
    {O::POP_JUMP_BACKWARD_IF_TRUE, &InstructionTranslator::op_pop_jump_if},
    {O::POP_JUMP_BACKWARD_IF_FALSE, &InstructionTranslator::op_pop_jump_if},
    {O::POP_JUMP_FORWARD_IF_NONE, &InstructionTranslator::op_pop_jump_if},
    {O::POP_JUMP_FORWARD_IF_NOT_NONE, &InstructionTranslator::op_pop_jump_if},
    {O::POP_JUMP_BACKWARD_IF_NONE, &InstructionTranslator::op_pop_jump_if},
    {O::POP_JUMP_BACKWARD_IF_NOT_NONE, &InstructionTranslator::op_pop_jump_if},
    {O::JUMP_IF_TRUE_OR_POP, &InstructionTranslator::op_jump_if_or_pop},
    {O::JUMP_IF_FALSE_OR_POP, &InstructionTranslator::op_jump_if_or_pop},
    {O::KW_NAMES, &InstructionTranslator::op_kw_names},
    {O::CALL, &InstructionTranslator::op_call},
    {O::CALL_FUNCTION_EX, &InstructionTranslator::op_call_function_ex},
    {O::BINARY_OP, &InstructionTranslator::op_binary_op},
    {O::COMPARE_OP, &InstructionTranslator::op_compare_op},
    {O::IS_OP, &InstructionTranslator::op_is_op},
    {O::CONTAINS_OP, &InstructionTranslator::op_contains_op},
    {O::UNARY_NEGATIVE, &InstructionTranslator::op_unary},
    {O::UNARY_POSITIVE, &InstructionTranslator::op_unary},
    {O::UNARY_INVERT, &InstructionTranslator::op_unary},
    {O::UNARY_NOT, &InstructionTranslator::op_unary},
    {O::BINARY_SUBSCR, &InstructionTranslator::op_binary_subscr},
    {O::STORE_SUBSCR, &InstructionTranslator::op_store_subscr},
    {O::DELETE_SUBSCR, &InstructionTranslator::op_delete_subscr},
    {O::STORE_ATTR, &InstructionTranslator::op_store_attr},
    {O::DELETE_ATTR, &InstructionTranslator::op_delete_attr},
    {O::IMPORT_NAME, &InstructionTranslator::op_import_name},
    {O::IMPORT_FROM, &InstructionTranslator::op_import_from},
    {O::STORE_GLOBAL, &InstructionTranslator::op_store_global},
    {O::BEFORE_WITH, &InstructionTranslator::op_before_with},
};

const std::array<Handler, 256>& handler_table() {
  static const std::array<Handler, 256> table = [] {
    std::array<Handler, 256> t{};
    for (const auto& row : kHandlers) t[static_cast<size_t>(row.opcode)] = row.handler;
    return t;
  }();
  return table;
}

// Errors a handler that succeeded may leave behind from a probe it made
// (an attribute or item lookup, a conversion or number that did not fit,
// an optional import): they carry nothing the trace depends on and are
// cleared. Any other pending error (MemoryError, KeyboardInterrupt,
// SystemError, RecursionError, a warning turned error...) is not the
// trace's to swallow.
bool is_probe_error() { return pending_probe_error(); }

}  // namespace

void InstructionTranslator::step_until_return(bool checkpoints) {
  const auto& table = handler_table();
  while (!failure_ && !return_value_) {
    if (ip_ >= code_->instructions.size()) {
      breakable_ = false;
      unsupported("ran past the last instruction");
      break;
    }
    if (!within_trace_budget()) break;
    current_ = code_->instructions[ip_].get();
    if (checkpoints) take_checkpoint();
    if (checkpoints && static_cast<int>(ip_) == frame_.force_break_at) {
      unsupported(frame_.force_break_reason);
      break;
    }
    Handler handler = table[current_->opcode];
    if (!handler) {
      unsupported("unsupported opcode " + std::string(current_->name()));
      break;
    }
    jumped_ = false;
    if (!(this->*handler)(*current_)) {
      if (!failure_) unsupported("cannot trace " + std::string(current_->name()));
      break;
    }
    if (PyErr_Occurred()) {
      if (!is_probe_error()) {
        // Not an error this tracer expects: the trace ends naming it (the
        // frame runs in CPython, which meets the same condition itself).
        std::string error = take_error_text();
        unsupported(std::string(current_->name()) + " left an unexpected Python error set (" + error + ")");
        break;
      }
      PyErr_Clear();  // a probe's, checked just above
    }
    if (!jumped_) ++ip_;
  }
}

TraceResult trace_frame(const FrameInputs& frame) {
  // The trace switches the real grad mode as the traced code would
  // (translate_with.cpp); the caller's is restored whatever happens.
  struct GradModeRestore {
    bool saved = grad_mode_enabled();
    ~GradModeRestore() { set_grad_mode_enabled(saved); }
  } restore_grad_mode;
  InstructionTranslator translator(frame);
  TraceResult result = translator.run();
  if (translator.backward_escape() && !translator.interrupted() && frame.force_break_at < 0) {
    // A tensor requiring grad outlives a traced backward: trace again,
    // breaking at the backward (translate_backward.cpp).
    FrameInputs again = frame;
    again.force_break_at = translator.backward_escape()->first;
    again.force_break_reason = translator.backward_escape()->second;
    set_grad_mode_enabled(restore_grad_mode.saved);  // as the frame enters, not as the trace stopped
    return trace_frame(again);
  }
  if (result.unsupported && translator.speculative_reads() > 0 && !translator.interrupted()) {
    // Numbers read from tensors traced speculatively, and the trace stopped
    // (a branch or a format needing a number's value, or anything else):
    // trace again breaking at the first read, as without speculation.
    FrameInputs again = frame;
    again.speculate_scalar_reads = false;
    set_grad_mode_enabled(restore_grad_mode.saved);  // a trace stopped inside `with torch.no_grad():` left it off
    return trace_frame(again);
  }
  translator.keep_interruption();  // one left set by the end of the trace
  if (translator.interrupted()) {
    // Raised from the frame's call; nothing of the trace is used.
    TraceResult interrupted;
    interrupted.interrupted = true;
    interrupted.instructions = result.instructions;
    interrupted.unsupported = Unsupported{"interrupted", utf8(frame.code->co_filename), frame.code->co_firstlineno};
    PyErr_Clear();  // a probe's: the interruption is what is raised
    translator.restore_interruption();
    return interrupted;
  }
  if (PyErr_Occurred() && !is_probe_error()) {
    // Left set by the end of the trace (output planning, guards) and not a
    // probe's: the frame runs unchanged, the reason naming the error.
    std::string error = "an unexpected Python error was left set (" + take_error_text() + ")";
    Unsupported u = result.unsupported.value_or(
        Unsupported{"", utf8(frame.code->co_filename), frame.code->co_firstlineno});
    u.reason = u.reason.empty() ? error : u.reason + "; then " + error;
    result.unsupported = std::move(u);
    result.graph_break.reset();
  }
  PyErr_Clear();  // a probe's, or the one just named
  return result;
}

InstructionTranslator::InstructionTranslator(const FrameInputs& frame)
    : frame_(frame), shared_(std::make_shared<TraceShared>()) {
  shared_->root_globals = frame.globals;
  shared_->root_closure = frame.closure;
  shared_->root_code = frame.code;
  shared_->entry_grad_enabled = grad_mode_enabled();
  shared_->capture_scalar_outputs = frame.capture_scalar_outputs;
  shared_->speculate_scalar_reads = frame.speculate_scalar_reads;
  shared_->capture_dynamic_output_shape_ops = frame.capture_dynamic_output_shape_ops;
  shared_->sizes_as_numbers = frame.sizes_as_numbers;
  shared_->entry_autocast = real_autocast_state();
  shared_->autocast = shared_->entry_autocast;
  PyCodeObject* co = frame.code;
  nargs_ = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0) +
           ((co->co_flags & CO_VARKEYWORDS) ? 1 : 0);
  locals_.resize(co->co_nlocalsplus);
  arg_wrapped_.assign(co->co_nlocalsplus, false);
}

InstructionTranslator::InstructionTranslator(InstructionTranslator& parent, InlineFrame f)
    : shared_(parent.shared_), inlined_(true), parent_(&parent), depth_(f.depth), globals_source_(std::move(f.globals_source)),
      unguarded_globals_(f.unguarded_globals) {
  frame_.code = f.code;
  frame_.globals = f.globals;
  frame_.builtins = PyEval_GetBuiltins();
  frame_.dynamic = parent.frame_.dynamic;  // inputs first read inside the call follow the frame's policy
  frame_.automatic = parent.frame_.automatic;
  frame_.dynamic_ints = parent.frame_.dynamic_ints;
  nargs_ = 0;  // arguments arrive bound, as values
  locals_ = std::move(f.locals);
  locals_.resize(static_cast<size_t>(f.code->co_nlocalsplus));
  arg_wrapped_.assign(static_cast<size_t>(f.code->co_nlocalsplus), true);
}

ValuePtr InstructionTranslator::run_inline() {
  if (!load_code()) return nullptr;
  bool generator = frame_.code->co_flags & CO_GENERATOR;
  if (generator) shared_->generator_runs.push_back({Value::next_birth(), 0});
  const size_t start_mark = generator ? generator_effect_mark() : 0;
  step_until_return(false);
  size_t end_mark = generator ? generator_effect_mark() : 0;
  if (generator) shared_->generator_runs.pop_back();
  if (failure_) return nullptr;
  if (!generator) return return_value_;
  ValuePtr it = Value::iterator(std::move(yielded_), &PyGen_Type);
  std::vector<size_t>& marks = it->as_iterator().effect_marks;
  marks = std::move(yield_marks_);
  marks.push_back(end_mark);
  it->as_iterator().rebuildable_generator = end_mark == start_mark && in_file_under("/torch/nn/modules/module.py");
  return it;
}

size_t InstructionTranslator::generator_effect_mark() const {
  if (shared_->generator_runs.empty()) return 0;
  return shared_->generator_runs.back().outside_writes + shared_->side_effects.size() + shared_->global_stores.size();
}

bool InstructionTranslator::may_stop_after(const ValuePtr& v, size_t n, const std::string& who) {
  if (v->kind != ValueKind::iterator || n == 0) return true;
  const std::vector<size_t>& marks = v->as_iterator().effect_marks;
  if (marks.empty()) return true;
  size_t k = v->position + n - 1;  // the last item taken
  if (k + 1 >= marks.size() || marks[k] == marks.back()) return true;
  return unsupported(who + " stops inside a generator whose later items change state outside it "
                     "(the tracer ran it to its end)");
}

bool InstructionTranslator::keep_interruption(bool any_error) {
  if (!PyErr_Occurred() || !(any_error || pending_interruption())) return false;
  TraceShared& s = *shared_;
  if (s.interrupted) {
    PyErr_Clear();  // a second one while the trace winds down: the first is raised
  } else {
    s.interruption = FetchedError::fetch();
    s.interrupted = true;
  }
  breakable_ = false;
  s.abandoned = true;  // no graph break: the frame's call raises it
  return true;
}

void InstructionTranslator::restore_interruption() {
  TraceShared& s = *shared_;
  if (!s.interrupted) return;
  s.interruption.restore();
  s.interrupted = false;
}

bool InstructionTranslator::unsupported(std::string reason) {
  // An interruption (KeyboardInterrupt: Ctrl-C) is kept to be raised, not
  // named. A probe's error (is_probe_error) is what made the code
  // unsupported and is cleared. Any other pending error is named in the
  // reason, which explain and the graph_breaks log show, before it is
  // cleared: the code runs in CPython from here, which meets the same
  // condition itself.
  keep_interruption();
  std::string unexpected;
  if (PyErr_Occurred() && !is_probe_error())
    unexpected = "an unexpected Python error was set (" + take_error_text() + ")";
  if (!failure_) {
    Unsupported u;
    u.reason = unexpected.empty() ? std::move(reason) : reason + "; " + unexpected;
    u.filename = utf8(frame_.code->co_filename);
    u.lineno = current_ && current_->line() >= 0 ? current_->line() : frame_.code->co_firstlineno;
    failure_ = std::move(u);
  } else if (!unexpected.empty()) {
    failure_->reason += "; then " + unexpected;
  }
  PyErr_Clear();  // a probe's, or the one just named
  return false;
}

ValuePtr InstructionTranslator::pop() {
  assert(!stack_.empty() && "pop from an empty value stack");
  ValuePtr v = std::move(stack_.back());
  stack_.pop_back();
  return v;
}

std::vector<ValuePtr> InstructionTranslator::pop_n(size_t n) {
  assert(stack_.size() >= n && "pop_n past the bottom of the stack");
  std::vector<ValuePtr> out(stack_.end() - static_cast<long>(n), stack_.end());
  stack_.resize(stack_.size() - n);
  return out;
}

void InstructionTranslator::jump_to(const bc::Instruction* target) {
  int index = code_->index_of(target);
  assert(index >= 0 && "jump to an instruction outside the code");
  ip_ = static_cast<size_t>(index);
  jumped_ = true;
}

graph::SourceLoc InstructionTranslator::current_loc() const {
  graph::SourceLoc loc;
  loc.file = utf8(frame_.code->co_filename);
  loc.line = current_ ? current_->line() : frame_.code->co_firstlineno;
  loc.code = utf8(frame_.code->co_qualname);  // which function (inlined ones differ)
  return loc;
}

bool InstructionTranslator::load_code() {
  auto& cached = shared_->decoded[frame_.code];  // the entry keeps the code object alive
  if (!cached) {
    auto decoded = bc::decode(frame_.code);
    if (!decoded.ok()) {
      shared_->decoded.erase(frame_.code);
      unsupported("cannot decode the bytecode: " + decoded.error().message);
      return false;
    }
    cached = std::make_shared<const bc::DecodedCode>(std::move(decoded.value()));
  }
  code_ = cached;
  return true;
}

TraceResult InstructionTranslator::run() {
  TraceResult result;
  if (!load_code()) {
    breakable_ = false;
    result.unsupported = failure_;
    return result;
  }
  if (!inlined_ && frame_.code && frame_.localsplus) {
    const std::string qualname = utf8(frame_.code->co_qualname);
    if (auto refusal = packed_sequence_refusal(utf8(frame_.code->co_filename), qualname, frame_.localsplus, nargs_)) {
      unsupported(*refusal);
      breakable_ = false;
      result.unsupported = failure_;
      return result;
    }
  }
  journals_locals_ = true;  // the root frame: a graph break may undo its instructions back to a checkpoint
  step_until_return(true);
  result.instructions = shared_->traced_instructions;
  if (failure_ && !plan_graph_break(result)) {
    result.unsupported = failure_;
    result.no_tensor_work = shared_->no_tensor_work;
    return result;
  }

  ValuePtr returned = return_value_;
  if (result.graph_break) {
    returned = break_restore_values(*result.graph_break);
    result.unsupported = failure_;
    failure_.reset();
  }
  finish_result(returned, result);
  if (result.graph && !inlined_)
    if (auto escape = find_backward_escape(*shared_, *result.graph)) backward_escape_ = std::move(escape);
  return result;
}

}  // namespace tj::tracer
