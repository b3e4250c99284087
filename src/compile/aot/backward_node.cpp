// The AOT backward node (see backward_node.h): CompiledFunctionBackward,
// which runs a plan's compiled backward for one call's outputs as eager's
// per-op nodes would run theirs, and attach_backward, which hangs it on a
// call's outputs. The plan-time analyses of the backward graph it reads
// (per-tangent saved sets, gradients passed on) are backward_plan.cpp.
#include "compile/aot/backward_node.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>

#include "compile/aot/partition.h"
#include "compile/aot/view_replay.h"
#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "support/internal_error.h"

namespace tj::jit::aot_rt {

bool shares(const at::Tensor& a, const at::Tensor& b) {
  return a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage());
}

namespace {

// A gradient the backward graph returns as (a view of) the contiguous copy
// of an incoming gradient, as eager's formulas pass theirs on (add's is the
// gradient itself, sum's an expand): the incoming one itself, or for a view
// of an expanded scalar (`.sum().backward()`'s) that scalar expanded, so
// AccumulateGrad lays it out as eager's (a copy in the parameter's layout,
// size-1 dims included, where eager's gradient breaks the layout contract).
at::Tensor as_eager_passes_it_on(const at::Tensor& g,
                                 const std::vector<std::pair<at::Tensor, at::Tensor>>& copied) {
  if (!g.defined()) return g;
  for (const auto& [incoming, copy] : copied) {
    if (!shares(g, copy)) continue;
    if (g.sizes() == copy.sizes() && g.strides() == copy.strides() && g.storage_offset() == copy.storage_offset() &&
        g.scalar_type() == incoming.scalar_type())
      return incoming;
    bool broadcast_scalar = incoming.numel() > 0;
    for (int64_t d = 0; d < incoming.dim(); ++d) broadcast_scalar &= incoming.size(d) == 1 || incoming.stride(d) == 0;
    bool has_long_dim = false;
    for (int64_t d = 0; d < g.dim(); ++d) has_long_dim |= g.size(d) > 1;
    if (broadcast_scalar && has_long_dim && g.scalar_type() == incoming.scalar_type())
      return incoming.as_strided(g.sizes(), std::vector<int64_t>(static_cast<size_t>(g.dim()), 0),
                                 incoming.storage_offset());
  }
  return g;
}

// A gradient the backward computed (not passed on) laid out on its size-1
// dims as `layout` (eager's formulas' sizes and strides), where its sizes
// and its other strides are those: the same memory, addressed the same way
// (a size-1 dim's stride is never used), so no value changes; where its
// other strides differ too, a copy in `layout` (below). Eager's
// AccumulateGrad steals a gradient that obeys the layout contract ignoring
// size-1 dims, keeping those dims' strides, which the backend's kernels
// choose otherwise than eager's.
at::Tensor with_size1_strides_of(const at::Tensor& g,
                                 const std::pair<std::vector<int64_t>, std::vector<int64_t>>& layout) {
  const auto& [sizes, strides] = layout;
  if (!g.defined() || g.layout() != c10::kStrided || g.sizes() != c10::IntArrayRef(sizes) ||
      strides.size() != sizes.size())
    return g;
  bool differs = false, other_order = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    other_order |= sizes[d] != 1 && g.stride(static_cast<int64_t>(d)) != strides[d];
    differs |= g.stride(static_cast<int64_t>(d)) != strides[d];
  }
  if (!differs || g.requires_grad()) return g;
  // Eager's formulas lay it out in another dense order (seed 9995107:
  // maximum's gradient of x0 follows the transposed other operand): a copy
  // so laid out, which decides how the engine's sum and AccumulateGrad lay
  // the leaf's gradient out. Only into a dense, non-overlapping layout.
  if (other_order) {
    std::vector<size_t> dims;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] != 1) dims.push_back(d);
    std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
    int64_t expected = 1;
    for (size_t d : dims) {
      if (strides[d] != expected) return g;
      expected *= sizes[d];
    }
    return at::empty_strided(sizes, strides, g.options()).copy_(g);
  }
  // A tensor of its own on the same storage, not a view: once the
  // backward's own tensor is gone it holds the storage alone, so the
  // engine may accumulate another gradient into it in place, as it does
  // eager's (InputBuffer::accumulate), which keeps these strides.
  at::Tensor alias = at::empty({0}, g.options());
  alias.set_(g.storage(), g.storage_offset(), sizes, strides);
  return alias;
}

