// The AOT runtime wrapper (the seed's create_runtime_wrapper +
// aot_dispatch_base / aot_dispatch_autograd); see aot.h.
//
// One immutable `Plan` (backward_node.h) per compiled graph, shared by the CompiledFn and by
// every autograd node it creates. A call: (1) checks the aliasing the
// capture assumed (duplicated positions are the same tensor, mutated inputs
// share memory with no other input, no input requires grad unless compiled
// for it) and otherwise runs the captured graph op by op (always correct);
// (2) runs the compiled forward on the unique inputs (under no_grad when a
// backward node will be attached); (3) attaches one `CompiledFunctionBackward` (backward_node.cpp)
// node to the differentiable fresh outputs and intermediate bases, saving
// the forward's extra outputs as SavedVariables; (4) copies new values into
// data-mutated inputs, re-strides metadata-mutated ones and bumps version
// counters to eager's count; (5) regenerates aliased outputs with
// `as_strided` on the right base. The size templates (aot_generalize,
// aot_specialize) are in aot_template.cpp.
#include "compile/aot/runtime_wrapper.h"
#include "compile/aot/aot_template.h"
#include "compile/aot/steps.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include <ATen/SavedTensorHooks.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/as_strided.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>

#include "compile/aot/backward_node.h"
#include "compile/aot/grad_relays.h"
#include "compile/aot/capture.h"
#include "compile/aot/joint_step.h"
#include "compile/aot/partition.h"
#include "compile/aot/plan_compare.h"
#include "compile/aot/size_programs.h"
#include "compile/aot/view_replay.h"
#include "graph/interpreter.h"
#include "graph/printer.h"
#include "support/internal_error.h"
#include "support/log.h"

