// The dispatch mode that tells in-place formula steps apart; see
// inplace_steps.h.
#include "compile/aot/inplace_steps.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/stack.h>
#include <torch/library.h>

namespace tj::graph::aot::detail {

namespace {

constexpr c10::DispatchKey kModeKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

struct Call {
  const c10::OperatorHandle* op;
  bool inplace;
};

thread_local std::vector<Call> t_calls;

bool writes_self(const c10::FunctionSchema& schema) {
  if (schema.arguments().empty() || schema.arguments()[0].is_out()) return false;
  const auto* alias = schema.arguments()[0].alias_info();
  return alias && alias->isWrite();
}

// Every op call while the mode is on: noted, then run below the mode key.
// The engine's worker threads inherit the included key with the rest of
// the thread-local state, so the stack is per thread, as the calls are.
void note_call(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  t_calls.push_back({&op, writes_self(op.schema())});
  struct Pop {
    ~Pop() { t_calls.pop_back(); }
  } pop;
  op.redispatchBoxed(ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kModeKey), stack);
}

void ensure_registered() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> lib;
  std::call_once(once, [] {
    lib = std::make_unique<torch::Library>(torch::Library::IMPL, "_", kModeKey, __FILE__, __LINE__);
    lib->fallback(torch::CppFunction::makeFromBoxedFunction<&note_call>());
  });
}

std::string base_of(const c10::FunctionSchema& schema) {
  std::string name = schema.name();
  if (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

}  // namespace

InplaceStepScope::InplaceStepScope()
    : include_((ensure_registered(), kModeKey)) {}

bool in_inplace_step(const c10::OperatorHandle& op) {
  if (t_calls.size() < 2) return false;
  const Call& self = t_calls.back();
  const Call& caller = t_calls[t_calls.size() - 2];
  if (self.op->operator_name() != op.operator_name() || self.inplace || !caller.inplace) return false;
  const c10::FunctionSchema& inner = op.schema();
  const c10::FunctionSchema& outer = caller.op->schema();
  return base_of(inner) == base_of(outer) && inner.overload_name() == outer.overload_name();
}

}  // namespace tj::graph::aot::detail