using Layouts = Plan::GradLayoutCache::Layouts;

// Whether `g`'s placeholders are `in`, one for one, in layout, sizes and
// dtype: a graph made apart from the program that ran (a size template's
// one program saves what a partition at these sizes saves: its points are
// such partitions) is checked before it stands for that program's.
bool takes_inputs(const graph::Graph& g, const std::vector<at::Tensor>& in) {
  const std::vector<graph::Node*> ps = g.placeholders();
  if (ps.size() != in.size()) return false;
  for (size_t i = 0; i < ps.size(); ++i) {
    const graph::TensorMeta* m = ps[i]->meta().tensor();
    if (!m || !in[i].defined() || in[i].layout() != c10::kStrided || m->sizes != in[i].sizes().vec() ||
        m->dtype != in[i].scalar_type())
      return false;
  }
  return true;
}

// The gradients' layouts eager's formulas give for backward inputs laid out
// as `inputs` (the saved tensors, then the incoming gradients as they came,
// not their contiguous copies): the backward graph records the ops
// LibTorch's formulas ran, and meta inference follows the CPU kernels'
// strides (TensorIterator's among them). Cached per layout in the plan.
std::optional<Layouts> eager_layouts(const Plan& plan, const graph::Graph& backward,
                                     const std::vector<at::Tensor>& inputs) {
  std::vector<int64_t> key{reinterpret_cast<intptr_t>(&backward)};
  for (const at::Tensor& t : inputs) {
    key.push_back(t.dim());
    key.insert(key.end(), t.sizes().begin(), t.sizes().end());
    key.insert(key.end(), t.strides().begin(), t.strides().end());
    key.push_back(static_cast<int64_t>(t.scalar_type()));
  }
  auto& cache = *plan.grad_layout_cache;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.entries.find(key); it != cache.entries.end()) return it->second;
  }
  std::optional<Layouts> layouts;
  try {
    std::unique_ptr<graph::Graph> g = backward.clone();
    std::vector<graph::Node*> phs = g->placeholders();
    bool ok = takes_inputs(*g, inputs);  // a layout graph made apart from the program that ran
    for (size_t i = 0; ok && i < phs.size(); ++i) {
      graph::TensorMeta m = graph::TensorMeta::of(inputs[i]);
      m.requires_grad = false;
      m.storage_id = g->new_storage_id();
      phs[i]->meta().set_tensor(std::move(m));
    }
    for (graph::Node* n : g->nodes()) {
      if (!ok) break;
      ok = graph::infer_meta(*g, *n).ok();
      if (ok && n->meta().tags.inplace_step) keep_layout_of_first_argument(*n);
    }
    if (ok) {
      layouts.emplace();
      for (const graph::Node* n : graph::aot::flat_output_nodes(*g)) {
        const graph::TensorMeta* m = n ? n->meta().tensor() : nullptr;
        layouts->emplace_back(m ? m->sizes : std::vector<int64_t>{}, m ? m->strides : std::vector<int64_t>{});
      }
    }
  } catch (const std::exception&) {
    layouts.reset();  // an op meta inference cannot run: the backend's layout stays
  }
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (cache.entries.size() < 64) cache.entries.emplace(std::move(key), layouts);
  return layouts;
}

bool has_size1_dim(const at::Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) == 1) return true;
  return false;
}

// `chain` (view ops of one placeholder) run on the incoming gradient
// `incoming`; undefined where a view op refuses its layout (`view` of an
// expanded gradient), and the backward's own value is used.
at::Tensor passed_on(const graph::Graph& chain, const at::Tensor& incoming) {
  try {
    return graph::interpret_or_throw(chain, {incoming}).at(0);
  } catch (const std::exception&) {
    return at::Tensor();
  }
}

bool all_finite(const std::vector<at::Tensor>& ts) {
  for (const at::Tensor& t : ts)
    if (t.defined() && t.is_floating_point() && !t.isfinite().all().item<bool>()) return false;
  return true;
}