namespace tj::jit {

namespace {

using graph::aot::OutputKind;

using aot_rt::Plan;
using aot_rt::shares;
using aot_rt::attach_backward;
using aot_rt::saved_read_per_tangent;
using aot_rt::gradients_passed_on;
using aot_rt::GeometryForm;
using aot_rt::fit_geometry;
using aot_rt::geometries_of;
using aot_rt::plan_difference;


std::atomic<long long> g_runs_op_by_op{0};

std::vector<at::Tensor> run_uncompiled(const Plan& p, c10::ArrayRef<at::Tensor> args, const char* why) {
  ++g_runs_op_by_op;
  TJ_LOG(perf, "AOT: a call runs the captured graph op by op: {}", why);
  auto result = graph::interpret_tensors(*p.original, args.vec());
  TORCH_CHECK(result.ok(), "tracejit: ", result.ok() ? "" : result.error().message);
  return std::move(*result);
}

// `t`, copied into `g`'s strides unless it has them on every dimension
// longer than 1; then only the strides of its size-1 dims are set to
// `g`'s, in place when nothing else holds `t` and its metadata may change,
// else on a new tensor sharing its memory (not a view: eager's output is
// not one), or on a view of it where `t` has autograd history.
at::Tensor with_layout(const at::Tensor& t, const graph::aot::Geometry& g) {
  bool same = t.sizes() == c10::IntArrayRef(g.sizes);
  for (size_t d = 0; same && d < g.sizes.size(); ++d)
    same = g.sizes[d] <= 1 || t.stride(static_cast<int64_t>(d)) == g.strides[d];
  if (same) {
    if (t.strides() == c10::IntArrayRef(g.strides)) return t;
    if (t.use_count() == 1 && t.unsafeGetTensorImpl()->allow_tensor_metadata_change()) {
      t.unsafeGetTensorImpl()->set_sizes_and_strides(g.sizes, g.strides);
      return t;
    }
    if (t.requires_grad()) return t.as_strided(g.sizes, g.strides, t.storage_offset());
    auto impl = t.unsafeGetTensorImpl()->shallow_copy_and_detach(c10::VariableVersion(0), true);
    impl->set_sizes_and_strides(g.sizes, g.strides);
    return at::Tensor(std::move(impl));
  }
  at::Tensor out = at::empty_strided(g.sizes, g.strides, t.options());
  out.copy_(t);
  return out;
}

// The view of `base` that `g` describes (its offset relative to `offset`).
at::Tensor view_of(const at::Tensor& base, int64_t offset, const graph::aot::Geometry& g) {
  if (g.dtype != c10::ScalarType::Undefined && g.dtype != base.scalar_type())
    return base.view(g.dtype).as_strided(g.sizes, g.strides, offset + g.offset_delta);
  return base.as_strided(g.sizes, g.strides, offset + g.offset_delta);
}

// Whether `as_strided` takes the view `g` of `storage` at `offset` (in
// units of `dtype`, or of the view's own dtype when it has one).
bool view_fits(const c10::Storage& storage, at::ScalarType dtype, int64_t offset, const graph::aot::Geometry& g) {
  const int64_t item = static_cast<int64_t>(c10::elementSize(g.dtype != c10::ScalarType::Undefined ? g.dtype : dtype));
  int64_t end = offset + 1;  // one past the last element
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    if (g.sizes[d] == 0) return offset >= 0;
    if (g.strides[d] < 0) return false;
    end += (g.sizes[d] - 1) * g.strides[d];
  }
  return offset >= 0 && end * item <= static_cast<int64_t>(storage.nbytes());
}

// Why a view the epilogue makes after writing the inputs back would not
// fit its storage ("" when each fits, or cannot be told before): failing
// after the write-back would leave the writes done. A size template's
// geometries are checked against eager's before it serves a size
// (template_fit.h); this stays as a check of what it relies on. Without
// the forward's results (`fw` null: before the forward, which may write a
// donated input in place), only the views of inputs.
std::string views_misfit(const Plan& p, c10::ArrayRef<at::Tensor> args, const std::vector<at::Tensor>* fw,
                         const std::vector<int64_t>& offsets) {
  const size_t fresh0 = p.mutated.size();
  const size_t base0 = fresh0 + p.num_fresh;
  // Each output's storage and offset, where known before it is made.
  std::vector<std::optional<std::pair<const at::Tensor*, int64_t>>> made(p.outputs.size());
  for (int pass = 0; pass < 3; ++pass)
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      const auto& o = p.outputs[k];
      const size_t src = static_cast<size_t>(o.source);
      int wanted = o.kind == OutputKind::view_of_output ? 1 : o.kind == OutputKind::same_as_output ? 2 : 0;
      if (wanted != pass) continue;
      const at::Tensor* base = nullptr;
      int64_t offset = 0;
      switch (o.kind) {
        case OutputKind::fresh:
          if (fw) made[k] = std::pair{&(*fw)[fresh0 + src], (*fw)[fresh0 + src].storage_offset()};
          continue;
        case OutputKind::input: continue;  // its offset may change in the write-back
        case OutputKind::same_as_output: made[k] = made[src]; continue;
        case OutputKind::view_of_input:
          base = &args[src];
          offset = offsets.empty() ? args[src].storage_offset() : offsets[src];
          break;
        case OutputKind::view_of_output:
          if (!made[src]) continue;
          base = made[src]->first;
          offset = made[src]->second;
          break;
        case OutputKind::view_of_intermediate:
          if (!fw) continue;
          base = &(*fw)[base0 + src];
          offset = base->storage_offset();
          break;
      }
      if (o.replay) continue;  // made by its view ops
      offset += o.geometry.offset_delta;
      if (!view_fits(base->storage(), base->scalar_type(), offset, o.geometry))
        return "output " + std::to_string(k) + "'s view does not fit its storage at these sizes";
      made[k] = std::pair{base, offset};
    }
  for (int u : p.meta_mutated) {
    const auto& in = p.inputs[static_cast<size_t>(u)];
    const at::Tensor& t = args[static_cast<size_t>(in.position)];
    if (!view_fits(t.storage(), t.scalar_type(), offsets[static_cast<size_t>(in.position)] + in.final_geometry.offset_delta,
                   in.final_geometry))
      return "input " + std::to_string(in.position) + "'s new layout does not fit its storage at these sizes";
  }
  return "";
}

// The aliasing among `args` is what the capture saw.
bool aliasing_as_captured(const Plan& p, c10::ArrayRef<at::Tensor> args) {
  if (p.has_duplicates)
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& in = p.inputs[p.unique_of[i]];
      if (!in.synthetic_base && in.position != static_cast<int>(i) && !args[i].is_same(args[in.position])) return false;
    }
  for (int u : p.mutated) {
    const at::Tensor& a = args[p.inputs[u].position];
    for (size_t i = 0; i < args.size(); ++i) {
      bool same_slot = p.unique_of[i] == u;
      if (same_slot != (args[i].is_same(a) || (p.inputs[u].synthetic_base && shares(args[i], a)))) return false;
      if (!same_slot && shares(args[i], a)) return false;
    }
  }
  return true;
}

