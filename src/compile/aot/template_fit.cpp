// Whether an AOT size template's fits hold at new sizes; see template_fit.h.
#include "compile/aot/template_fit.h"

#include <sstream>
#include <vector>

#include "compile/aot/aot_template.h"
#include "compile/aot/capture.h"
#include "compile/aot/plan_compare.h"
#include "graph/size_template.h"

namespace tj::jit {

namespace {

using graph::aot::Geometry;

std::string text(const Geometry& g) {
  std::ostringstream os;
  os << "sizes " << c10::IntArrayRef(g.sizes) << " strides " << c10::IntArrayRef(g.strides) << " offset "
     << g.offset_delta << " " << g.dtype;
  return os.str();
}

// What geometry `i` of aot_rt::geometries_of(plan) is, for messages.
std::string geometry_name(const aot_rt::Plan& plan, size_t i) {
  if (i < plan.inputs.size()) return "input " + std::to_string(plan.inputs[i].position) + "'s new layout";
  i -= plan.inputs.size();
  if (i < plan.outputs.size())
    return "output " + std::to_string(i) + "'s view (" + graph::aot::output_kind_name(plan.outputs[i].kind) + ")";
  i -= plan.outputs.size();
  return "the layout output slot " + std::to_string(plan.relayouts[i].first) + " is copied into";
}

}  // namespace

std::string geometry_difference(const Geometry& fitted, const Geometry& captured) {
  if (fitted.sizes == captured.sizes && fitted.strides == captured.strides &&
      fitted.offset_delta == captured.offset_delta && fitted.dtype == captured.dtype)
    return "";
  return "fitted " + text(fitted) + ", their capture's " + text(captured);
}

std::string capture_misfit(const aot_rt::Plan& plan, const std::shared_ptr<const graph::Graph>& graph,
                           c10::ArrayRef<at::Tensor> example_inputs, const AotOptions& options,
                           const graph::Graph& specialized) {
  auto captured = aot_capture(graph, example_inputs, options);
  if (!captured) return "capturing them fails: " + captured.error().message;
  const aot_rt::Plan& fresh = *captured->plan->plan;
  if (std::string why = aot_rt::plan_difference(plan, fresh); !why.empty()) return "their capture's metadata: " + why;
  const std::vector<const Geometry*> a = aot_rt::geometries_of<const aot_rt::Plan, const Geometry>(plan);
  const std::vector<const Geometry*> b = aot_rt::geometries_of<const aot_rt::Plan, const Geometry>(fresh);
  if (a.size() != b.size()) return "their capture's number of view geometries";
  for (size_t i = 0; i < a.size(); ++i)
    if (std::string why = geometry_difference(*a[i], *b[i]); !why.empty()) return geometry_name(plan, i) + ": " + why;
  if (std::string why = graph::aot::graph_difference(specialized, *captured->graph); !why.empty())
    return "the template's graph for them " + why + " from their capture";
  return "";
}

}  // namespace tj::jit