// One node for every differentiable output of a call. Eager has a node
// per op, so a backward through some outputs frees only their part of the
// graph: a GAN step backpropagates `D(fake.detach())` and later `D(fake)`
// through one call's outputs. So a backward that does not retain the graph
// frees only the saved tensors no output still to backpropagate through
// reads, a gradient none of whose tangents came in stays undefined (grad
// None, not zeros), only what the incoming tangents read is checked against
// in-place writes, and a second such backward through an output raises
// eager's error.
class CompiledFunctionBackward : public torch::autograd::Node {
 public:
  explicit CompiledFunctionBackward(std::shared_ptr<const Plan> plan)
      : plan_(std::move(plan)), consumed_(plan_->differentiable.size(), false) {}

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    // The engine runs nodes with grad mode on only for create_graph=True:
    // the compiled backward records no history, so the gradients are made
    // again from the inputs as ATen ops (apply_recording).
    if (at::GradMode::is_enabled()) return apply_recording(grads);
    torch::autograd::variable_list result(num_outputs());
    // Reached with no gradient at all (the engine runs a node an edge
    // leads to even when that edge carries none): eager would not have run
    // the nodes in between, and the saved tensors may be freed already.
    bool any_defined = false, all_defined = true;
    last_defined_.assign(grads.size(), false);
    for (size_t i = 0; i < grads.size(); ++i) {
      last_defined_[i] = grads[i].defined();
      any_defined |= last_defined_[i];
      all_defined &= last_defined_[i];
      TORCH_CHECK(!(last_defined_[i] && consumed_.at(i)), torch::autograd::ERR_BACKWARD_TWICE);
    }
    if (!any_defined) return result;
    std::vector<bool> read = saved_read_by(last_defined_);
    std::vector<at::Tensor> in;
    in.reserve(saved_.size() + grads.size());
    for (size_t k = 0; k < saved_.size(); ++k) {
      if (freed_[k]) {  // only gradients nobody asks for read it
        const Freed& f = freed_geometry_[k];
        in.push_back(at::empty_strided(f.sizes, f.strides, f.options).zero_());
      } else if (read[k] || !raw_[k].defined()) {
        check_no_grad_view_version(k);
        in.push_back(saved_[k].unpack(shared_from_this()));
      } else {
        in.push_back(raw_[k]);  // perhaps written since (an optimizer step between two backwards)
      }
    }
    std::vector<std::pair<at::Tensor, at::Tensor>> copied;  // (incoming gradient, its contiguous copy)
    for (size_t i = 0; i < grads.size(); ++i) {
      in.push_back(grads[i].defined() ? grads[i].contiguous() : input_metadata(i).zeros_like());
      if (grads[i].defined() && !in.back().is_same(grads[i])) copied.emplace_back(grads[i], in.back());
    }
    std::vector<at::Tensor> out = compute(in, grads, all_defined);
    size_t next = 0;
    const std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>>* absent_passes = nullptr;
    std::optional<Layouts> layouts;
    bool layouts_tried = false;
    for (size_t i = 0; i < result.size(); ++i) {
      if (!plan_->grad_defined[i]) continue;
      const at::Tensor& g = out.at(next++);
      // An input whose gradient reads only tangents that did not come
      // (outputs the caller's loss does not use) gets None, as in eager,
      // not the zeros the backward graph computes from zero tangents.
      const auto& reads = plan_->grad_tangents[i];
      bool reached = reads.empty();
      for (int t : reads) reached |= grads.at(static_cast<size_t>(t)).defined();
      if (!reached || !g.defined()) continue;
      result[i] = as_eager_passes_it_on(g, copied);
      // A gradient the backward computed with a size-1 dim: that dim's
      // stride as eager's formulas give it (AccumulateGrad keeps it).
      const graph::Graph* for_layouts = plan_->backward_graph ? plan_->backward_graph.get() : plan_->layout_graph.get();
      if (result[i].is_same(g) && has_size1_dim(g) && for_layouts) {
        if (!layouts_tried) {
          std::vector<at::Tensor> as_came(in.begin(), in.begin() + static_cast<long>(saved_.size()));
          // a saved in-place step's result as eager lays it out (only
          // size-1 dims' strides differ: the same addresses)
          for (size_t k = 0; k < as_came.size() && k < plan_->saved_step_strides.size(); ++k) {
            const auto& strides = plan_->saved_step_strides[k];
            at::Tensor& t = as_came[k];
            if (!strides.empty() && t.defined() && t.layout() == c10::kStrided &&
                static_cast<size_t>(t.dim()) == strides.size())
              t = t.as_strided(t.sizes(), strides, t.storage_offset());
          }
          // An absent tangent is no operand of eager's (its engine adds
          // nothing): the zeros standing for it are given stride 0, which
          // TensorIterator's layout choice ignores (fuzz seed 9802777: the
          // contiguous zeros of an unused output's tangent laid x0's
          // gradient out densely where eager's kept where()'s layout).
          for (size_t j = 0; j < grads.size(); ++j) {
            const at::Tensor& zeros = in.at(saved_.size() + j);
            as_came.push_back(grads[j].defined() ? grads[j]
                                                 : at::zeros({}, zeros.options()).expand(zeros.sizes()));
          }
          layouts = eager_layouts(*plan_, *for_layouts, as_came);
          layouts_tried = true;
        }
        if (layouts && next - 1 < layouts->size()) result[i] = with_size1_strides_of(g, (*layouts)[next - 1]);
      }
      const auto* passes = &plan_->grad_passes;
      if (!all_defined && plan_->backward_graph) {
        if (!absent_passes) absent_passes = &passes_without(grads);
        if (next - 1 < absent_passes->size() && (*absent_passes)[next - 1].second) passes = absent_passes;
      }
      if (next - 1 < passes->size()) {
        const auto& [t, chain] = (*passes)[next - 1];
        if (chain && grads.at(static_cast<size_t>(t)).defined()) {
          at::Tensor passed = passed_on(*chain, grads[static_cast<size_t>(t)]);
          if (passed.defined() && passed.sizes() == g.sizes() && passed.scalar_type() == g.scalar_type())
            result[i] = passed;
        }
      }
    }
    return result;
  }
  std::string name() const override { return "CompiledFunctionBackward"; }

  // The backward's gradients for `in` (the saved values, then the incoming
  // gradients or zeros for those absent from `grads`).
  std::vector<at::Tensor> compute(const std::vector<at::Tensor>& in, const torch::autograd::variable_list& grads,
                                  bool all_defined) const {
    std::vector<bool> absent;
    for (const auto& g : grads) absent.push_back(!g.defined());
    // A part of a plan with cut edges (Capture::cut_edge) runs only what its
    // tangents reach, interpreted: each part runs in turn (a cut output's
    // part after its readers'), and the whole compiled backward per part
    // would run every other part's formulas on zeros.
    if (!all_defined && plan_->has_cuts && plan_->backward_graph) {
      auto own = graph::aot::run_without_absent_tangents(*plan_->backward_graph, absent,
                                                         [&](size_t i) { return in.at(i); });
      TORCH_CHECK(own.ok(), "tracejit: ", own.ok() ? "" : own.error().message);
      return std::move(*own);
    }
    std::vector<at::Tensor> out = plan_->backward(in);
    // Some tangents absent (outputs the loss does not use): eager never
    // runs the formulas only they reach. The compiled backward ran them on
    // zeros, which is exact unless a derivative there is infinite (an
    // unused sqrt of a negative number: 0 * inf is NaN); then the backward
    // runs again without them (it reads only what the present ones read).
    // A size template's one program has no backward graph of its own: these
    // sizes' (Plan::layout_graph) stands for it (fuzz `--dynamic` seed
    // 9992257: an unused `pow(0, -1.5)` made x0.grad NaN at such sizes).
    const graph::Graph* sizes_backward =
        plan_->backward_graph ? plan_->backward_graph.get() : plan_->layout_graph.get();
    if (!all_defined && sizes_backward && !all_finite(out) &&
        (plan_->backward_graph || takes_inputs(*sizes_backward, in))) {
      auto again = graph::aot::run_without_absent_tangents(*sizes_backward, absent,
                                                           [&](size_t i) { return in.at(i); });
      TORCH_CHECK(again.ok(), "tracejit: ", again.ok() ? "" : again.error().message);
      out = std::move(*again);
    }
    return out;
  }
  // The plan's passes for the tangents absent from `grads` (cached per set).
  const std::vector<std::pair<int, std::shared_ptr<const graph::Graph>>>& passes_without(
      const torch::autograd::variable_list& grads) const {
    std::vector<bool> absent;
    for (const auto& g : grads) absent.push_back(!g.defined());
    auto& cache = *plan_->absent_pass_cache;
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.entries.find(absent);
    if (it == cache.entries.end())
      it = cache.entries
               .emplace(absent, gradients_passed_on_without(*plan_->backward_graph,
                                                            static_cast<int>(plan_->differentiable.size()), absent))
               .first;
    return it->second;
  }
  // Called by the engine after apply when the graph is not retained: frees
  // what no output still to backpropagate through reads.
  void release_variables() override {
    if (saved_.size() != saved_versions_.size() || raw_.size() != saved_.size()) return;  // attach did not finish
    std::vector<bool> pending(consumed_.size(), false);
    for (size_t i = 0; i < consumed_.size(); ++i) {
      if (i < last_defined_.size() && last_defined_[i]) consumed_[i] = true;
      pending[i] = !consumed_[i];
    }
    // Without per-tangent sets (a size template's one program), nothing
    // while a tangent is still to come: another part of this node (an
    // output group's CompiledFunctionBackwardPart, released when the engine
    // reached it with no gradient) or a later backward may read any saved
    // value (fuzz seed 9976373: x0.grad all zeros); everything otherwise.
    const bool any_pending = std::find(pending.begin(), pending.end(), true) != pending.end();
    std::vector<bool> keep = plan_->tangent_saved.empty() ? std::vector<bool>(saved_.size(), any_pending)
                                                          : saved_read_by(pending);
    for (size_t k = 0; k < saved_.size(); ++k) {
      if (keep[k] || freed_[k]) continue;
      // a strided value's geometry stays, for the zeros passed in its place
      // to a later backward that does not read it; others stay whole (with
      // no tangent to come, no later apply gets that far: no geometry)
      const bool strided = raw_[k].defined() && raw_[k].layout() == c10::kStrided;
      if (!strided && raw_[k].defined() && any_pending) continue;
      if (strided && any_pending)
        freed_geometry_[k] = Freed{raw_[k].sizes().vec(), raw_[k].strides().vec(), raw_[k].options()};
      saved_[k].reset_data();
      raw_[k].reset();
      freed_[k] = true;
    }
  }
  // A saved tensor the forward made as a view in no-grad mode (the compiled
  // forward runs under no_grad) of a tensor that requires grad, written in
  // place since (an optimizer step between two backwards with
  // retain_graph=True): unpack would ask the view for its grad_fn and raise
  // the no-grad-view error. Eager saved the view made in grad mode, whose
  // grad_fn is regenerated as AsStridedBackward0, and raises the version
  // error: this raises it as SavedVariable::unpack words it.
  void check_no_grad_view_version(size_t k) const {
    const at::Tensor& t = raw_[k];
    if (!t.defined() || !t.is_view() || t.is_inference() || t._version() == saved_versions_[k]) return;
    auto* view = torch::autograd::impl::get_view_autograd_meta(t);
    if (!view || view->get_creation_meta() != torch::autograd::CreationMeta::NO_GRAD_MODE ||
        !t._base().requires_grad())
      return;
    // A view of all of its base (the forward's alias of an input) stands
    // for the base, which eager saved itself (`x @ w` saves the leaf w).
    const at::TensorBase& base = t._base();
    const bool whole = t.sizes() == base.sizes() && t.strides() == base.strides() &&
                       t.storage_offset() == base.storage_offset();
    std::stringstream message;
    message << "one of the variables needed for gradient computation has been modified by an inplace operation: ["
            << t.toString() << " " << (whole ? base.sizes() : t.sizes()) << "]";
    if (!whole)
      message << ", which is output 0 of AsStridedBackward0,";
    else if (const auto& fn = base.grad_fn())
      message << ", which is output " << base.output_nr() << " of " << fn->name() << ",";
    message << " is at version " << t._version() << "; expected version " << saved_versions_[k]
            << " instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
            << "with torch.autograd.set_detect_anomaly(True).";
    TORCH_CHECK(false, message.str());
  }
  // create_graph=True: the gradients with autograd history, computed from
  // the forward's inputs again (double_backward.cpp).
  torch::autograd::variable_list apply_recording(const torch::autograd::variable_list& grads);
  // The call's unique inputs, held weakly (a first-order backward needs none
  // of them, so no memory is kept for it), and their versions then: what a
  // create_graph=True backward recomputes the forward from.
  std::vector<c10::weak_intrusive_ptr<c10::TensorImpl>> inputs_;
  std::vector<uint32_t> input_versions_;
  std::vector<torch::autograd::SavedVariable> saved_;
  std::vector<uint32_t> saved_versions_;  // each saved tensor's version when saved
  std::vector<at::Tensor> raw_;  // the saved data without autograd metadata (no cycle through outputs)
  std::vector<bool> freed_;
  struct Freed {
    std::vector<int64_t> sizes, strides;
    at::TensorOptions options;
  };
  std::vector<Freed> freed_geometry_;

 private:
  // The saved values the backward of the given tangents reads (all of them
  // when the plan has no per-tangent sets).
  std::vector<bool> saved_read_by(const std::vector<bool>& tangents) const {
    const auto& sets = plan_->tangent_saved;
    std::vector<bool> read(saved_.size(), sets.empty());
    for (size_t t = 0; t < tangents.size() && t < sets.size(); ++t)
      if (tangents[t])
        for (int k : sets[t]) read.at(static_cast<size_t>(k)) = true;
    return read;
  }

  std::shared_ptr<const Plan> plan_;
  std::vector<bool> consumed_;       // per differentiable output
  std::vector<bool> last_defined_;   // the last apply's defined gradients
};