// The tensor a functional-graph placeholder receives: the caller's input,
// or for a synthetic base a 1-d tensor over its members' whole storage.
at::Tensor unique_input(const Plan& p, size_t u, c10::ArrayRef<at::Tensor> args) {
  const at::Tensor& t = args[p.inputs[u].position];
  if (!p.inputs[u].synthetic_base) return t;
  int64_t numel = static_cast<int64_t>(t.storage().nbytes() / t.dtype().itemsize());
  return at::empty({0}, t.options()).set_(t.storage(), 0, {numel}, {1});
}

// Offsets of the caller's inputs before anything runs (the epilogue may
// change them); empty when no input's metadata is mutated.
std::vector<int64_t> input_offsets(const Plan& p, c10::ArrayRef<at::Tensor> args) {
  std::vector<int64_t> offsets;  // per position
  if (!p.meta_mutated.empty()) {
    offsets.resize(args.size());
    for (size_t i = 0; i < args.size(); ++i) offsets[i] = args[i].storage_offset();
  }
  return offsets;
}

// A joint plan's forward never records autograd itself: its
// differentiable outputs get the compiled backward node, the others
// (made in a no_grad region, or from inputs not requiring grad) none.
// Eager's layouts are set back before the backward node is attached,
// so a differentiable output gets its history on the tensor returned.
std::vector<at::Tensor> run_forward(const Plan& p, const std::vector<at::Tensor>& unique) {
  std::optional<at::NoGradGuard> no_grad;
  if (p.compiled_for_grad) no_grad.emplace();
  std::vector<at::Tensor> fw = p.forward(unique);
  for (const auto& [slot, layout] : p.relayouts) fw[slot] = with_layout(fw[slot], layout);
  return fw;
}

// Inputs only restrided in place (`x.squeeze_()`, their data unchanged)
// have their version counters bumped before the backward node saves
// tensors: eager saves what an op after the restride reads at the bumped
// version (fuzz seeds 9907059, 9953606, 9954495: "modified by an inplace
// operation" in the compiled backward only). Their data being the same,
// the backward reads the right values whatever the order was. So are
// inputs bumped by an in-place op that changed neither their data nor
// their geometry (`t_()` of a 0-d or 1-d tensor: seed 9965239), and
// inputs whose data is written (seed 9986676: `v = x.view(-1); v[...] =
// v; v * w` saved v at x's bumped version in eager): the AOT capture ran
// the backward on functional tensors whose versions move as eager's, so a
// graph whose backward reads a value saved before a write failed there
// (it runs op by op and raises as eager), and the others read only values
// eager saved after the writes, at the bumped versions.
void bump_version(const Plan& p, int u, const std::vector<at::Tensor>& unique, c10::ArrayRef<at::Tensor> args,
                  std::vector<bool>& bumped) {
  const auto& in = p.inputs[u];
  bumped[u] = true;
  if (!in.synthetic_base) {
    const at::Tensor& t = unique[u];
    if (t.is_inference()) return;
    for (int64_t i = 0; i < in.version_bumps; ++i) t.unsafeGetTensorImpl()->bump_version();
    return;
  }
  // Members that are views of one base share a version counter: bump
  // each counter once (a member whose version already moved shares one).
  std::vector<int64_t> before;
  for (int m : in.members) before.push_back(args[m].is_inference() ? 0 : static_cast<int64_t>(args[m]._version()));
  for (size_t j = 0; j < in.members.size(); ++j) {
    const at::Tensor& t = args[in.members[j]];
    if (t.is_inference() || static_cast<int64_t>(t._version()) != before[j]) continue;
    for (int64_t i = 0; i < in.version_bumps; ++i) t.unsafeGetTensorImpl()->bump_version();
  }
}

// A differentiable output the forward made as a view (aot_eager runs
// `squeeze(mm)` as it is, under no_grad): it gets the node's history
// as a tensor of its own, as eager's is (an in-place op on a no-grad
// view with history fails LibTorch's `!grad_fn` assert: fuzz seed
// 9950351). Every slot holding it gets the same alias.
void own_differentiable_views(const Plan& p, std::vector<at::Tensor>& fw) {
  for (int slot : p.differentiable) {
    if (!fw[slot].is_view()) continue;
    at::Tensor own = fw[slot].detach();
    const at::Tensor was = fw[slot];
    for (auto& t : fw)
      if (t.is_same(was)) t = own;
  }
}

