// Whether an AOT size template's fits hold at sizes it has not run at
// (aot_template.cpp's aot_capture_from_template; issue 39).
//
// A template recovers its ints from sample points (graph/size_template.h):
// the functional graph's int arguments, the plan's view geometries (the
// views of inputs, outputs and intermediates the wrapper makes with
// as_strided, inputs' new layouts, the layouts outputs are copied into),
// the tangents' sizes. A fit that every point kept may not hold elsewhere:
// a literal bound (`y[:, :5]`'s width min(n, 5), fitted as 5 when n > 5 at
// every point), a min() of sizes inside a kernel (a diagonal's length), an
// affine relation between classes. Guards on orders and bounds
// (SizeTemplate::orders, bounds) cover only some of these, so before a
// template serves new sizes each fit the runtime relies on is checked
// against what these sizes give: the captured graph run once with eager's
// semantics on meta tensors (eager_meta.h, as capture runs it) gives each
// output's and input's sizes, strides and offset, and the template's graph
// specialized for these sizes (meta inference) gives its outputs' sizes.
// A misfit means the template does not serve these sizes (they are
// captured), found before anything runs. The caller keeps the result per
// size, so a size costs one check. Ints used only inside the graph (a slice
// end feeding a 0-d sum, an arange's length) no output shows: the caller
// also compares the specialized graph node by node with a capture at these
// sizes (aot_template.cpp, capture_misfit).
#pragma once

#include <string>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include "compile/aot/backward_node.h"
#include "graph/graph.h"

namespace tj::jit::aot_rt {

// Why `plan` (the template's plan with its geometries evaluated at these
// sizes) and `specialized` (the template's graph specialized for them: the
// forward graph, or the joint one with its tangents' sizes derived) do not
// give what `original` (the captured graph at these sizes) gives eagerly
// for `example_inputs`; "" when they do. `grad_enabled`: the mode the graph
// runs under.
std::string template_misfit(const Plan& plan, const graph::Graph& original, c10::ArrayRef<at::Tensor> example_inputs,
                            const graph::Graph& specialized, bool grad_enabled);

}  // namespace tj::jit::aot_rt
