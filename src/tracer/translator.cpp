// The translator's run loop, opcode table, break planning and outputs; the
// opcode handlers live in translate_*.cpp, input wrapping in
// input_wrapping.cpp. See translator.h.
#include "tracer/py_str.h"
#include "tracer/translator.h"

#include <algorithm>
#include <array>
#include <cassert>

#include "graph/effects.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/sym_ints.h"
#include "tracer/liveness.h"
#include "tracer/py_lookup.h"
#include "tracer/tensor_bridge.h"

namespace tj::tracer {

namespace {

using Handler = InstructionTranslator::Handler;

struct HandlerRow {
  const char* opname;
  Handler handler;
};

// One row per supported opcode; anything else is unsupported.
const HandlerRow kHandlers[] = {
    {"NOP", &InstructionTranslator::op_nop},
    {"RESUME", &InstructionTranslator::op_nop},
    {"MAKE_CELL", &InstructionTranslator::op_make_cell},
    {"LOAD_CLOSURE", &InstructionTranslator::op_load_closure},
    {"MAKE_FUNCTION", &InstructionTranslator::op_make_function},
    {"RETURN_GENERATOR", &InstructionTranslator::op_return_generator},
    {"YIELD_VALUE", &InstructionTranslator::op_yield_value},
    {"COPY_FREE_VARS", &InstructionTranslator::op_nop},
    {"PRECALL", &InstructionTranslator::op_precall},
    {"LOAD_FAST", &InstructionTranslator::op_load_fast},
    {"STORE_FAST", &InstructionTranslator::op_store_fast},
    {"DELETE_FAST", &InstructionTranslator::op_delete_fast},
    {"LOAD_CONST", &InstructionTranslator::op_load_const},
    {"LOAD_GLOBAL", &InstructionTranslator::op_load_global},
    {"LOAD_DEREF", &InstructionTranslator::op_load_deref},
    {"LOAD_CLASSDEREF", &InstructionTranslator::op_load_deref},
    {"STORE_DEREF", &InstructionTranslator::op_store_deref},
    {"LOAD_ATTR", &InstructionTranslator::op_load_attr},
    {"LOAD_METHOD", &InstructionTranslator::op_load_method},
    {"PUSH_NULL", &InstructionTranslator::op_push_null},
    {"POP_TOP", &InstructionTranslator::op_pop_top},
    {"COPY", &InstructionTranslator::op_copy},
    {"SWAP", &InstructionTranslator::op_swap},
    {"RETURN_VALUE", &InstructionTranslator::op_return_value},
    {"BUILD_TUPLE", &InstructionTranslator::op_build_sequence},
    {"BUILD_LIST", &InstructionTranslator::op_build_sequence},
    {"BUILD_MAP", &InstructionTranslator::op_build_map},
    {"BUILD_CONST_KEY_MAP", &InstructionTranslator::op_build_const_key_map},
    {"BUILD_SLICE", &InstructionTranslator::op_build_slice},
    {"BUILD_STRING", &InstructionTranslator::op_build_string},
    {"LIST_APPEND", &InstructionTranslator::op_list_append},
    {"BUILD_SET", &InstructionTranslator::op_build_set},
    {"SET_ADD", &InstructionTranslator::op_set_add},
    {"SET_UPDATE", &InstructionTranslator::op_set_update},
    {"LIST_EXTEND", &InstructionTranslator::op_list_extend},
    {"LIST_TO_TUPLE", &InstructionTranslator::op_list_to_tuple},
    {"DICT_UPDATE", &InstructionTranslator::op_dict_update},
    {"DICT_MERGE", &InstructionTranslator::op_dict_update},
    {"MAP_ADD", &InstructionTranslator::op_map_add},
    {"UNPACK_SEQUENCE", &InstructionTranslator::op_unpack_sequence},
    {"UNPACK_EX", &InstructionTranslator::op_unpack_ex},
    {"FORMAT_VALUE", &InstructionTranslator::op_format_value},
    {"GET_ITER", &InstructionTranslator::op_get_iter},
    {"FOR_ITER", &InstructionTranslator::op_for_iter},
    {"JUMP_FORWARD", &InstructionTranslator::op_jump},
    {"JUMP_BACKWARD", &InstructionTranslator::op_jump},
    {"JUMP_BACKWARD_NO_INTERRUPT", &InstructionTranslator::op_jump},
    {"POP_JUMP_FORWARD_IF_TRUE", &InstructionTranslator::op_pop_jump_if},
    {"POP_JUMP_FORWARD_IF_FALSE", &InstructionTranslator::op_pop_jump_if},
    {"POP_JUMP_BACKWARD_IF_TRUE", &InstructionTranslator::op_pop_jump_if},
    {"POP_JUMP_BACKWARD_IF_FALSE", &InstructionTranslator::op_pop_jump_if},
    {"POP_JUMP_FORWARD_IF_NONE", &InstructionTranslator::op_pop_jump_if},
    {"POP_JUMP_FORWARD_IF_NOT_NONE", &InstructionTranslator::op_pop_jump_if},
    {"POP_JUMP_BACKWARD_IF_NONE", &InstructionTranslator::op_pop_jump_if},
    {"POP_JUMP_BACKWARD_IF_NOT_NONE", &InstructionTranslator::op_pop_jump_if},
    {"JUMP_IF_TRUE_OR_POP", &InstructionTranslator::op_jump_if_or_pop},
    {"JUMP_IF_FALSE_OR_POP", &InstructionTranslator::op_jump_if_or_pop},
    {"KW_NAMES", &InstructionTranslator::op_kw_names},
    {"CALL", &InstructionTranslator::op_call},
    {"CALL_FUNCTION_EX", &InstructionTranslator::op_call_function_ex},
    {"BINARY_OP", &InstructionTranslator::op_binary_op},
    {"COMPARE_OP", &InstructionTranslator::op_compare_op},
    {"IS_OP", &InstructionTranslator::op_is_op},
    {"CONTAINS_OP", &InstructionTranslator::op_contains_op},
    {"UNARY_NEGATIVE", &InstructionTranslator::op_unary},
    {"UNARY_POSITIVE", &InstructionTranslator::op_unary},
    {"UNARY_INVERT", &InstructionTranslator::op_unary},
    {"UNARY_NOT", &InstructionTranslator::op_unary},
    {"BINARY_SUBSCR", &InstructionTranslator::op_binary_subscr},
    {"STORE_SUBSCR", &InstructionTranslator::op_store_subscr},
    {"STORE_ATTR", &InstructionTranslator::op_store_attr},
    {"IMPORT_NAME", &InstructionTranslator::op_import_name},
    {"IMPORT_FROM", &InstructionTranslator::op_import_from},
    {"STORE_GLOBAL", &InstructionTranslator::op_store_global},
    {"BEFORE_WITH", &InstructionTranslator::op_before_with},
};

const std::array<Handler, 256>& handler_table() {
  static const std::array<Handler, 256> table = [] {
    std::array<Handler, 256> t{};
    for (const auto& row : kHandlers) {
      auto op = bc::opcode_by_name(row.opname);
      assert(op && "handler for an unknown opcode name");
      t[*op] = row.handler;
    }
    return t;
  }();
  return table;
}

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
    if (PyErr_Occurred()) PyErr_Clear();
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
  PyErr_Clear();
  return result;
}

InstructionTranslator::InstructionTranslator(const FrameInputs& frame)
    : frame_(frame), shared_(std::make_shared<TraceShared>()) {
  shared_->root_globals = frame.globals;
  shared_->entry_grad_enabled = grad_mode_enabled();
  shared_->entry_autocast = real_autocast_state();
  shared_->autocast = shared_->entry_autocast;
  PyCodeObject* co = frame.code;
  nargs_ = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0) +
           ((co->co_flags & CO_VARKEYWORDS) ? 1 : 0);
  locals_.resize(co->co_nlocalsplus);
  arg_wrapped_.assign(co->co_nlocalsplus, false);
}

