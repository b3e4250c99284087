// In-place steps of derivative formulas, told apart while AOT records them.
//
// Eager's derivative formulas end some results in an in-place op
// (maximum's `where(...).masked_fill_(self < other, 0)`), which keeps its
// operand's layout; functionalization records the out-of-place op, whose
// kernel lays its result out anew (masked_fill clones contiguously). A
// gradient's strides on its size-1 dims follow those layouts in eager
// (AccumulateGrad keeps them), so the backward node must know which
// recorded ops were such steps. While an `InplaceStepScope` is alive, a
// dispatch mode key (LibTorch's TESTING_ONLY_GenericMode, which nothing
// else in the process uses) sees every op call first and keeps a stack of
// them; `in_inplace_step(op)` says whether the op about to be recorded is
// the out-of-place call functionalization made for the in-place call just
// above it. The recorder tags such nodes `inplace_step` (graph/graph.h);
// only the backward node's layout inference reads the tag, so no value
// ever depends on it.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace tj::graph::aot::detail {

class InplaceStepScope {
 public:
  InplaceStepScope();
  InplaceStepScope(const InplaceStepScope&) = delete;
  InplaceStepScope& operator=(const InplaceStepScope&) = delete;

 private:
  c10::impl::IncludeDispatchKeyGuard include_;
};

// Whether out-of-place `op`, being recorded now, is what functionalization
// runs for an in-place call of the same op (`masked_fill_` ->
// `masked_fill`) made while an InplaceStepScope is alive.
bool in_inplace_step(const c10::OperatorHandle& op);

}  // namespace tj::graph::aot::detail