// create_graph=True (a gradient penalty: `autograd.grad(D(x), x,
// create_graph=True)`, then a backward through the gradient): eager's
// gradients have history, through its formulas' ops back to the saved
// tensors and from them to the inputs. The compiled backward records none,
// so the node runs the plan's functional forward graph again on the call's
// inputs, then its backward graph on the recomputed saved values and the
// incoming gradients, both as ATen ops with autograd recording (the grad
// mode the engine set): the values are eager's formulas', and so is the
// history. Where the forward cannot be run again as it ran (Plan::
// no_double_backward), or an input is gone or was written since, it raises
// rather than return gradients without history.
torch::autograd::variable_list CompiledFunctionBackward::apply_recording(const torch::autograd::variable_list& grads) {
  const Plan& p = *plan_;
  const char* way_out = "; run the code that makes the loss with tracejit.disable";
  TORCH_CHECK(p.forward_graph && p.backward_graph && inputs_.size() == p.inputs.size(),
              "tracejit: a backward with create_graph=True (a double backward) through this compiled graph is not "
              "supported (",
              p.no_double_backward.empty() ? std::string("no backward graph was kept for it") : p.no_double_backward,
              ")", way_out);
  torch::autograd::variable_list result(num_outputs());
  bool any_defined = false, all_defined = true;
  for (size_t i = 0; i < grads.size(); ++i) {
    any_defined |= grads[i].defined();
    all_defined &= grads[i].defined();
    TORCH_CHECK(!(grads[i].defined() && consumed_.at(i)), torch::autograd::ERR_BACKWARD_TWICE);
  }
  last_defined_.assign(grads.size(), false);
  for (size_t i = 0; i < grads.size(); ++i) last_defined_[i] = grads[i].defined();
  if (!any_defined) return result;
  std::vector<at::Tensor> unique;
  unique.reserve(inputs_.size());
  for (size_t u = 0; u < inputs_.size(); ++u) {
    c10::intrusive_ptr<c10::TensorImpl> impl = inputs_[u].lock();
    TORCH_CHECK(impl, "tracejit: a backward with create_graph=True through a compiled graph needs the graph's inputs "
                      "again, and one of them was freed", way_out);
    at::Tensor t(std::move(impl));
    if (!t.is_inference() && t._version() != input_versions_[u]) {
      std::stringstream message;
      message << "one of the variables needed for gradient computation has been modified by an inplace operation: ["
              << t.toString() << " " << t.sizes() << "] is at version " << t._version() << "; expected version "
              << input_versions_[u]
              << " instead. Hint: enable anomaly detection to find the operation that failed to compute its "
                 "gradient, with torch.autograd.set_detect_anomaly(True).";
      TORCH_CHECK(false, message.str());
    }
    unique.push_back(std::move(t));
  }
  std::vector<at::Tensor> fw = graph::interpret_or_throw(*p.forward_graph, unique);
  TORCH_CHECK(fw.size() == static_cast<size_t>(p.num_fw_outputs) + saved_.size(),
              "tracejit: the recomputed forward gave ", fw.size(), " values, ", p.num_fw_outputs + saved_.size(),
              " expected");
  std::vector<at::Tensor> in(fw.begin() + p.num_fw_outputs, fw.end());
  for (size_t i = 0; i < grads.size(); ++i)
    in.push_back(grads[i].defined() ? grads[i] : input_metadata(i).zeros_like());
  std::vector<at::Tensor> out = graph::interpret_or_throw(*p.backward_graph, in);
  if (!all_defined && !all_finite(out)) {  // as apply: formulas only absent tangents reach are not run
    std::vector<bool> absent;
    for (const auto& g : grads) absent.push_back(!g.defined());
    auto again = graph::aot::run_without_absent_tangents(*p.backward_graph, absent, [&](size_t i) { return in.at(i); });
    TORCH_CHECK(again.ok(), "tracejit: ", again.ok() ? "" : again.error().message);
    out = std::move(*again);
  }
  size_t next = 0;
  for (size_t i = 0; i < result.size(); ++i) {
    if (!p.grad_defined[i]) continue;
    const at::Tensor& g = out.at(next++);
    bool reached = p.grad_tangents[i].empty();
    for (int t : p.grad_tangents[i]) reached |= grads.at(static_cast<size_t>(t)).defined();
    if (reached && g.defined()) result[i] = g;
  }
  return result;
}

