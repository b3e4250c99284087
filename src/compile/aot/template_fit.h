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
// affine relation between classes, an int used only inside the graph (a
// slice end feeding a 0-d sum, an arange's length). Guards on orders and
// bounds (SizeTemplate::orders, bounds) cover only some of these, so before
// a template serves new sizes they are captured once (AOT's capture: no
// partition, no backend compile) and the template's plan and graph
// specialized for them are compared with that capture. A misfit means the
// template does not serve these sizes (they are captured and compiled for
// themselves), found before anything runs. The caller keeps the result per
// size, so a size costs one capture.
#pragma once

#include <memory>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include "compile/aot/backward_node.h"
#include "compile/aot/steps.h"
#include "graph/graph.h"

namespace tj::jit {

// "" when the view geometries `fitted` (the template's, evaluated at these
// sizes) and `captured` (a capture's at them) agree: sizes, strides,
// offset and dtype; else both.
std::string geometry_difference(const graph::aot::Geometry& fitted, const graph::aot::Geometry& captured);

// Why `plan` (the template's plan with its geometries evaluated at these
// sizes) and `specialized` (the template's graph specialized for them) are
// not what a capture of `graph` for `example_inputs` gives: the capture's
// metadata, every view geometry, and the graphs node by node (targets,
// every int argument, every node's metas: the outputs' and tangents'
// sizes among them). "" when they agree.
std::string capture_misfit(const aot_rt::Plan& plan, const std::shared_ptr<const graph::Graph>& graph,
                           c10::ArrayRef<at::Tensor> example_inputs, const AotOptions& options,
                           const graph::Graph& specialized);

}  // namespace tj::jit