InstructionTranslator::InstructionTranslator(InstructionTranslator& parent, InlineFrame f)
    : shared_(parent.shared_), inlined_(true), depth_(f.depth), globals_source_(std::move(f.globals_source)),
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
  step_until_return(false);
  size_t end_mark = generator ? generator_effect_mark() : 0;
  if (generator) shared_->generator_runs.pop_back();
  if (failure_) return nullptr;
  if (!generator) return return_value_;
  ValuePtr it = Value::iterator(std::move(yielded_), "generator");
  it->effect_marks = std::move(yield_marks_);
  it->effect_marks.push_back(end_mark);
  return it;
}

size_t InstructionTranslator::generator_effect_mark() const {
  if (shared_->generator_runs.empty()) return 0;
  return shared_->generator_runs.back().outside_writes + shared_->side_effects.size() + shared_->global_stores.size();
}

bool InstructionTranslator::may_stop_after(const ValuePtr& v, size_t n, const std::string& who) {
  if (v->kind != ValueKind::iterator || v->effect_marks.empty() || n == 0) return true;
  size_t k = v->position + n - 1;  // the last item taken
  if (k + 1 >= v->effect_marks.size() || v->effect_marks[k] == v->effect_marks.back()) return true;
  return unsupported(who + " stops inside a generator whose later items change state outside it "
                     "(the tracer ran it to its end)");
}

