// TraceContext's door onto the translator (trace_context.h): each member
// forwards to the one translator operation it names.
#include "tracer/trace_context.h"

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
  return t_.call_builtin(fn, std::move(args), std::move(kwargs));
}

bool TraceContext::shows_sizes(const ValuePtr& v) { return InstructionTranslator::shows_sizes(v); }
ValuePtr TraceContext::specialize(const ValuePtr& v) { return t_.specialize(v); }
ValuePtr TraceContext::compare_sizes(int op, const ValuePtr& lhs, const ValuePtr& rhs) { return t_.compare_sizes(op, lhs, rhs); }
ValuePtr TraceContext::size_product(const std::vector<ValuePtr>& sizes) { return t_.size_product(sizes); }

PyObject* TraceContext::input_tensor_object(const ValuePtr& v) const { return t_.input_tensor_object(v); }
void TraceContext::note_identity_compared(const ValuePtr& a, const ValuePtr& b) { t_.note_identity_compared(a, b); }

void TraceContext::guard_identity(const ValuePtr& tensor, PyObject* obj) {
  t_.guards().add(Guard{GuardKind::id_match, tensor->source, PyRef::borrow(obj)});
}

void TraceContext::note_tensor_identity_matters() { t_.shared_->tensor_identity_matters = true; }

}  // namespace tj::tracer
