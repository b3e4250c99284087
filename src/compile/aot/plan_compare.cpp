// Comparing and fitting AOT plans across sizes; see plan_compare.h.
#include "compile/aot/plan_compare.h"

#include "compile/aot/capture.h"
#include "graph/printer.h"

namespace tj::jit::aot_rt {

namespace {

// The same rank and dtype: sizes, strides and offset may be size forms.
bool same_geometry(const graph::aot::Geometry& a, const graph::aot::Geometry& b) {
  return a.sizes.size() == b.sizes.size() && a.strides.size() == b.strides.size() && a.dtype == b.dtype;
}

// The same view ops with the same arguments (the placeholder aside), or
// both null: a template serves every size with one replay only when the
// captured graphs of every size made the view alike.
bool same_replay(const graph::Graph* a, const graph::Graph* b) {
  if (!a || !b) return a == b;
  const std::vector<graph::Node*> x = a->nodes(), y = b->nodes();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i]->kind() != y[i]->kind()) return false;
    if (x[i]->kind() != graph::NodeKind::call_function) continue;
    if (x[i]->op() != y[i]->op() || x[i]->args().size() != y[i]->args().size() ||
        x[i]->kwargs().size() != y[i]->kwargs().size())
      return false;
    for (size_t j = 1; j < x[i]->args().size(); ++j)
      if (graph::format_arg(x[i]->args()[j]) != graph::format_arg(y[i]->args()[j])) return false;
    for (size_t j = 0; j < x[i]->kwargs().size(); ++j)
      if (x[i]->kwargs()[j].first != y[i]->kwargs()[j].first ||
          graph::format_arg(x[i]->kwargs()[j].second) != graph::format_arg(y[i]->kwargs()[j].second))
        return false;
  }
  return true;
}

}  // namespace

Expected<GeometryForm> fit_geometry(const graph::aot::SizeTemplate& t,
                                    const std::vector<const graph::aot::Geometry*>& at_points,
                                    const std::string& what) {
  GeometryForm out;
  auto fit = [&](auto read, const std::string& field) -> Expected<graph::aot::SizeInt> {
    std::vector<int64_t> values;
    for (const graph::aot::Geometry* g : at_points) values.push_back(read(*g));
    return graph::aot::fit_size_int(t, values, what + "'s " + field);
  };
  for (size_t d = 0; d < at_points[0]->sizes.size(); ++d) {
    auto size = fit([d](const graph::aot::Geometry& g) { return g.sizes[d]; }, "size " + std::to_string(d));
    if (!size) return size.error();
    out.sizes.push_back(*size);
    auto stride = fit([d](const graph::aot::Geometry& g) { return g.strides[d]; }, "stride " + std::to_string(d));
    if (!stride) return stride.error();
    out.strides.push_back(*stride);
  }
  auto offset = fit([](const graph::aot::Geometry& g) { return g.offset_delta; }, "offset");
  if (!offset) return offset.error();
  out.offset_delta = *offset;
  return out;
}

std::string plan_difference(const Plan& a, const Plan& b) {
  if (a.unique_of != b.unique_of || a.has_duplicates != b.has_duplicates) return "the inputs' deduplication";
  if (a.inputs.size() != b.inputs.size()) return "the number of unique inputs";
  for (size_t u = 0; u < a.inputs.size(); ++u) {
    const auto& x = a.inputs[u];
    const auto& y = b.inputs[u];
    if (x.synthetic_base || y.synthetic_base) return "inputs merged into a synthetic base";
    if (x.position != y.position || x.requires_grad != y.requires_grad || x.data_mutated != y.data_mutated ||
        x.meta_mutated != y.meta_mutated || x.version_bumps != y.version_bumps ||
        !same_geometry(x.final_geometry, y.final_geometry))
      return "input " + std::to_string(x.position) + "'s mutations";
  }
  if (a.outputs.size() != b.outputs.size()) return "the number of outputs";
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    const auto& x = a.outputs[k];
    const auto& y = b.outputs[k];
    if (x.kind != y.kind || x.source != y.source || x.detached != y.detached || x.creation_meta != y.creation_meta ||
        x.of_detached_base != y.of_detached_base)
      return "output " + std::to_string(k) + "'s aliasing";
    if (!same_geometry(x.geometry, y.geometry))
      return "output " + std::to_string(k) + "'s view geometry (" + graph::aot::output_kind_name(x.kind) + ")";
    if (!same_replay(x.replay.get(), y.replay.get()) || x.replay_from != y.replay_from || x.grad_base != y.grad_base)
      return "output " + std::to_string(k) + "'s view ops (replayed: their arguments depend on the sizes)";
  }
  if (a.relayouts.size() != b.relayouts.size()) return "the outputs copied into eager's layout";
  for (size_t i = 0; i < a.relayouts.size(); ++i)
    if (a.relayouts[i].first != b.relayouts[i].first || !same_geometry(a.relayouts[i].second, b.relayouts[i].second))
      return "an output copied into eager's layout";
  if (a.mutated != b.mutated || a.meta_mutated != b.meta_mutated || a.versioned != b.versioned)
    return "the mutated inputs";
  if (a.num_fresh != b.num_fresh || a.num_bases != b.num_bases || a.num_fw_outputs != b.num_fw_outputs)
    return "the forward graph's outputs";
  if (a.compiled_for_grad != b.compiled_for_grad || a.enables_grad != b.enables_grad ||
      a.has_backward != b.has_backward)
    return "grad";
  return "";
}


}  // namespace tj::jit::aot_rt