bool InstructionTranslator::unsupported(std::string reason) {
  if (!failure_) {
    Unsupported u;
    u.reason = std::move(reason);
    u.filename = utf8(frame_.code->co_filename);
    u.lineno = current_ && current_->line() >= 0 ? current_->line() : frame_.code->co_firstlineno;
    failure_ = std::move(u);
  }
  PyErr_Clear();
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
  journals_locals_ = true;  // the root frame: a graph break may undo its instructions back to a checkpoint
  step_until_return(true);
  result.instructions = shared_->traced_instructions;
  if (failure_ && !plan_graph_break(result)) {
    result.unsupported = failure_;
    result.no_tensor_work = shared_->no_tensor_work;
    return result;
  }

  std::vector<graph::Arg> outputs;
  std::unordered_map<graph::Node*, int> output_index;
  ValuePtr returned = return_value_;
  if (result.graph_break) {
    // The graph's result: the restored locals, then the non-NULL stack values.
    std::vector<ValuePtr> restore;
    for (int slot : result.graph_break->restored_locals) restore.push_back(locals_[static_cast<size_t>(slot)]);
    for (int slot : result.graph_break->restored_cells) restore.push_back(locals_[static_cast<size_t>(slot)]->items[0]);
    const auto& targets = result.graph_break->targets;
    for (size_t i = 0; i < stack_.size(); ++i) {
      const ValuePtr& v = stack_[i];
      if (v->kind == ValueKind::null) continue;
      // A loop's iterator reaches the resume function as a list of what is
      // left (ResumeTarget::stack_is_iterator): its own type (a generator,
      // zip, ...) cannot be observed there.
      bool loop_iterator = !targets.empty() && i < targets[0].stack_is_iterator.size() && targets[0].stack_is_iterator[i];
      if (v->kind == ValueKind::iterator && loop_iterator) {
        auto items = std::make_shared<Value>(*v);
        items->python_type = "list_iterator";
        restore.push_back(std::move(items));
        continue;
      }
      restore.push_back(v);
    }
    returned = Value::sequence(ValueKind::tuple, std::move(restore));
    result.unsupported = failure_;
    failure_.reset();
  }
  // A grad mode left changed (a break inside `with torch.no_grad():`, a
  // torch.set_grad_enabled(False) call) is set again after the graph runs.
  if (grad_mode_enabled() != shared_->entry_grad_enabled)
    shared_->side_effects.push_back(SideEffect{SideEffect::Kind::set_grad_enabled, nullptr, "",
                                               Value::constant(grad_mode_enabled() ? Py_True : Py_False)});
  add_autocast_side_effects();
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
      ok = build_output(Value::sequence(ValueKind::list, effect.target->items), t.value, outputs, output_index);
    } else if (effect.kind == SideEffect::Kind::replace_dict) {
      ok = build_output(Value::dict(effect.target->keys, effect.target->items), t.value, outputs, output_index);
    } else {
      ok = build_output(effect.value, t.value, outputs, output_index);
    }
    if (!ok) {
      result.graph_break.reset();
      result.unsupported = failure_;
      return result;
    }
    result.side_effects.push_back(std::move(t));
  }
  result.globals = PyRef::borrow(frame_.globals);
  if (!build_output(returned, result.output, outputs, output_index)) {
    result.graph_break.reset();
    result.unsupported = failure_;
    return result;
  }
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
  add_size_facts_guard();  // its graph keeps the comparisons; this one needs only the sizes ops use
  graph::erase_unused_sym_nodes(*shared_->graph);
  for (graph::Node* n : shared_->graph->nodes())
    if (n->kind() == graph::NodeKind::call_function && n->op() && !n->op()->is_builtin()) ++result.op_count;
  result.graph = std::move(shared_->graph);
  result.input_sources = std::move(shared_->input_sources);
  result.int_inputs = std::move(shared_->int_inputs);
  result.needed_ints = shared_->needed_ints;
  if (!shared_->dynamic_inputs.empty() && shared_->sizes_read) {
    result.sizes_read = shared_->sizes_read;
    shared_->guards.specialize_dynamic_dims();
  } else if (!shared_->dynamic_inputs.empty()) {
    result.dynamic = std::move(shared_->dynamic_inputs);
  }
  result.guards = std::move(shared_->guards);
  return result;
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
    if (!meta || meta->storage_id < 0 || int_input) continue;
    g.sources.push_back(shared_->input_sources[i]);
    g.storage_ids.push_back(meta->storage_id);
  }
  bool distinct = std::any_of(g.storage_ids.begin(), g.storage_ids.end(),
                              [&](int64_t id) { return id != g.storage_ids.front(); });
  if (distinct) shared_->guards.add(std::move(g));
}

