// The autograd node of a traced custom Function; see autograd_function.h.
// It mirrors LibTorch's `Function<T>::apply` / `CppNode<T>::apply` with the
// forward already done: edges to the inputs, `_wrap_outputs` on the raw
// outputs, saved tensors kept as SavedVariables (so a saved tensor written
// in place before backward raises eager's error).
#include "graph/autograd_function.h"

#include <mutex>
#include <unordered_set>

#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/saved_variable.h>

namespace tj::graph {

namespace {

namespace ag = torch::autograd;

struct AutogradFunctionNode final : ag::Node {
  std::shared_ptr<const AutogradFunctionBody> body;
  BackwardRunner run;
  ZerosMaker zeros;
  std::vector<ag::SavedVariable> saved;
  std::vector<TensorMeta> output_metas;  // for materialized zeros
  std::mutex mu;

  std::string name() const override { return body->class_name + "Backward"; }

  ag::variable_list apply(ag::variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<at::Tensor> in;
    in.reserve(saved.size() + grads.size());
    for (const ag::SavedVariable& v : saved) in.push_back(v.unpack(shared_from_this()));
    TORCH_CHECK(grads.size() == output_metas.size(), "tracejit: ", name(), " got ", grads.size(), " grads for ",
                output_metas.size(), " outputs");
    for (size_t j = 0; j < grads.size(); ++j) in.push_back(grads[j].defined() ? grads[j] : zeros(output_metas[j]));
    std::vector<at::Tensor> outs = run(*body, std::move(in));
    ag::variable_list result;
    result.reserve(body->grad_of_input.size());
    for (int k : body->grad_of_input) {
      TORCH_CHECK(k < static_cast<int>(outs.size()), "tracejit: ", name(), ": the body returned too few gradients");
      result.push_back(k < 0 ? at::Tensor() : outs[static_cast<size_t>(k)]);
    }
    return result;  // the engine's validate_outputs casts and sum_to's as for eager's Functions
  }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mu);
    for (ag::SavedVariable& v : saved) v.reset_data();
  }
};

std::vector<Node*> node_items(const Arg& arg) {
  std::vector<Node*> out;
  if (arg.is_list())
    for (const Arg& item : arg.items())
      if (item.is_node()) out.push_back(item.node());
  return out;
}

}  // namespace

AutogradFunctionArgs autograd_function_args(const Node& node) {
  AutogradFunctionArgs out;
  if (node.args().size() != 4) return out;
  out.inputs = node_items(node.args()[1]);
  out.outputs = node_items(node.args()[2]);
  out.saved = node_items(node.args()[3]);
  return out;
}

std::vector<at::Tensor> apply_autograd_function(std::shared_ptr<const AutogradFunctionBody> body,
                                                const std::vector<at::Tensor>& inputs,
                                                const std::vector<at::Tensor>& outputs,
                                                const std::vector<at::Tensor>& saved, BackwardRunner run,
                                                ZerosMaker zeros) {
  bool executable = c10::GradMode::is_enabled() && ag::any_variable_requires_grad(inputs);
  if (!executable) return outputs;
  std::shared_ptr<AutogradFunctionNode> node(new AutogradFunctionNode(), ag::deleteNode);
  node->body = body;
  node->run = std::move(run);
  node->zeros = std::move(zeros);
  node->set_next_edges(ag::collect_next_edges(inputs));
  node->clear_input_metadata();
  std::unordered_set<at::TensorImpl*> non_differentiable;
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (j < body->non_differentiable.size() && body->non_differentiable[j])
      non_differentiable.insert(outputs[j].unsafeGetTensorImpl());
    node->output_metas.push_back(TensorMeta::of(outputs[j]));
  }
  std::vector<c10::optional<at::Tensor>> raw(outputs.begin(), outputs.end());
  ag::_jvp_fn_t jvp = [name = body->class_name](ag::variable_list, ag::variable_list) -> ag::variable_list {
    TORCH_CHECK(false, "tracejit: forward-mode AD through the compiled custom Function ", name, " is not supported");
  };
  std::vector<c10::optional<at::Tensor>> wrapped = ag::_wrap_outputs(inputs, non_differentiable, {}, raw, node, jvp);
  // Saved outputs would hold their grad_fn (the node) in a cycle: eager
  // saves them as outputs, and so do we.
  for (const at::Tensor& t : saved) {
    bool is_output = t.defined() && t.grad_fn() == node;
    node->saved.emplace_back(t, is_output);
  }
  std::vector<at::Tensor> result;
  result.reserve(wrapped.size());
  for (auto& w : wrapped) result.push_back(w.has_value() ? *w : at::Tensor());
  return result;
}

Status check_autograd_function(const Graph& graph, const Node& node) {
  auto fail = [&](const std::string& why) { return Error{"lint: " + node.name() + ": " + why}; };
  const auto& args = node.args();
  if (args.size() != 4 || !args[0].is<std::string>() || !args[1].is_list() || !args[2].is_list() || !args[3].is_list())
    return fail("autograd_function takes (name, (inputs...), (outputs...), (saved...))");
  auto body = graph.autograd_function(args[0].as<std::string>());
  if (!body) return fail("no autograd_function body '" + args[0].as<std::string>() + "'");
  for (size_t i = 1; i < 4; ++i)
    for (const Arg& item : args[i].items())
      if (!item.is_node() || !item.node()->meta().tensor()) return fail("an input, output or saved item is not a tensor node");
  if (static_cast<int>(args[1].items().size()) != body->num_inputs ||
      static_cast<int>(args[2].items().size()) != body->num_outputs ||
      static_cast<int>(args[3].items().size()) != body->num_saved)
    return fail("argument counts differ from the body's");
  if (!body->backward) return fail("the body has no backward graph");
  if (body->backward->placeholders().size() != static_cast<size_t>(body->num_saved + body->num_outputs))
    return fail("the backward takes " + std::to_string(body->backward->placeholders().size()) + " inputs, expected " +
                std::to_string(body->num_saved + body->num_outputs));
  if (body->non_differentiable.size() != static_cast<size_t>(body->num_outputs) ||
      body->grad_of_input.size() != static_cast<size_t>(body->num_inputs))
    return fail("the body's per-output or per-input tables have the wrong length");
  Node* out = body->backward->output_node();
  int num_grads = out && out->args().size() == 1 && out->args()[0].is_list()
                      ? static_cast<int>(out->args()[0].items().size())
                      : -1;
  for (int k : body->grad_of_input)
    if (k < -1 || k >= num_grads) return fail("a gradient index is out of range");
  return ok_status();
}

}  // namespace tj::graph