// One group of a node's differentiable outputs whose gradients reach inputs
// no other group's reach (Plan::grad_tangents: the tangents each gradient
// edge reads or whose output's graph reaches it): its own node, holding
// only its inputs' edges, so a backward from these outputs alone makes the
// engine run no grad_fn only other outputs lead to, as in eager, where a
// grad_fn saving a value written since raises (fuzz seed 9988067: `v4 =
// x.std(); v5 = x.std(); v5.squeeze_()`, a break, a backward from v4 alone
// ran v5's StdBackward0). It runs the whole node with the other outputs'
// gradients absent.
class CompiledFunctionBackwardPart : public torch::autograd::Node {
 public:
  CompiledFunctionBackwardPart(std::shared_ptr<CompiledFunctionBackward> whole, std::vector<size_t> outputs,
                               std::vector<size_t> edges)
      : whole_(std::move(whole)), outputs_(std::move(outputs)), edges_(std::move(edges)) {}
  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    torch::autograd::variable_list all(whole_->num_inputs());
    for (size_t j = 0; j < grads.size() && j < outputs_.size(); ++j) all[outputs_[j]] = std::move(grads[j]);
    torch::autograd::variable_list got = whole_->apply(std::move(all));
    torch::autograd::variable_list result(num_outputs());
    for (size_t k = 0; k < edges_.size() && k < result.size(); ++k) result[k] = std::move(got.at(edges_[k]));
    return result;
  }
  void release_variables() override { whole_->release_variables(); }
  std::string name() const override { return "CompiledFunctionBackward"; }

 private:
  std::shared_ptr<CompiledFunctionBackward> whole_;
  std::vector<size_t> outputs_;  // the whole node's inputs (differentiable outputs) this part receives
  std::vector<size_t> edges_;    // the whole node's edges (gradient inputs) this part hands on
};