// Epilogue: input mutations, as eager left them.
// The copies skip ADInplaceOrView (no version bump); the counters are
// then bumped exactly as often as eager bumped them.
void write_back_inputs(const Plan& p, std::vector<at::Tensor>& unique, const std::vector<at::Tensor>& fw,
                       const std::vector<int64_t>& offsets) {
  if (!p.mutated.empty() || !p.meta_mutated.empty()) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    for (size_t i = 0; i < p.mutated.size(); ++i)
      if (!fw[i].is_same(unique[p.mutated[i]])) unique[p.mutated[i]].copy_(fw[i]);  // else written in place
    for (int u : p.meta_mutated) {
      const auto& g = p.inputs[u].final_geometry;
      unique[u].unsafeGetTensorImpl()->set_sizes_and_strides(g.sizes, g.strides);
      unique[u].unsafeGetTensorImpl()->set_storage_offset(offsets[p.inputs[u].position] + g.offset_delta);
    }
  }
}

// Output `k`, made from the forward's results `fw` (its fresh outputs from
// `fresh0` on), the intermediate `bases`, the inputs and the outputs made so far.
void make_output(const Plan& p, size_t k, c10::ArrayRef<at::Tensor> args, const std::vector<at::Tensor>& fw,
                 size_t fresh0, const std::vector<at::Tensor>& bases, const std::vector<int64_t>& offsets,
                 std::vector<at::Tensor>& out) {
  const auto& o = p.outputs[k];
  const auto& g = o.geometry;
  // A view eager made in no-grad mode is made in it again (no history,
  // creation meta NO_GRAD_MODE).
  constexpr auto kNoGradMode = static_cast<uint8_t>(torch::autograd::CreationMeta::NO_GRAD_MODE);
  c10::AutoGradMode mode(o.creation_meta != kNoGradMode && at::GradMode::is_enabled());
  switch (o.kind) {
    case OutputKind::fresh: {
      // Two fresh outputs that came out as one tensor (a later pass merged
      // equal computations, fuzz seed 507636): eager made two.
      const at::Tensor& t = fw[fresh0 + o.source];
      bool taken = false;
      for (size_t j = 0; j < k; ++j) taken |= out[j].defined() && out[j].is_same(t);
      out[k] = taken ? t.clone() : t;
      break;
    }
    case OutputKind::input: out[k] = args[o.source]; break;
    case OutputKind::same_as_output: out[k] = out[o.source]; break;
    case OutputKind::view_of_input: {
      if (o.replay) {  // its view ops, whose backward is eager's (an input that overlaps itself)
        const at::Tensor& from = o.replay_from >= 0 ? out.at(static_cast<size_t>(o.replay_from)) : args[o.source];
        out[k] = graph::interpret_or_throw(*o.replay, {from}).at(0);
        break;
      }
      int64_t offset = offsets.empty() ? args[o.source].storage_offset() : offsets[o.source];
      out[k] = view_of(o.detached ? args[o.source].detach() : args[o.source], offset, g);
      break;
    }
    case OutputKind::view_of_output:
      if (o.replay && (out[k] = graph::aot::replay_view(*o.replay, out[o.source], g.sizes, g.strides,
                                                        out[o.source].storage_offset() + g.offset_delta)).defined())
        break;  // its view ops, whose backward is eager's
      out[k] = view_of(o.of_detached_base && o.creation_meta != kNoGradMode ? out[o.source].detach() : out[o.source],
                       out[o.source].storage_offset(), g);
      if (o.detached)  // the same memory, no autograd view (`detach()`)
        out[k] = at::empty({0}, out[k].options()).set_(out[k].storage(), out[k].storage_offset(), out[k].sizes(),
                                                       out[k].strides());
      break;
    case OutputKind::view_of_intermediate: {
      const at::Tensor& base = bases[static_cast<size_t>(o.source)];
      if (o.replay && (out[k] = graph::aot::replay_view(*o.replay, base, g.sizes, g.strides,
                                                        base.storage_offset() + g.offset_delta)).defined())
        break;
      out[k] = view_of(o.of_detached_base && o.creation_meta != kNoGradMode ? base.detach() : base,
                       base.storage_offset(), g);
      break;
    }
  }
  // A replayed view with a tangent of its own (OutputInfo::grad_base): its
  // gradient goes to that tangent's input of the backward node.
  if (o.grad_base >= 0 && out[k].requires_grad())
    if (const at::Tensor& own = bases.at(static_cast<size_t>(o.grad_base)); own.grad_fn())
      torch::autograd::impl::set_gradient_edge(out[k], torch::autograd::impl::gradient_edge(own));
  // Autograd refuses in-place ops on a view unbind/split made, as on eager's.
  auto* view_meta = o.creation_meta && o.creation_meta != kNoGradMode
                        ? torch::autograd::impl::get_view_autograd_meta(out[k])
                        : nullptr;
  if (view_meta && view_meta->has_bw_view())
    view_meta->set_creation_meta(static_cast<torch::autograd::CreationMeta>(o.creation_meta));
}