// ------------------------------------------------------------ graph breaks

void InstructionTranslator::take_checkpoint() {
  // A call sequence (KW_NAMES, PRECALL, CALL) breaks as a whole: keep the
  // checkpoint taken at its first instruction.
  std::string_view name = current_->name();
  if ((name == "PRECALL" || name == "CALL") && ip_ > 0) {
    std::string_view prev = code_->instructions[ip_ - 1]->name();
    if (prev == "KW_NAMES" || prev == "PRECALL") return;
  }
  checkpoint_.ip = ip_;
  checkpoint_.stack = stack_;
  locals_journal_.clear();  // the locals now are the checkpoint's
  checkpoint_.nodes = shared_->graph->size();
  checkpoint_.side_effects = shared_->side_effects.size();
  checkpoint_.size_facts = shared_->size_facts.size();
  checkpoint_.global_stores = shared_->global_stores;
  checkpoint_.grad_enabled = grad_mode_enabled();
  checkpoint_.autocast = shared_->autocast;
  checkpoint_.autocast_blocks = shared_->autocast_blocks;
  checkpoint_.autocast_calls = shared_->autocast_calls.size();
  shared_->journal.clear();
  shared_->journaled.clear();
  shared_->position_journal.clear();
}

bool InstructionTranslator::local_bound(int slot) const {
  if (locals_[static_cast<size_t>(slot)]) return true;
  return slot < nargs_ && !arg_wrapped_[static_cast<size_t>(slot)] && frame_.localsplus[slot] != nullptr;
}

