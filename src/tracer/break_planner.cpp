// Graph-break planning (ARCHITECTURE.md decision 2): the checkpoint taken
// before each instruction of the root frame, the undo back to it when an
// instruction cannot be traced, and the GraphBreak plan (the span CPython
// runs, its resume targets with their live locals and stack layout, the
// locals and cells restored from the graph's outputs). See translator.h.
#include <algorithm>
#include <functional>

#include "tracer/liveness.h"
#include "tracer/py_str.h"
#include "support/tensor_bridge.h"
#include "tracer/translator.h"

namespace tj::tracer {

void InstructionTranslator::take_checkpoint() {
  // A call sequence (KW_NAMES, PRECALL, CALL) breaks as a whole: keep the
  // checkpoint taken at its first instruction.
  const bc::CallStep step = current_->info().call_step;
  if ((step == bc::CallStep::precall || step == bc::CallStep::call) && ip_ > 0) {
    const bc::CallStep prev = code_->instructions[ip_ - 1]->info().call_step;
    if (prev == bc::CallStep::kw_names || prev == bc::CallStep::precall) return;
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
  checkpoint_.inference = shared_->inference;
  shared_->journal.clear();
  shared_->journaled.clear();
  shared_->position_journal.clear();
}

bool InstructionTranslator::local_bound(int slot) const {
  if (locals_[static_cast<size_t>(slot)]) return true;
  return slot < nargs_ && !arg_wrapped_[static_cast<size_t>(slot)] && frame_.localsplus[slot] != nullptr;
}

// Back to the state before the span; drop what the failed instruction
// (and any call it was inlining) added: nodes, inputs, side effects, and
// in-place changes of values. False when a node to drop is still used.
bool InstructionTranslator::roll_back_to_checkpoint() {
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
  shared_->size_number_of.clear();
  shared_->sizes_vary.clear();
  shared_->global_stores = checkpoint_.global_stores;
  set_grad_mode_enabled(checkpoint_.grad_enabled);
  shared_->autocast = checkpoint_.autocast;
  shared_->autocast_blocks = checkpoint_.autocast_blocks;
  shared_->autocast_calls.resize(checkpoint_.autocast_calls);
  shared_->inference = checkpoint_.inference;
  while (shared_->graph->size() > checkpoint_.nodes) {
    graph::Node* last = shared_->graph->nodes().back();
    if (!last->users().empty()) return false;
    shared_->placeholder_index.erase(last);
    shared_->graph->erase(last);
  }
  // Inputs are the placeholders, in creation order: drop the erased ones.
  shared_->input_sources.resize(shared_->graph->placeholders().size());
  std::erase_if(shared_->int_inputs, [&](int i) { return i >= static_cast<int>(shared_->input_sources.size()); });
  std::erase_if(shared_->size_inputs, [&](const auto& s) { return s.first >= static_cast<int>(shared_->input_sources.size()); });
  return true;
}

// Locals to restore: every bound local some target may read; every
// cell of the frame that holds a value.
void InstructionTranslator::plan_restored_slots(GraphBreak& plan, const std::function<bool(int)>& is_cell_or_free) {
  PyCodeObject* co = frame_.code;
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
}

bool InstructionTranslator::plan_graph_break(TraceResult& result) {
  PyCodeObject* co = frame_.code;
  if (!breakable_ || shared_->abandoned || !frame_.may_break || !current_ || shared_->run_unchanged) return false;
  if (!roll_back_to_checkpoint()) return false;
  const auto& code = code_->instructions;
  const int begin = static_cast<int>(checkpoint_.ip);
  const int failing = code_->index_of(current_);
  if (failing < begin) return false;
  for (int i = begin; i <= failing; ++i)
    if (bc::is_prologue(code[static_cast<size_t>(i)]->code())) return false;

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
  if (!kinds) PyErr_Clear();  // co_localspluskinds is always bytes: no kinds, no cells
  const bool reads_all_locals = may_read_all_locals(co);  // locals()/vars(): every local stays live
  const bool reads_first = super_reads_first_local(co);    // super() without arguments: the first local does
  auto live_bound = [&](int target) {
    std::vector<int> slots;
    for (int slot = 0; slot < co->co_nlocalsplus; ++slot)
      if (!is_cell_or_free(slot) &&
          (reads_all_locals || (reads_first && slot == 0) || live[static_cast<size_t>(target)][static_cast<size_t>(slot)]) &&
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
      const bc::CallStep step = inst.info().call_step;
      // dis accounts a call's pops at PRECALL (-arg) and CALL (-1): count them at PRECALL.
      if (step == bc::CallStep::precall) consumed = std::max(consumed, depth_before - depth + inst.arg + 2);
      if (step == bc::CallStep::call_function_ex) consumed = std::max(consumed, depth_before - depth + 3 + (inst.arg & 1));
      if (i < failing) depth += bc::stack_effect(inst.opcode, inst.arg, false);
    }
    const auto& last = *code[static_cast<size_t>(failing)];
    if (last.target) {
      // Conditional jumps but SEND (which only runs inside a generator's `yield from`).
      const bc::JumpCondition condition = last.info().condition;
      bool supported_jump = condition != bc::JumpCondition::none && condition != bc::JumpCondition::send_done;
      if (!supported_jump) return false;
      plan.targets.push_back(target_at(failing + 1, depth + bc::stack_effect(last.opcode, last.arg, false), consumed));
      plan.targets.push_back(target_at(code_->index_of(last.target), depth + bc::stack_effect(last.opcode, last.arg, true), consumed));
    } else if (!last.info().terminates) {
      plan.targets.push_back(target_at(failing + 1, depth + bc::stack_effect(last.opcode, last.arg, false), consumed));
      if (last.code() == bc::Opcode::LOAD_METHOD) {
        // CPython's LOAD_METHOD leaves (method, self) or (NULL, attribute)
        // by the object's type (a super object, a module: the latter); the
        // span runs it as LOAD_ATTR + PUSH_NULL + SWAP (resume.cpp), which
        // always leaves the NULL, so the tail knows which slot it is.
        ResumeTarget& t = plan.targets.back();
        const size_t slot = static_cast<size_t>(depth - 1);
        t.stack_is_null[slot] = true;
        t.stack_is_iterator[slot] = false;
      }
    }
  }
  plan_restored_slots(plan, is_cell_or_free);
  for (const auto& v : stack_) plan.stack_is_null.push_back(v->kind == ValueKind::null);
  result.graph_break = std::move(plan);
  return true;
}

ValuePtr InstructionTranslator::break_restore_values(const GraphBreak& plan) {
  // The graph's result: the restored locals, then the non-NULL stack values.
  std::vector<ValuePtr> restore;
  for (int slot : plan.restored_locals) restore.push_back(locals_[static_cast<size_t>(slot)]);
  for (int slot : plan.restored_cells) restore.push_back(locals_[static_cast<size_t>(slot)]->items[0]);
  const auto& targets = plan.targets;
  for (size_t i = 0; i < stack_.size(); ++i) {
    const ValuePtr& v = stack_[i];
    if (v->kind == ValueKind::null) continue;
    // A loop's iterator reaches the resume function as a list of what is
    // left (ResumeTarget::stack_is_iterator): its own type (a generator,
    // zip, ...) cannot be observed there.
    bool loop_iterator = !targets.empty() && i < targets[0].stack_is_iterator.size() && targets[0].stack_is_iterator[i];
    if (v->kind == ValueKind::iterator && loop_iterator) {
      auto items = std::make_shared<Value>(*v);
      items->as_iterator().python_type = &PyListIter_Type;
      restore.push_back(std::move(items));
      continue;
    }
    restore.push_back(v);
  }
  return Value::sequence(ValueKind::tuple, std::move(restore));
}

}  // namespace tj::tracer