// Outputs, aliases regenerated on the right base; those `made` already
// (make_relays) are in `out`.
std::vector<at::Tensor> make_outputs(const Plan& p, c10::ArrayRef<at::Tensor> args, const std::vector<at::Tensor>& fw,
                                     const std::vector<int64_t>& offsets, std::vector<at::Tensor> out,
                                     const std::vector<bool>& made) {
  const size_t fresh0 = p.mutated.size();
  const size_t base0 = fresh0 + p.num_fresh;
  // (Fresh outputs and intermediate bases that eager keeps apart but the
  // functional graph returns as one value were given memory of their own
  // at capture time, from eager's aliasing: compile/aot/eager_meta.h.)
  std::vector<at::Tensor> bases(fw.begin() + static_cast<long>(base0),
                                fw.begin() + static_cast<long>(base0) + p.num_bases);
  // Three passes: views of outputs need their (fresh) base, and repeated
  // outputs may repeat any of them.
  for (int pass = 0; pass < 3; ++pass)
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      if (made[k]) continue;
      const auto& o = p.outputs[k];
      int wanted = o.kind == OutputKind::view_of_output ? 1 : o.kind == OutputKind::same_as_output ? 2 : 0;
      if (wanted == pass) make_output(p, k, args, fw, fresh0, bases, offsets, out);
    }
  return out;
}

std::vector<at::Tensor> run(const std::shared_ptr<const Plan>& plan, c10::ArrayRef<at::Tensor> args) {
  const Plan& p = *plan;
  TORCH_CHECK(args.size() == p.unique_of.size(), "tracejit: the compiled graph takes ", p.unique_of.size(),
              " tensors, ", args.size(), " given");
  if (!aliasing_as_captured(p, args)) return run_uncompiled(p, args, "its inputs alias otherwise than when it was captured");
  std::optional<at::NoGradGuard> no_grad;
  if (p.no_grad_throughout) no_grad.emplace();
  const size_t n = p.inputs.size();
  std::vector<at::Tensor> unique;
  unique.reserve(n);
  bool wants_grad = false;
  bool grad_mode = c10::GradMode::is_enabled();
  for (size_t u = 0; u < n; ++u) unique.push_back(unique_input(p, u, args));
  if (grad_mode || p.enables_grad)
    for (const at::Tensor& t : args) wants_grad |= t.requires_grad();
  if (wants_grad && !p.compiled_for_grad)
    return run_uncompiled(p, args, "gradients are wanted of a graph compiled without them");
  bool attach = wants_grad && p.has_backward;
  // Under Python's saved-tensor hooks (`saved_tensors_hooks`, a
  // non-reentrant checkpoint around a compiled block) eager's ops pack what
  // they save through the hooks; the compiled backward node's saves do not
  // unpack as eager's (a saved leaf loses its grad accumulator): op by op.
  if (attach && !at::SavedTensorDefaultHooks::get_stack().empty())
    return run_uncompiled(p, args, "saved-tensor hooks are active (saved_tensors_hooks, a non-reentrant checkpoint)");
  std::vector<int64_t> offsets = input_offsets(p, args);
  // A view of an input that does not fit its storage (an as_strided view
  // reaching past a smaller storage than the capture's): nothing is written
  // yet, and op by op the call does what eager does (raises as eager).
  if (std::string why = views_misfit(p, args, nullptr, offsets); !why.empty()) return run_uncompiled(p, args, why.c_str());
  std::vector<at::Tensor> fw = run_forward(p, unique);
  // The geometries of a size template's plan were checked against eager's
  // for these sizes before it served them (template_fit.h), so every view
  // fits: a misfit here is a bug of ours. (A donated input the forward
  // wrote in place may be written already: no failure is clean here.)
  if (std::string why = views_misfit(p, args, &fw, offsets); !why.empty())
    TORCH_CHECK(false, report_internal_error("AOT's runtime wrapper", "a view of the forward's results does not fit "
                                             "its storage after the forward (" + why + ")"));
  std::vector<bool> bumped(p.inputs.size(), false);
  std::vector<at::Tensor> out(p.outputs.size());
  std::vector<bool> made(p.outputs.size(), false);
  if (p.compiled_for_grad && attach) {
    for (int u : p.versioned)
      if (!p.inputs[u].synthetic_base) bump_version(p, u, unique, args, bumped);
    own_differentiable_views(p, fw);
    const auto relays = make_relays(p, unique, [&](size_t k) {  // views of inputs only: no fresh outputs or bases
      make_output(p, k, args, fw, fw.size(), {}, offsets, out);
      made[k] = true;
    });
    attach_backward(plan, unique, fw, relays);
  }
  write_back_inputs(p, unique, fw, offsets);
  for (int u : p.versioned)
    if (!bumped[u]) bump_version(p, u, unique, args, bumped);
  return make_outputs(p, args, fw, offsets, std::move(out), made);
}