bool InstructionTranslator::plan_graph_break(TraceResult& result) {
  PyCodeObject* co = frame_.code;
  if (!breakable_ || shared_->abandoned || !frame_.may_break || !current_ || shared_->run_unchanged) return false;
  // Back to the state before the span; drop what the failed instruction
  // (and any call it was inlining) added: nodes, inputs, side effects, and
  // in-place changes of values.
  stack_ = checkpoint_.stack;
  for (auto it = locals_journal_.rbegin(); it != locals_journal_.rend(); ++it) {
    locals_[static_cast<size_t>(it->slot)] = std::move(it->value);
    arg_wrapped_[static_cast<size_t>(it->slot)] = it->wrapped;
  }
  locals_journal_.clear();
  for (auto it = shared_->journal.rbegin(); it != shared_->journal.rend(); ++it) *it->first = it->second;
  for (auto& [iterator, position] : shared_->position_journal) iterator->position = position;
  shared_->journal.clear();
  shared_->journaled.clear();
  shared_->position_journal.clear();
  shared_->side_effects.resize(checkpoint_.side_effects);
  shared_->size_facts.resize(checkpoint_.size_facts);
  shared_->size_nodes.clear();  // may name nodes erased below
  shared_->sizes_vary.clear();
  shared_->global_stores = checkpoint_.global_stores;
  set_grad_mode_enabled(checkpoint_.grad_enabled);
  shared_->autocast = checkpoint_.autocast;
  shared_->autocast_blocks = checkpoint_.autocast_blocks;
  shared_->autocast_calls.resize(checkpoint_.autocast_calls);
  while (shared_->graph->size() > checkpoint_.nodes) {
    graph::Node* last = shared_->graph->nodes().back();
    if (!last->users().empty()) return false;
    shared_->placeholder_index.erase(last);
    shared_->graph->erase(last);
  }
  // Inputs are the placeholders, in creation order: drop the erased ones.
  shared_->input_sources.resize(shared_->graph->placeholders().size());
  std::erase_if(shared_->int_inputs, [&](int i) { return i >= static_cast<int>(shared_->input_sources.size()); });
  const auto& code = code_->instructions;
  const int begin = static_cast<int>(checkpoint_.ip);
  const int failing = code_->index_of(current_);
  if (failing < begin) return false;
  for (int i = begin; i <= failing; ++i) {
    std::string_view n = code[static_cast<size_t>(i)]->name();
    if (n == "RESUME" || n == "COPY_FREE_VARS" || n == "MAKE_CELL") return false;
  }

  GraphBreak plan;
  plan.span_begin = begin;
  plan.failing = failing;
  bool in_handler_region = false;
  for (int i = begin; i <= failing; ++i) in_handler_region |= code[static_cast<size_t>(i)]->handler.has_value();
  int op_count = 0;
  for (graph::Node* n : shared_->graph->nodes())
    if (n->kind() == graph::NodeKind::call_function) ++op_count;
  const auto live = live_locals(code, co->co_nlocalsplus);
  // Cell and free variables reach the resume function through its closure
  // (the very cells, so closures made before the break still share them).
  const char* kinds = PyBytes_AsString(co->co_localspluskinds);
  constexpr char kFastCell = 0x40, kFastFree = static_cast<char>(0x80);  // CPython 3.11 localsplus kinds
  auto is_cell_or_free = [&](int slot) { return kinds && (kinds[slot] & (kFastCell | kFastFree)); };
  if (!kinds) PyErr_Clear();
  const bool reads_all_locals = may_read_all_locals(co);  // locals()/vars(): every local stays live
  auto live_bound = [&](int target) {
    std::vector<int> slots;
    for (int slot = 0; slot < co->co_nlocalsplus; ++slot)
      if (!is_cell_or_free(slot) && (reads_all_locals || live[static_cast<size_t>(target)][static_cast<size_t>(slot)]) &&
          local_bound(slot))
        slots.push_back(slot);
    return slots;
  };

  const int depth_before = static_cast<int>(stack_.size());
  // NULLs below what the span consumes stay where they are; a CALL
  // consumes its NULL (or method) slot, nothing else consumes a NULL.
  auto target_at = [&](int instruction, int depth, int consumed) {
    ResumeTarget t{instruction, depth, {}, {}, live_bound(instruction)};
    for (int i = 0; i < depth; ++i) {
      bool kept = i < depth_before - consumed;
      t.stack_is_null.push_back(kept && stack_[static_cast<size_t>(i)]->kind == ValueKind::null);
      t.stack_is_iterator.push_back(kept && stack_[static_cast<size_t>(i)]->kind == ValueKind::iterator);
    }
    return t;
  };
  if (in_handler_region) {
    // Inside a try/with: the resume function runs the span itself, under
    // the frame's own exception table. Without progress that would loop.
    if (op_count == 0) return false;
    plan.span_end = begin;
    plan.targets.push_back(target_at(begin, depth_before, 0));
  } else {
    plan.span_end = failing + 1;
    int depth = depth_before;
    int consumed = 0;
    for (int i = begin; i <= failing; ++i) {
      const auto& inst = *code[static_cast<size_t>(i)];
      std::string_view n = inst.name();
      // dis accounts a call's pops at PRECALL (-arg) and CALL (-1): count them at PRECALL.
      if (n == "PRECALL") consumed = std::max(consumed, depth_before - depth + inst.arg + 2);
      if (n == "CALL_FUNCTION_EX") consumed = std::max(consumed, depth_before - depth + 3 + (inst.arg & 1));
      if (i < failing) depth += bc::stack_effect(inst.opcode, inst.arg, false);
    }
    const auto& last = *code[static_cast<size_t>(failing)];
    std::string_view name = last.name();
    if (last.target) {
      bool supported_jump = name.starts_with("POP_JUMP_") || name.starts_with("JUMP_IF_") || name == "FOR_ITER";
      if (!supported_jump) return false;
      plan.targets.push_back(target_at(failing + 1, depth + bc::stack_effect(last.opcode, last.arg, false), consumed));
      plan.targets.push_back(target_at(code_->index_of(last.target), depth + bc::stack_effect(last.opcode, last.arg, true), consumed));
    } else if (!last.info().terminates) {
      plan.targets.push_back(target_at(failing + 1, depth + bc::stack_effect(last.opcode, last.arg, false), consumed));
    }
  }
  // Locals to restore: every bound local some target may read; every
  // cell of the frame that holds a value.
  for (int slot = 0; slot < co->co_nlocalsplus - co->co_nfreevars; ++slot) {
    const ValuePtr& v = locals_[static_cast<size_t>(slot)];
    if (v && v->kind == ValueKind::cell) {
      if (v->items[0]) plan.restored_cells.push_back(slot);
      continue;
    }
    if (!v || is_cell_or_free(slot)) continue;
    bool needed = false;
    for (const auto& t : plan.targets)
      for (int s : t.live_locals) needed |= s == slot;
    if (needed) plan.restored_locals.push_back(slot);
  }
  for (const auto& v : stack_) plan.stack_is_null.push_back(v->kind == ValueKind::null);
  result.graph_break = std::move(plan);
  return true;
}