// Sets each part's edges, a part an edge of another leads to first (a node
// an edge leads to takes no new edges: its topological number is fixed).
void set_part_edges(const std::vector<std::shared_ptr<CompiledFunctionBackwardPart>>& made,
                    std::vector<torch::autograd::edge_list>& own) {
  std::vector<bool> set(made.size(), false);
  for (size_t round = 0; round < made.size(); ++round)
    for (size_t p = 0; p < made.size(); ++p) {
      if (set[p]) continue;
      bool ready = true;
      for (const auto& e : own[p])
        for (size_t q = 0; q < made.size() && ready; ++q) ready = set[q] || e.function != made[q];
      if (!ready) continue;
      made[p]->set_next_edges(std::move(own[p]));
      set[p] = true;
    }
  TORCH_CHECK(std::find(set.begin(), set.end(), false) == set.end(),
              report_internal_error("AOT's backward node", "the parts' cut edges make a cycle"));
}

}  // namespace

namespace {
std::atomic<long long> g_merged_parts{0};  // groups merged into another's part, see merged_backward_parts
}  // namespace

long long merged_backward_parts() { return g_merged_parts.load(); }
void zero_merged_backward_parts() { g_merged_parts = 0; }

void attach_backward(const std::shared_ptr<const Plan>& plan, const std::vector<at::Tensor>& unique,
                     std::vector<at::Tensor>& fw, const std::vector<std::shared_ptr<torch::autograd::Node>>& relays) {
  auto node = std::shared_ptr<CompiledFunctionBackward>(new CompiledFunctionBackward(plan),
                                                        torch::autograd::deleteNode);
  torch::autograd::edge_list edges;
  edges.reserve(plan->grad_inputs.size());
  // An input whose gradient the backward never defines (nothing the
  // outputs need reads it) gets no edge, as in eager: an edge would make
  // the engine run that input's grad_fn (with undefined gradients) — an
  // earlier call's node whose saved tensors are freed raises "backward
  // through the graph a second time".
  // (A cut edge, leading to another part's input, is set once every part
  // is made; the whole node holds none: no cycle through it.)
  bool cut = false;
  for (size_t i = 0; i < plan->grad_inputs.size(); ++i) {
    const int u = plan->grad_inputs[i];
    cut |= plan->grad_defined[i] && graph::aot::Capture::is_cut_edge(u);
    edges.push_back(!plan->grad_defined[i] || graph::aot::Capture::is_cut_edge(u) ? torch::autograd::Edge()
                    : i < relays.size() && relays[i] ? torch::autograd::Edge(relays[i], 0)
                                                     : torch::autograd::impl::gradient_edge(unique[u]));
  }
  // one differentiable output (a loss): one group, none to find
  const auto groups = plan->differentiable.size() > 1 ? output_groups(*plan) : OutputGroups{};
  const auto parts = groups.empty() ? OutputGroups{} : in_arrival_order(*plan, groups);
  TORCH_CHECK(!cut || parts.size() > 1,
              report_internal_error("AOT's backward node", "a cut output's readers share its node"));
  for (const auto& part : parts) {
    size_t merged = 0;  // the groups whose outputs this part takes
    for (const auto& group : groups)
      merged += std::find(part.first.begin(), part.first.end(), group.first.at(0)) != part.first.end();
    if (merged > 1) ++g_merged_parts;
  }
  if (parts.size() > 1) {  // a node per group of outputs, each running the whole one
    std::vector<std::shared_ptr<CompiledFunctionBackwardPart>> made;
    for (const auto& [outputs, parts_edges] : parts) {
      made.push_back(std::shared_ptr<CompiledFunctionBackwardPart>(
          new CompiledFunctionBackwardPart(node, outputs, parts_edges), torch::autograd::deleteNode));
      for (size_t j : outputs) torch::autograd::set_history(fw[static_cast<size_t>(plan->differentiable[j])], made.back());
    }
    std::vector<torch::autograd::edge_list> own(parts.size());
    for (size_t p = 0; p < parts.size(); ++p)
      for (size_t e : parts[p].second) {
        const int u = plan->grad_inputs[e];
        if (!graph::aot::Capture::is_cut_edge(u)) {
          own[p].push_back(edges[e]);
          continue;
        }
        own[p].push_back(torch::autograd::impl::gradient_edge(fw.at(static_cast<size_t>(cut_edge_slot(*plan, u)))));
        TORCH_CHECK(own[p].back().function != made[p],
                    report_internal_error("AOT's backward node", "a cut output's readers share its node"));
      }
    set_part_edges(made, own);
    for (int slot : plan->differentiable) node->add_input_metadata(fw[slot]);
    node->set_next_edges(std::move(edges));
  } else {
    node->set_next_edges(std::move(edges));
    for (int slot : plan->differentiable) torch::autograd::set_history(fw[slot], node);
  }
  node->saved_.reserve(fw.size() - plan->num_fw_outputs);
  for (size_t i = plan->num_fw_outputs; i < fw.size(); ++i) {
    bool is_output = false;
    for (int slot : plan->differentiable) is_output |= fw[slot].is_same(fw[i]);
    node->saved_.emplace_back(fw[i], is_output);
    node->saved_versions_.push_back(fw[i].is_inference() ? 0 : fw[i]._version());
    // Only an output holds this node (its grad_fn): its data without
    // autograd metadata breaks the cycle; the others are held as they are
    // (variable_data() is a TensorImpl allocation per saved tensor per call).
    node->raw_.push_back(is_output ? fw[i].variable_data() : fw[i]);
  }
  node->freed_.assign(node->saved_.size(), false);
  node->freed_geometry_.resize(node->saved_.size());
  if (plan->forward_graph)
    for (const at::Tensor& t : unique) {
      node->inputs_.emplace_back(t.getIntrusivePtr());
      node->input_versions_.push_back(t.is_inference() ? 0 : t._version());
    }
}

}  // namespace tj::jit::aot_rt