// An inference graph's new value of a written input is copied into it by
// the epilogue: the backend may write it there directly (the placeholder's
// tag "donated_to_output", jit/lowering.h). Not for inputs sharing memory
// with another, nor values the epilogue lays out again.
void offer_inputs_for_writes(graph::aot::Capture& cap, const Plan& plan) {
  if (plan.has_duplicates) return;
  const std::vector<graph::Node*> placeholders = cap.graph->placeholders();
  for (size_t i = 0; i < plan.mutated.size(); ++i) {
    const auto u = static_cast<size_t>(plan.mutated[i]);
    const graph::aot::InputInfo& info = plan.inputs[u];
    bool relayout = false;
    for (const auto& r : plan.relayouts) relayout |= static_cast<size_t>(r.first) == i;
    if (info.synthetic_base || info.meta_mutated || relayout || u >= placeholders.size()) continue;
    placeholders[u]->meta().tags.donated_to_output = static_cast<int64_t>(i);
  }
}

// The forward and backward graphs of a joint capture (the backend's
// pointwise fusion decides whether cheap values are recomputed).
Expected<graph::aot::Partition> partition_captured(const graph::Graph& joint, const Plan& plan, const Backend& backend) {
  std::vector<bool> versioned;
  for (const auto& in : plan.inputs) versioned.push_back(in.data_mutated || in.version_bumps > 0);
  return graph::aot::partition_joint(joint, static_cast<int>(plan.inputs.size()),
                                     static_cast<int>(plan.differentiable.size()), plan.num_fw_outputs,
                                     backend.fuses_pointwise, versioned);
}

CaptureMode capture_mode(const graph::Graph& graph, bool grad_enabled, c10::ArrayRef<at::Tensor> inputs) {
  // A traced backward inside (aot/joint_step.h): nothing requires grad
  // after the graph, which runs under no_grad; the capture records it.
  if (graph::aot::runs_backward_inside(graph)) return CaptureMode{false, true, false, false};
  bool enables_grad = false;
  bool every_op_without_grad = grad_enabled;
  int ops = 0;
  for (const graph::Node* n : graph.nodes()) {
    const std::optional<bool> mode = n->meta().tags.grad_enabled;
    enables_grad |= mode == true;
    if (n->kind() != graph::NodeKind::call_function) continue;
    ++ops;
    every_op_without_grad &= mode == false;
  }
  return jit::capture_mode(enables_grad, every_op_without_grad && ops > 0, grad_enabled, inputs);
}

}  // namespace