bool InstructionTranslator::build_output(const ValuePtr& v, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                                         std::unordered_map<graph::Node*, int>& output_index) {
  using Kind = OutputTemplate::Kind;
  if (v->is_symint() || v->kind == ValueKind::size_text)  // a plain int or str after the graph
    return build_output(specialize(v), out, outputs, output_index);
  if (is_python_number(v)) return build_number_output(v, out, outputs, output_index);
  if (v->kind == ValueKind::seed_result) return build_seed_output(v, out);
  if (v->is_tensor()) {
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
  if (v->kind == ValueKind::callable && v->self_value && PyFunction_Check(v->obj.get())) {
    // A function bound to a value (obj.method, super().method): the same
    // function bound to the rebuilt self.
    out.kind = Kind::method;
    out.constant = PyRef::borrow(v->obj.get());
    out.items.emplace_back();
    return build_output(v->self_value, out.items.back(), outputs, output_index);
  }
  if (!v->bound_args.empty() || !v->bound_kwargs.empty() || (v->kind == ValueKind::callable && v->self_value))
    return unsupported("cannot rebuild a bound or partial callable made during tracing");
  if (v->source && !v->is_constant() && v->kind != ValueKind::tensor) {
    // An object read from the frame's inputs: return that very object
    // (mutations of it are replayed as side effects).
    out.kind = Kind::input;
    out.index = static_cast<int>(shared_->input_sources.size());
    shared_->input_sources.push_back(v->source);
    return true;
  }
  bool fresh_object = v->kind == ValueKind::object && v->object_class;
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
  if (v->kind == ValueKind::function) {
    // A function made in the frame (a lambda, a comprehension, a nested
    // def) without a closure: made again from its code, globals and defaults.
    if (!v->items.empty() || !v->kwdefaults.empty() || !v->bound_args.empty() || !v->bound_kwargs.empty())
      return unsupported("cannot rebuild a closure made during tracing");
    out.kind = Kind::function;
    out.constant = PyRef::borrow(v->obj.get());
    out.keys.push_back(PyRef::borrow(v->globals));
    for (const auto& d : v->defaults) {
      out.items.emplace_back();
      if (!build_output(d, out.items.back(), outputs, output_index)) return false;
    }
    return true;
  }
  switch (v->kind) {
    case ValueKind::dict_view:
      // d.keys() / d.values() / d.items(): the view is made after the graph
      // on the dict it watches (the caller's, or the one the frame built).
      out.kind = Kind::dict_view;
      out.constant = PyRef::steal(PyUnicode_FromString(v->name.c_str()));
      out.items.emplace_back();
      return build_output(v->self_value, out.items.back(), outputs, output_index);
    case ValueKind::tensor_method:
      out.kind = Kind::attr;
      out.constant = PyRef::steal(PyUnicode_FromString(v->name.c_str()));
      out.items.emplace_back();
      return build_output(v->self_value, out.items.back(), outputs, output_index);
    case ValueKind::iterator:
      // Made again from its values, an iterator is a list_iterator (and a
      // generator would be computed ahead of time): any other stays in CPython.
      if (std::string_view(v->python_type) != "list_iterator")
        return unsupported(std::string("a ") + v->python_type + " cannot leave a compiled graph (it would be a list_iterator)");
      out.kind = Kind::iterator;
      for (size_t i = v->position; i < v->items.size(); ++i) {
        out.items.emplace_back();
        if (!build_output(v->items[i], out.items.back(), outputs, output_index)) return false;
      }
      return true;
    case ValueKind::tuple:
    case ValueKind::list:
    case ValueKind::dict:
      out.kind = v->kind == ValueKind::tuple ? Kind::tuple : v->kind == ValueKind::list ? Kind::list : Kind::dict;
      if (v->kind == ValueKind::tuple && v->obj && PyType_Check(v->obj.get())) {
        // A structseq type builds from the tuple; a namedtuple class through its _make.
        PyObject* make = PyObject_HasAttrString(v->obj.get(), "_fields") ? PyObject_GetAttrString(v->obj.get(), "_make") : nullptr;
        PyErr_Clear();
        out.constant = make ? PyRef::steal(make) : PyRef::borrow(v->obj.get());
      }
      for (size_t i = 0; i < v->items.size(); ++i) {
        out.items.emplace_back();
        if (!build_output(v->items[i], out.items.back(), outputs, output_index)) return false;
        if (v->kind == ValueKind::dict) {
          PyObject* key = v->keys[i]->as_python();  // a tensor key: the input tensor itself
          if (!key) return unsupported("a dict keyed by a tensor made in the graph cannot leave it");
          out.keys.push_back(PyRef::steal(key));
        }
      }
      return true;
    case ValueKind::constant:
      if (PySet_CheckExact(v->obj.get())) {  // a set made in the frame: a new set per call
        out.kind = Kind::tuple;
        out.constant = PyRef::borrow(reinterpret_cast<PyObject*>(&PySet_Type));
        PyObject* it = PyObject_GetIter(v->obj.get());
        while (PyObject* item = it ? PyIter_Next(it) : nullptr) {
          out.items.emplace_back();
          out.items.back().kind = Kind::constant;
          out.items.back().constant = PyRef::steal(item);
        }
        Py_XDECREF(it);
        PyErr_Clear();
        return true;
      }
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

// ---------------------------------------------------------------- inputs

ValuePtr InstructionTranslator::load_local(int index) {
  if (index < nargs_ && !arg_wrapped_[index]) {
    PyObject* obj = frame_.localsplus[index];
    PyObject* name = PyTuple_GetItem(frame_.code->co_localsplusnames, index);
    set_local(index, obj ? wrap_input(obj, Source::local(index, utf8(name))) : locals_[index]);
  }
  return locals_[index];
}

void InstructionTranslator::set_local(int slot, ValuePtr value, bool wrapped) {
  const auto i = static_cast<size_t>(slot);
  if (journals_locals_) locals_journal_.push_back({slot, std::move(locals_[i]), static_cast<bool>(arg_wrapped_[i])});
  locals_[i] = std::move(value);
  arg_wrapped_[i] = wrapped;
}

std::optional<bool> InstructionTranslator::truthiness(const ValuePtr& v) {
  if (v->is_symint()) {
    bool handled = false;
    ValuePtr nonzero = symint_compare(Py_NE, v, Value::constant_steal(PyLong_FromLong(0)), handled);
    return nonzero->obj.get() == Py_True;
  }
  switch (v->kind) {
    case ValueKind::constant: {
      int r = PyObject_IsTrue(v->obj.get());
      if (r < 0) {
        unsupported("cannot decide the truth of a " + v->type_name());
        return std::nullopt;
      }
      return r == 1;
    }
    case ValueKind::tuple:
    case ValueKind::list:
    case ValueKind::dict: return !v->items.empty();
    case ValueKind::dict_view: return !v->self_value->items.empty();
    case ValueKind::callable:
    case ValueKind::module:
    case ValueKind::tensor_method: return true;
    case ValueKind::object: {
      PyTypeObject* t = Py_TYPE(v->obj.get());
      for (const char* dunder : {"__bool__", "__len__"}) {
        bool handled = false;
        ValuePtr r = call_dunder(v, dunder, {}, handled);
        if (!handled) continue;
        if (!r) return std::nullopt;
        if (!r->is_constant() || !(PyBool_Check(r->obj.get()) || PyLong_Check(r->obj.get()))) {
          unsupported(std::string(dunder) + " of " + v->type_name() + " returned a " + r->type_name());
          return std::nullopt;
        }
        return PyObject_IsTrue(r->obj.get()) == 1;
      }
      bool custom = (t->tp_as_number && t->tp_as_number->nb_bool) || (t->tp_as_mapping && t->tp_as_mapping->mp_length) ||
                    (t->tp_as_sequence && t->tp_as_sequence->sq_length);
      if (!custom) return true;
      unsupported("truth of a " + v->type_name() + " object depends on its __bool__/__len__");
      return std::nullopt;
    }
    case ValueKind::tensor:
      unsupported("data-dependent branch: the truth value of a tensor is only known at run time");
      return std::nullopt;
    default:
      unsupported("cannot decide the truth of a " + v->type_name());
      return std::nullopt;
  }
}

}  // namespace tj::tracer
