// The `tracejit::autograd_grad` operator; see autograd_grad.h.
#include "graph/autograd_grad.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/ones_like.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/utils/grad_layout_contract.h>
#include <torch/library.h>

namespace tj::graph {

namespace {

WithoutGil& gil_release() {
  static WithoutGil release;
  return release;
}

// What AccumulateGrad stores into a leaf's `.grad` when it is None (eager's
// accumulateGrad, its first branch; grad mode is off in the engine).
at::Tensor as_accumulated(at::Tensor grad, const at::Tensor& leaf) {
  if (grad.use_count() <= 1 && torch::autograd::utils::obeys_layout_contract(grad, leaf)) return grad.detach();
  return torch::autograd::utils::clone_obey_contract(grad, leaf);
}

// Meta tensors (meta inference, AOT's eager-layout run): each result laid
// out as the leaf, as AccumulateGrad's contract lays it out.
std::vector<at::Tensor> meta_results(at::TensorList leaves) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& leaf : leaves) {
    auto options = leaf.options().requires_grad(false);
    out.push_back(leaf.is_non_overlapping_and_dense() ? at::empty_strided(leaf.sizes(), leaf.strides(), options)
                                                      : at::empty(leaf.sizes(), options));
  }
  return out;
}

std::vector<at::Tensor> autograd_grad(const at::Tensor& loss, at::TensorList leaves,
                                      const c10::optional<at::Tensor>& grad_output, bool retain_graph) {
  if (loss.is_meta()) return meta_results(leaves);
  std::vector<at::Tensor> grads;
  {
    // Tensor.backward's default: ones like a scalar loss (torch.autograd's _make_grads).
    std::vector<at::Tensor> outputs{loss};
    std::vector<at::Tensor> seeds{grad_output.has_value() && grad_output->defined()
                                      ? *grad_output
                                      : at::ones_like(loss, at::MemoryFormat::Preserve)};
    std::vector<at::Tensor> inputs(leaves.begin(), leaves.end());
    auto body = [&] {
      grads = torch::autograd::grad(outputs, inputs, seeds, retain_graph, /*create_graph=*/false,
                                    /*allow_unused=*/true);
    };
    if (gil_release()) gil_release()(body);
    else body();
  }
  TORCH_CHECK(grads.size() == leaves.size(), "tracejit: autograd_grad got ", grads.size(), " gradients for ",
              leaves.size(), " leaves");
  for (size_t i = 0; i < grads.size(); ++i) {
    // The tracer gave a `.grad` write to every leaf the loss reaches and
    // refused what could leave one without a dense gradient: anything else
    // is a bug of ours, raised before any `.grad` is written.
    TORCH_CHECK(grads[i].defined(), "tracejit: the traced backward gave no gradient for leaf ", i,
                " where the trace expected one (please report)");
    TORCH_CHECK(grads[i].layout() == at::kStrided && !grads[i].requires_grad(),
                "tracejit: the traced backward gave leaf ", i,
                " a sparse gradient or one requiring grad (please report)");
    grads[i] = as_accumulated(std::move(grads[i]), leaves[i]);
  }
  return grads;
}

}  // namespace

void set_autograd_grad_gil_release(WithoutGil release) { gil_release() = std::move(release); }

void register_autograd_grad_op() {
  static std::once_flag once;
  std::call_once(once, [] {
    static auto def = std::make_unique<torch::Library>(torch::Library::DEF, "tracejit", c10::nullopt, __FILE__,
                                                       static_cast<uint32_t>(__LINE__));
    def->def(
        "autograd_grad(Tensor loss, Tensor[] leaves, Tensor? grad_output=None, bool retain_graph=False) -> Tensor[]");
    static auto impl = std::make_unique<torch::Library>(
        torch::Library::IMPL, "tracejit", c10::DispatchKey::CompositeImplicitAutograd, __FILE__,
        static_cast<uint32_t>(__LINE__));
    impl->impl("autograd_grad", TORCH_FN(autograd_grad));
  });
}

}  // namespace tj::graph