Expected<AotCaptured> aot_capture(std::shared_ptr<const graph::Graph> graph, c10::ArrayRef<at::Tensor> example_inputs,
                                  const AotOptions& options) {
  const CaptureMode mode = capture_mode(*graph, options.grad_enabled, example_inputs);
  const bool joint = mode.joint;
  graph::aot::CaptureOptions capture_options;
  capture_options.joint = joint;
  capture_options.grad_enabled = options.grad_enabled;
  capture_options.undifferentiated_outputs = options.undifferentiated_outputs;
  capture_options.backward_inside = graph::aot::runs_backward_inside(*graph);
  auto cap = graph::aot::capture(*graph, example_inputs, capture_options);
  if (!cap) return cap.error();
  AotCaptured captured = aot_captured_from(graph, std::move(*cap), example_inputs, options);
  if (aot_rt::cuts_kept_apart(*captured.plan->plan)) return captured;
  capture_options.cut_returned = false;  // a cut output's readers share its node: no cut
  cap = graph::aot::capture(*graph, example_inputs, capture_options);
  if (!cap) return cap.error();
  return aot_captured_from(std::move(graph), std::move(*cap), example_inputs, options);
}

AotCaptured aot_captured_from(std::shared_ptr<const graph::Graph> graph, graph::aot::Capture capture,
                              c10::ArrayRef<at::Tensor> example_inputs, const AotOptions& options) {
  const CaptureMode mode = capture_mode(*graph, options.grad_enabled, example_inputs);
  const bool joint = mode.joint;
  graph::aot::Capture* cap = &capture;
  auto plan = std::make_shared<Plan>();
  plan->original = graph;
  plan->unique_of = cap->unique_of;
  plan->inputs = cap->inputs;
  plan->outputs = cap->outputs;
  plan->mutated = cap->mutated;
  plan->relayouts = cap->relayouts;
  plan->num_fresh = cap->num_fresh;
  plan->num_bases = cap->num_bases;
  plan->num_fw_outputs = cap->num_forward_outputs();
  plan->compiled_for_grad = joint;
  plan->enables_grad = mode.enables_grad;
  plan->no_grad_throughout = mode.no_grad_throughout;
  plan->differentiable = cap->differentiable;
  plan->grad_inputs = cap->grad_inputs;
  plan->grad_defined = cap->grad_defined;
  plan->grad_tangents = cap->grad_tangents;
  plan->grad_order = cap->grad_order;
  for (int u : cap->grad_inputs) plan->has_cuts |= graph::aot::Capture::is_cut_edge(u);
  for (size_t i = 0; i < cap->unique_of.size(); ++i)
    plan->has_duplicates |= cap->inputs[cap->unique_of[i]].position != static_cast<int>(i);
  for (size_t u = 0; u < cap->inputs.size(); ++u) {
    if (cap->inputs[u].meta_mutated) plan->meta_mutated.push_back(static_cast<int>(u));
    if (cap->inputs[u].version_bumps > 0) plan->versioned.push_back(static_cast<int>(u));
  }

  AotCaptured out;
  plan->has_backward = joint && !cap->differentiable.empty() && !cap->grad_inputs.empty();
  out.joint = plan->has_backward;
  if (!plan->has_backward) offer_inputs_for_writes(*cap, *plan);
  out.graph = std::shared_ptr<const graph::Graph>(std::move(cap->graph));
  out.summary = cap->summary();
  out.capture = std::make_shared<const graph::aot::Capture>(std::move(capture));  // its graph moved out above
  // a joint capture that records no backward runs as inference: its
  // graph is not the joint one a template of joint graphs needs
  if (!joint || plan->has_backward) out.point = std::make_shared<const AotPoint>(AotPoint{plan, out.graph});
  out.plan = std::make_shared<AotPlan>(AotPlan{std::move(plan)});
  return out;
}

