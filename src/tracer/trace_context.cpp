// TraceContext's door onto the translator (trace_context.h): each member
// forwards to the one translator operation it names.
#include "tracer/trace_context.h"

#include "tracer/builtins.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "tracer/translate_call.h"
#include "tracer/translator.h"

namespace tj::tracer {

bool TraceContext::unsupported(std::string reason) { return t_.unsupported(std::move(reason)); }
bool TraceContext::failed() const { return t_.failed(); }
void TraceContext::journal(const ValuePtr& v) { t_.journal(v); }
void TraceContext::record_container_mutation(const ValuePtr& container) { t_.record_container_mutation(container); }

std::optional<std::vector<ValuePtr>> TraceContext::iterable_items(const ValuePtr& v, const std::string& who) {
  return t_.iterable_items(v, who);
}

void TraceContext::consume(const ValuePtr& v, size_t n) { t_.consume(v, n); }
bool TraceContext::may_stop_after(const ValuePtr& v, size_t n, const std::string& who) { return t_.may_stop_after(v, n, who); }
std::optional<bool> TraceContext::truthiness(const ValuePtr& v) { return t_.truthiness(v); }

ValuePtr TraceContext::call_value(const ValuePtr& fn, std::vector<ValuePtr> args, Kwargs kwargs) {
  return t_.call_value(fn, std::move(args), std::move(kwargs));
}

ValuePtr TraceContext::call_builtin(PyObject* fn, std::vector<ValuePtr> args, Kwargs kwargs) {
  return tracer::call_builtin(*this, fn, std::move(args), std::move(kwargs));
}

TraceShared& TraceContext::shared() { return *t_.shared_; }
const bc::Instruction* TraceContext::current_instruction() const { return t_.current_; }
const bc::Instruction* TraceContext::next_instruction() const {
  return t_.ip_ + 1 < t_.code_->instructions.size() ? t_.code_->instructions[t_.ip_ + 1].get() : nullptr;
}

const std::unordered_map<std::string, std::vector<std::vector<int64_t>>>* TraceContext::rank_sizes() const {
  return t_.frame_.rank_sizes;
}

void TraceContext::note_sizes_read(const char* what) { t_.note_sizes_read(what); }

ValuePtr TraceContext::number_binary_op(bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs) {
  return tracer::number_binary_op(t_, op, lhs, rhs);
}

ValuePtr TraceContext::number_function(PyObject* fn, const std::vector<ValuePtr>& args, bool& handled) {
  return tracer::number_function(t_, fn, args, handled);
}

bool TraceContext::shows_sizes(const ValuePtr& v) { return tracer::shows_sizes(v); }
ValuePtr TraceContext::specialize(const ValuePtr& v) { return tracer::specialize(t_, v); }
ValuePtr TraceContext::compare_sizes(int op, const ValuePtr& lhs, const ValuePtr& rhs) { return tracer::compare_sizes(t_, op, lhs, rhs); }
ValuePtr TraceContext::size_product(const std::vector<ValuePtr>& sizes) { return tracer::size_product(t_, sizes); }

PyObject* TraceContext::input_tensor_object(const ValuePtr& v) const { return t_.input_tensor_object(v); }
void TraceContext::note_identity_compared(const ValuePtr& a, const ValuePtr& b) { t_.note_identity_compared(a, b); }

void TraceContext::guard_identity(const ValuePtr& tensor, PyObject* obj) {
  t_.guards().add(Guard{GuardKind::id_match, tensor->source, PyRef::borrow(obj)});
}

void TraceContext::note_tensor_identity_matters() { t_.shared_->tensor_identity_matters = true; }

PyObject* TraceContext::frame_globals() const { return t_.frame_.globals; }
ValuePtr TraceContext::wrap_input(PyObject* obj, SourcePtr source) { return t_.wrap_input(obj, std::move(source)); }

graph::Graph& TraceContext::graph() { return t_.graph(); }
graph::SourceLoc TraceContext::current_loc() const { return t_.current_loc(); }
ValuePtr TraceContext::get_attr(const ValuePtr& obj, const std::string& name) { return tracer::get_attr(*this, obj, name); }

ValuePtr TraceContext::call_aten(const std::string& name, std::vector<ValuePtr> args, Kwargs kwargs) {
  return tracer::call_aten(t_, name, std::move(args), std::move(kwargs));
}

void TraceContext::prefix_failure(const std::string& prefix) {
  if (t_.failure_ && t_.failure_->reason.rfind(prefix, 0) != 0) t_.failure_->reason = prefix + t_.failure_->reason;
}

TraceContext::EffectCounts TraceContext::effect_counts() const {
  const TraceShared& shared = *t_.shared_;
  return EffectCounts{shared.side_effects.size(), shared.global_stores.size(), shared.autocast_calls.size(),
                      shared.size_facts.size()};
}

std::vector<TraceShared::GeneratorRun>& TraceContext::generator_runs() { return t_.shared_->generator_runs; }
bool& TraceContext::entry_grad_enabled() { return t_.shared_->entry_grad_enabled; }

void TraceContext::forget_sizes_outside_graph() {
  TraceShared* shared_ = t_.shared_.get();
  const graph::Graph& g = *shared_->graph;
  for (auto it = shared_->size_nodes.begin(); it != shared_->size_nodes.end();)
    it = g.contains(it->second) && g.contains(it->first.first) ? std::next(it) : shared_->size_nodes.erase(it);
  for (auto it = shared_->sizes_vary.begin(); it != shared_->sizes_vary.end();)
    it = g.contains(it->first) ? std::next(it) : shared_->sizes_vary.erase(it);
}

void TraceContext::add_guard(Guard guard) { t_.guards().add(std::move(guard)); }
void TraceContext::add_side_effect(SideEffect effect) { t_.shared_->side_effects.push_back(std::move(effect)); }

AutocastState& TraceContext::autocast_state() { return t_.shared_->autocast; }
std::vector<std::pair<ValuePtr, AutocastState>>& TraceContext::autocast_blocks() { return t_.shared_->autocast_blocks; }
std::vector<std::pair<ValuePtr, bool>>& TraceContext::autocast_calls() { return t_.shared_->autocast_calls; }

ValuePtr TraceContext::wrap_constant_result(PyRef obj) { return t_.wrap_constant_result(std::move(obj)); }

void TraceContext::note_module_name_absent(const ValuePtr& module, ModuleTable table, PyObject* name) {
  t_.note_module_name_absent(module, table, name);
}

bool TraceContext::has_guard(GuardKind kind, const Source& source) { return t_.guards().find(kind, source) != nullptr; }

ValuePtr TraceContext::tensor_binary_op(bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs) {
  return tracer::tensor_binary_op(t_, op, lhs, rhs);
}

ValuePtr TraceContext::tensor_attribute(const ValuePtr& tensor, const std::string& name) {
  return tracer::tensor_attribute(t_, tensor, name);
}

bool TraceContext::read_module_hooks(PyObject* owner, const SourcePtr& owner_source, const char* name,
                                     std::vector<ValuePtr>* out) {
  return t_.read_module_hooks(owner, owner_source, name, out);
}

PyCodeObject* TraceContext::frame_code() const { return t_.frame_.code; }
PyObject* TraceContext::frame_closure() const { return t_.frame_.closure; }
ValuePtr TraceContext::frame_slot(int slot) const { return t_.locals_[static_cast<size_t>(slot)]; }
ValuePtr TraceContext::load_local(int slot) { return t_.load_local(slot); }
ValuePtr TraceContext::compiled_frame_cell(int slot) { return t_.inlined_ ? nullptr : t_.frame_free_cell(slot, true); }

bool TraceContext::inline_caller(long level, graph::SourceLoc* loc, PyObject** globals) const {
  const InstructionTranslator* at = &t_;
  for (long l = 1; l < level && at; ++l) at = at->parent_;
  if (!at) return false;
  *loc = at->current_loc();
  *globals = at->frame_.globals;
  return true;
}

int TraceContext::inline_depth() const { return t_.depth_; }

size_t TraceContext::root_instruction_index() const {
  const InstructionTranslator* top = &t_;
  while (top->parent_) top = top->parent_;
  return top->ip_;
}

}  // namespace tj::tracer
