// AOT size templates (runtime_wrapper.h's aot_generalize, aot_specialize):
// the captures of a dynamic entry's first sizes made one template, and a
// size served from it in place of a capture.
#include "compile/aot/aot_template.h"

#include <string>
#include <tuple>

#include "compile/aot/steps.h"
#include "compile/aot/template_fit.h"
#include "graph/printer.h"

namespace tj::jit {

using aot_rt::fit_geometry;
using aot_rt::GeometryForm;
using aot_rt::geometries_of;
using aot_rt::Plan;
using aot_rt::plan_difference;

CaptureMode capture_mode(bool enables_grad, bool no_grad_throughout, bool grad_enabled,
                         c10::ArrayRef<at::Tensor> inputs) {
  CaptureMode m{enables_grad, no_grad_throughout};
  m.records_grad = !no_grad_throughout && (grad_enabled || enables_grad);
  for (const at::Tensor& t : inputs) m.joint |= m.records_grad && t.defined() && t.requires_grad();
  return m;
}

Expected<std::shared_ptr<const AotTemplate>> aot_generalize(
    const std::vector<std::shared_ptr<const AotPoint>>& points) {
  if (points.size() < 3) return Error{"fewer than three captures"};
  std::vector<const graph::Graph*> graphs;
  for (const auto& p : points) {
    if (std::string why = plan_difference(*points[0]->plan, *p->plan); !why.empty())
      return Error{"the AOT metadata differs between the sizes: " + why};
    graphs.push_back(p->captured.get());
  }
  // (Output views replayed by view ops: alike at every size, see plan_difference.)
  const Plan& plan = *points[0]->plan;
  // a joint graph's tangents are shaped as the outputs they stand for
  // (bounds: a template checks the sizes of its classes against the fixed ones too)
  auto t = graph::aot::generalize_sizes(graphs, plan.has_backward ? static_cast<int>(plan.inputs.size()) : -1, true);
  if (!t) return t.error();
  std::vector<std::vector<const graph::aot::Geometry*>> per_point;
  for (const auto& p : points) per_point.push_back(geometries_of<const Plan, const graph::aot::Geometry>(*p->plan));
  std::vector<GeometryForm> geometries;
  for (size_t i = 0; i < per_point[0].size(); ++i) {
    std::vector<const graph::aot::Geometry*> at_points;
    for (const auto& g : per_point) at_points.push_back(g[i]);
    auto form = fit_geometry(*t, at_points, "view geometry " + std::to_string(i));
    if (!form) return form.error();
    geometries.push_back(std::move(*form));
  }
  return std::make_shared<const AotTemplate>(AotTemplate{points[0]->plan, std::move(*t), std::move(geometries)});
}

Expected<AotCaptured> aot_capture_from_template(const AotTemplate& t, std::shared_ptr<const graph::Graph> graph,
                                                c10::ArrayRef<at::Tensor> example_inputs, const AotOptions& options) {
  const Plan& p = *t.plan;
  if (example_inputs.size() != p.unique_of.size()) return Error{"another number of inputs"};
  // aot_compile must capture these inputs as the template's captures were
  const CaptureMode mode = capture_mode(p.enables_grad, p.no_grad_throughout, options.grad_enabled, example_inputs);
  bool same_capture = mode.joint == p.compiled_for_grad;
  std::vector<graph::TensorMeta> metas;
  for (const auto& in : p.inputs) {
    const at::Tensor& x = example_inputs[static_cast<size_t>(in.position)];
    same_capture &= !p.compiled_for_grad || x.requires_grad() == in.requires_grad;
    metas.push_back(graph::TensorMeta::of(x));
  }
  if (!same_capture) return Error{"the inputs' requires_grad or grad mode differ from the captures'"};
  const std::vector<graph::TensorMeta>& given = metas;  // the template's given inputs
  if (std::string why = graph::aot::template_mismatch(t.captured, given); !why.empty()) return Error{why};
  AotCaptured out;
  std::optional<AllSizePrograms::Served> served = t.programs->serving(t.captured, given);
  out.one_program = served && (!p.has_backward || served->backward);
  // the graph for these sizes, made whether or not a program for every
  // size runs: the fits are checked against its metas (below), and where
  // one program with a backward serves, it is partitioned for what only a
  // backward graph of these sizes can do (Plan::layout_graph; a partition,
  // no backend compile): the layout inference of computed gradients
  // (AccumulateGrad keeps a size-1 dim's stride, which eager's formulas give
  // and the program need not) and the run without absent tangents after a
  // NaN or inf
  auto specialized = graph::aot::specialize_sizes(t.captured, metas);
  if (!specialized) return specialized.error();
  out.for_layouts = out.one_program && p.has_backward;
  auto plan = std::make_shared<Plan>(p);
  // the first capture's backward graph and saved sets need not be those of
  // the program serving these sizes: aot_partition sets them for a size it
  // partitions; the one program for every size runs without them
  // (backward_node.cpp keeps every saved value while a tangent is pending)
  plan->backward_graph = nullptr;
  plan->grad_layout_cache = std::make_shared<Plan::GradLayoutCache>();
  plan->tangent_saved.clear();
  std::vector<graph::aot::Geometry*> geometries = geometries_of<Plan, graph::aot::Geometry>(*plan);
  for (size_t i = 0; i < geometries.size(); ++i) {
    const GeometryForm& form = t.geometries[i];
    for (size_t d = 0; d < form.sizes.size(); ++d) {
      geometries[i]->sizes[d] = graph::aot::eval_size_int(t.captured, form.sizes[d], metas);
      geometries[i]->strides[d] = graph::aot::eval_size_int(t.captured, form.strides[d], metas);
    }
    geometries[i]->offset_delta = graph::aot::eval_size_int(t.captured, form.offset_delta, metas);
  }
  // Every fit the runtime relies on, against a capture at these sizes (a
  // literal bound or a min() of sizes that every point kept, an int inside
  // the graph): a misfit is found here, before anything runs, and these
  // sizes are captured for themselves (template_fit.h).
  if (std::string why = capture_misfit(*plan, graph, example_inputs, options, **specialized); !why.empty())
    return Error{"the template's fit does not hold at these sizes: " + why};
  if (!out.one_program || options.specialize_graphs || out.for_layouts) {
    out.graph = std::shared_ptr<const graph::Graph>(std::move(*specialized));
    out.joint = p.has_backward;
  }
  plan->original = std::move(graph);
  if (out.one_program) {
    out.served_forward = std::move(served->forward);
    out.served_backward = std::move(served->backward);
  }
  out.plan = std::make_shared<AotPlan>(AotPlan{std::move(plan)});
  out.summary = "(the AOT size template, specialized)";
  out.from_template = &t;
  out.given = std::move(metas);
  return out;
}

Expected<CompiledFn> aot_specialize(const AotTemplate& t, std::shared_ptr<const graph::Graph> graph,
                                           c10::ArrayRef<at::Tensor> example_inputs, const Backend& backend,
                                           const AotOptions& options, AotGraphs* graphs_out) {
  auto captured = aot_capture_from_template(t, std::move(graph), example_inputs, options);
  if (!captured) return captured.error();
  AotPartitioned part;
  if (captured->graph) {
    auto partitioned = aot_partition(*captured, backend);
    if (!partitioned) return partitioned.error();
    part = std::move(*partitioned);
  }
  if (graphs_out) {
    graphs_out->forward = part.forward;
    graphs_out->backward = part.backward;
    graphs_out->one_program = captured->one_program;
  }
  AotCompiledGraphs compiled{captured->served_forward, captured->served_backward};
  if (!captured->one_program) {
    auto made = aot_compile_graphs(*captured, part.forward, part.backward, backend, options.where);
    if (!made) return made.error();
    compiled = std::move(*made);
  }
  if (graphs_out) graphs_out->summary = captured->summary;
  return aot_runtime_wrapper(*captured, std::move(compiled));
}

const graph::aot::SizeTemplate& aot_template_graph(const AotTemplate& t) { return t.captured; }

std::string aot_graphs_differ(const AotGraphs& from_template, const AotGraphs& captured) {
  auto text = [](const std::shared_ptr<const graph::Graph>& g) {
    std::string s = g ? graph::print_graph(*g) : "(none)\n";
    for (const std::string flag : {"{grad}", ", grad}"}) {
      for (size_t at = 0; (at = s.find(flag, at)) != std::string::npos;)
        s.replace(at, flag.size(), flag[0] == '{' ? "" : "}");
    }
    return s;
  };
  for (auto [what, a, b] : {std::tuple{"forward", from_template.forward, captured.forward},
                            std::tuple{"backward", from_template.backward, captured.backward}})
    if (text(a) != text(b)) return std::string(what) + " graph from the template:\n" + text(a) + "captured:\n" + text(b);
  return "";
}

}  // namespace tj::jit