Expected<AotPartitioned> aot_partition(const AotCaptured& captured, const Backend& backend) {
  if (!captured.joint) return AotPartitioned{captured.graph, nullptr, ""};
  auto part = partition_captured(*captured.graph, *captured.plan->plan, backend);
  if (!part && captured.one_program && captured.for_layouts) return AotPartitioned{};  // the layouts stay the backend's
  if (!part) return part.error();
  AotPartitioned out;
  if (!captured.from_template) {
    std::ostringstream os;
    os << "\npartition: " << part->num_saved << " saved tensor(s), " << part->saved_bytes << " bytes ("
       << part->saved_bytes_naive << " without recomputation, " << part->saved_bytes_recomputing
       << " with it; " << part->num_recomputed << " node(s) recomputed)";
    out.note = os.str();
  }
  out.forward = std::shared_ptr<const graph::Graph>(std::move(part->forward));
  out.backward = std::shared_ptr<const graph::Graph>(std::move(part->backward));
  // A size template's one program runs with the template's plan as it is
  // (no backward graph, no per-tangent sets): a partition made for these
  // sizes only to check the template (config.debug_check_aot_templates)
  // must not complete it, or the check would run another plan than a
  // user's run does and hide its defects (fuzz seed 9976373).
  if (!captured.one_program) aot_take_partition(captured, out);
  if (captured.one_program && captured.for_layouts) aot_rt::take_layout_graph(*captured.plan->plan, out.forward, out.backward);
  return out;
}

void aot_take_partition(const AotCaptured& captured, const AotPartitioned& graphs) {
  if (!graphs.backward) return;
  // the plan is this capture's own (a template's is copied per size)
  Plan& plan = *captured.plan->plan;
  plan.backward_graph = graphs.backward;
  plan.grad_layout_cache = std::make_shared<Plan::GradLayoutCache>();
  plan.tangent_saved = saved_read_per_tangent(*graphs.backward, static_cast<int>(plan.differentiable.size()));
  plan.grad_passes = gradients_passed_on(*graphs.backward, static_cast<int>(plan.differentiable.size()));
  plan.saved_step_strides = aot_rt::saved_inplace_step_strides(*graphs.forward, plan.num_fw_outputs);
  plan.no_double_backward = aot_rt::why_not_recomputable(plan, *graphs.forward);
  plan.forward_graph = plan.no_double_backward.empty() ? graphs.forward : nullptr;
}

Expected<AotCompiledGraphs> aot_compile_graphs(const AotCaptured& captured,
                                               const std::shared_ptr<const graph::Graph>& forward,
                                               const std::shared_ptr<const graph::Graph>& backward,
                                               const Backend& backend, const std::string& where) {
  if (const AotTemplate* t = captured.from_template) {
    auto compiled = t->programs->compile(t->captured, captured.given, forward, backward, backend, where);
    if (!compiled) return compiled.error();
    return AotCompiledGraphs{std::move(compiled->forward), std::move(compiled->backward)};
  }
  AotCompiledGraphs out;
  auto fw = backend.compile(forward, placeholder_metas(*forward));
  if (!fw) return Error{"backend " + backend.name + " (forward): " + fw.error().message, fw.error().kind};
  out.forward = std::move(*fw);
  if (backward) {
    auto bw = backend.compile(backward, placeholder_metas(*backward));
    if (!bw) return Error{"backend " + backend.name + " (backward): " + bw.error().message, bw.error().kind};
    out.backward = std::move(*bw);
  }
  return out;
}

CompiledFn aot_runtime_wrapper(const AotCaptured& captured, AotCompiledGraphs compiled) {
  std::shared_ptr<Plan> plan = captured.plan->plan;
  plan->forward = std::move(compiled.forward);
  plan->backward = std::move(compiled.backward);
  return CompiledFn([plan = std::shared_ptr<const Plan>(plan)](c10::ArrayRef<at::Tensor> args) {
    return run(plan, args);
  });
}

Expected<CompiledFn> aot_compile(std::shared_ptr<const graph::Graph> graph,
                                 c10::ArrayRef<at::Tensor> example_inputs, const Backend& backend,
                                 const AotOptions& options, AotGraphs* graphs_out) {
  auto captured = aot_capture(std::move(graph), example_inputs, options);
  if (!captured) return captured.error();
  auto part = aot_partition(*captured, backend);
  if (!part) return part.error();
  auto compiled = aot_compile_graphs(*captured, part->forward, part->backward, backend, options.where);
  if (!compiled) return compiled.error();
  if (graphs_out) {
    graphs_out->forward = part->forward;
    graphs_out->backward = part->backward;
    graphs_out->summary = captured->summary + part->note;
    graphs_out->point = captured->point;
  }
  return aot_runtime_wrapper(*captured, std::move(*compiled));
}

long long aot_runs_op_by_op() { return g_runs_op_by_op.load(); }
void zero_aot_runs_op_by_op() { g_runs_op_by_op = 0; }

}  // namespace tj::jit
