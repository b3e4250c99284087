// Whether an AOT size template's fits hold at new sizes; see template_fit.h.
#include "compile/aot/template_fit.h"

#include <optional>
#include <sstream>

#include "compile/aot/capture_driver.h"

namespace tj::jit::aot_rt {

namespace {

using graph::aot::Geometry;
using graph::aot::OutputKind;
using graph::aot::capture_impl::eager_geometry;
using graph::aot::capture_impl::shares_storage;
using graph::aot::detail::EagerMeta;

std::string text(const Geometry& g) {
  std::ostringstream os;
  os << "sizes " << c10::IntArrayRef(g.sizes) << " strides " << c10::IntArrayRef(g.strides) << " offset "
     << g.offset_delta;
  return os.str();
}

// "" when the fitted geometry `fitted` is eager's `eager`, else both.
std::string differs(const Geometry& fitted, const Geometry& eager) {
  if (fitted.sizes == eager.sizes && fitted.strides == eager.strides && fitted.offset_delta == eager.offset_delta &&
      fitted.dtype == eager.dtype)
    return "";
  return "fitted " + text(fitted) + ", eager's " + text(eager);
}

// Eager's tensor for each forward output slot (the mutated inputs' new
// values, the fresh outputs, the intermediate bases); undefined where its
// sizes are not the input's (an input whose layout is changed too).
std::vector<at::Tensor> slot_tensors(const Plan& p, const EagerMeta& e) {
  std::vector<at::Tensor> out(static_cast<size_t>(p.num_fw_outputs));
  for (size_t i = 0; i < p.mutated.size(); ++i) {
    const auto& in = p.inputs[static_cast<size_t>(p.mutated[i])];
    if (!in.meta_mutated) out[i] = e.inputs[static_cast<size_t>(in.position)];
  }
  const size_t fresh0 = p.mutated.size(), base0 = fresh0 + static_cast<size_t>(p.num_fresh);
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const auto& o = p.outputs[k];
    if (o.kind == OutputKind::fresh) out[fresh0 + static_cast<size_t>(o.source)] = e.outputs[k];
    if (o.kind == OutputKind::view_of_intermediate) out[base0 + static_cast<size_t>(o.source)] = e.root_of(e.outputs[k]);
  }
  return out;
}

// Eager's geometry of output `k`, a view, relative to the base the wrapper
// makes it from; nullopt when eager's output views another storage.
std::optional<Geometry> eager_view(const Plan& p, const EagerMeta& e, size_t k) {
  const auto& o = p.outputs[k];
  const at::Tensor& out = e.outputs[k];
  const auto src = static_cast<size_t>(o.source);
  at::Tensor base;
  int64_t base_offset = 0;
  if (o.kind == OutputKind::view_of_input) {
    base = e.inputs[src];
    base_offset = e.offsets[src];
  } else {
    base = o.kind == OutputKind::view_of_output ? e.outputs[src] : e.root_of(out);
    if (base.defined()) base_offset = base.storage_offset();
  }
  if (!base.defined() || !shares_storage(base, out)) return std::nullopt;
  return eager_geometry(out, base_offset, base.scalar_type());
}

// The plan's geometries (inputs' new layouts, output views, relayouts)
// against eager's.
std::string geometry_misfit(const Plan& p, const EagerMeta& e, c10::ArrayRef<at::Tensor> inputs,
                            const std::vector<at::Tensor>& slots) {
  for (const auto& in : p.inputs) {
    const auto pos = static_cast<size_t>(in.position);
    const at::Tensor& after = e.inputs[pos];
    const at::Tensor& before = inputs[pos];
    const bool moved = after.sizes() != before.sizes() || after.strides() != before.strides() ||
                       after.storage_offset() != before.storage_offset();
    if (moved != in.meta_mutated) return "input " + std::to_string(pos) + "'s layout after the call";
    if (!in.meta_mutated) continue;
    const std::string why =
        differs(in.final_geometry, eager_geometry(after, before.storage_offset(), after.scalar_type()));
    if (!why.empty()) return "input " + std::to_string(pos) + "'s new layout: " + why;
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const auto& o = p.outputs[k];
    if (o.kind == OutputKind::input && !e.outputs[k].is_same(e.inputs[static_cast<size_t>(o.source)]))
      return "output " + std::to_string(k) + " is not the input itself";
    if (o.kind != OutputKind::view_of_input && o.kind != OutputKind::view_of_output &&
        o.kind != OutputKind::view_of_intermediate)
      continue;
    std::optional<Geometry> eager = eager_view(p, e, k);
    if (!eager) return "output " + std::to_string(k) + " views another tensor";
    if (std::string why = differs(o.geometry, *eager); !why.empty())
      return "output " + std::to_string(k) + "'s view (" + graph::aot::output_kind_name(o.kind) + "): " + why;
  }
  for (const auto& [slot, g] : p.relayouts) {
    const at::Tensor& t = slots[static_cast<size_t>(slot)];
    if (!t.defined() || c10::IntArrayRef(g.sizes) != t.sizes() || c10::IntArrayRef(g.strides) != t.strides())
      return "the layout output slot " + std::to_string(slot) + " is copied into";
  }
  return "";
}

// The specialized graph's forward outputs and tangents against eager's sizes.
std::string size_misfit(const Plan& p, const graph::Graph& specialized, const std::vector<at::Tensor>& slots) {
  const std::vector<const graph::Node*> outs = graph::aot::flat_output_nodes(specialized);
  auto meta_of = [](const graph::Node* n) { return n ? n->meta().tensor() : nullptr; };
  if (outs.size() < slots.size()) return "the specialized graph's outputs";
  for (size_t s = 0; s < slots.size(); ++s) {
    if (!slots[s].defined()) continue;
    const graph::TensorMeta* m = meta_of(outs[s]);
    if (!m || c10::IntArrayRef(m->sizes) != slots[s].sizes() || m->dtype != slots[s].scalar_type())
      return "output slot " + std::to_string(s) + "'s sizes: the template's graph gives " +
             (m ? c10::str(c10::IntArrayRef(m->sizes)) : "none") + ", eager " + c10::str(slots[s].sizes());
  }
  if (!p.has_backward) return "";
  const std::vector<graph::Node*> phs = specialized.placeholders();
  for (size_t i = 0; i < p.differentiable.size(); ++i) {
    const size_t ph = p.inputs.size() + i;
    const at::Tensor& t = slots[static_cast<size_t>(p.differentiable[i])];
    const graph::TensorMeta* m = ph < phs.size() ? phs[ph]->meta().tensor() : nullptr;
    if (!m || (t.defined() && c10::IntArrayRef(m->sizes) != t.sizes()))
      return "tangent " + std::to_string(i) + "'s sizes";
  }
  return "";
}

}  // namespace

std::string template_misfit(const Plan& plan, const graph::Graph& original, c10::ArrayRef<at::Tensor> example_inputs,
                            const graph::Graph& specialized, bool grad_enabled) {
  graph::aot::capture_impl::SavedTensorHooksOff no_saved_tensor_hooks;
  Expected<EagerMeta> run = Error{""};
  try {
    run = graph::aot::detail::run_eager_meta(original, example_inputs, grad_enabled);
  } catch (const std::exception& ex) {
    return std::string("eager's metas at these sizes: ") + ex.what();
  }
  if (!run) return "eager's metas at these sizes: " + run.error().message;
  const EagerMeta& e = *run;
  if (!e.unsupported.empty()) return e.unsupported;
  if (e.outputs.size() != plan.outputs.size() || e.inputs.size() != example_inputs.size())
    return "another number of outputs";
  const std::vector<at::Tensor> slots = slot_tensors(plan, e);
  if (std::string why = geometry_misfit(plan, e, example_inputs, slots); !why.empty()) return why;
  return size_misfit(plan, specialized, slots);
}

}  // namespace tj::jit::aot_rt
