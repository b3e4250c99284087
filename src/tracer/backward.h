// The backward family of the tracer (translate_backward.cpp), as free
// functions over a TraceContext (trace_context.h): `loss.backward()`,
// `torch.autograd.backward(loss)` and `torch.autograd.grad(...)` traced
// into one autograd_grad node each, and the check after the graph is
// finished that no tensor requiring grad outlives a traced backward. They
// see the values they are given and the context's operations, not the
// translator.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "tracer/trace_context.h"

namespace tj::tracer {

// `loss.backward()` / `torch.autograd.backward(loss)` (`tensor_method`:
// args start with the tensor): one autograd_grad node and eager's `.grad`
// writes, or a break with the reason.
ValuePtr trace_backward(TraceContext cx, std::vector<ValuePtr> args, TraceContext::Kwargs kwargs, bool tensor_method);
// `torch.autograd.grad(outputs, inputs, ...)` of tensors passed in: the
// gradients as a tuple, or a break with the reason.
ValuePtr trace_autograd_grad(TraceContext cx, std::vector<ValuePtr> args, TraceContext::Kwargs kwargs);
// After the graph `g` of a trace is finished: when a tensor requiring grad
// with history a traced backward did not free outlives it, the root
// instruction to break at and why (trace_frame traces again with that
// break); nullopt otherwise.
std::optional<std::pair<int, std::string>> find_backward_escape(const TraceShared& shared, const graph::Graph& g);

}  // namespace tj::tracer
