// Which ATen ops give a result that depends on the values in their input
// tensors rather than on their sizes alone: an output whose size is a count
// of the data (nonzero, a boolean mask's selection, unique, bincount), or a
// Python value read from it (item, equal, is_nonzero). Meta inference cannot
// describe such a result from fake tensors; the tracer keeps the sizes it
// can in the graph (unbacked_sizes.h) and breaks the graph on the others.
// This is a property of the op and its arguments, one table in
// data_dependent_ops.cpp, never read from LibTorch's error text; AOT
// capture (compile/aot/proxy.cpp) refuses the same calls, and the few more
// of kCaptureRefusals.
#pragma once

#include <string_view>
#include <vector>

#include <c10/util/ArrayRef.h>

#include <ATen/core/ivalue.h>

namespace tj::graph {

struct OpInfo;

// Whether a call of `op` with the boxed arguments `stack` (meta tensors and
// constants, in schema order) has a result that depends on tensor data.
bool result_depends_on_data(const OpInfo& op, const std::vector<c10::IValue>& stack);
// The same by the op's schema name ("aten::nonzero") and overload name.
bool result_depends_on_data(std::string_view name, std::string_view overload, c10::ArrayRef<c10::IValue> stack);

// Whether AOT capture on proxy tensors must refuse the call (the runtime
// then runs the frame uncompiled): a result that depends on data, or an op
// of kCaptureRefusals, which capture refuses whatever its arguments.
bool capture_refuses(std::string_view name, std::string_view overload, c10::ArrayRef<c10::IValue> stack);

}  // namespace tj::graph
