// The steps around AOT; see boundary.h.
#include "compile/aot/boundary.h"

#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include "compile/aot/joint_step.h"
#include "graph/op_registry.h"
#include "graph/passes/unused_results.h"
#include "support/log.h"

namespace tj::compile {

namespace {

// `x.view(dtype)` to a dtype autograd does not differentiate (an integer
// or bool type): eager's result shares x's memory but is no autograd view,
// like detach()'s.
bool non_differentiable_dtype_view(const graph::Node* n) {
  const graph::TensorMeta* m = n->meta().tensor();
  return n->op() && !n->op()->is_getitem && n->op()->qualified_name() == "aten::view.dtype" && m &&
         !c10::isFloatingType(m->dtype) && !c10::isComplexType(m->dtype);
}

// Whether eager's tensor made by `n` is an autograd view (`_is_view()`:
// `detach_()` refuses it): a view op's result is one, detach()'s is not,
// an in-place op's result is its argument, anything else is new.
// `std::nullopt`: not known (a graph input: the caller's own tensor).
std::optional<bool> eager_view(const graph::Node* n) {
  for (int depth = 0; depth < 1000; ++depth) {
    if (n->kind() != graph::NodeKind::call_function || !n->op()) return std::nullopt;
    const graph::OpInfo* op = n->op();
    if (op->is_getitem) {
      const std::vector<graph::Node*> in = n->inputs();
      return !in.empty() && in.front()->op() && in.front()->op()->traits.view;  // split, unbind, chunk
    }
    if (op->base_name() == "detach" || non_differentiable_dtype_view(n)) return false;
    // an in-place op returns its argument (`squeeze_`, whose schema makes
    // it a view op, too: fuzz seed 9904717)
    if (op->traits.inplace && !n->args().empty() && n->args()[0].is_node()) {
      n = n->args()[0].node();
      continue;
    }
    // `to` returns its argument itself only when nothing changes; to
    // another dtype it makes a new tensor (seed 9904717: `.long()` of bool)
    if (op->base_name() == "to" && !n->args().empty() && n->args()[0].is_node() && n->meta().tensor() &&
        n->args()[0].node()->meta().tensor() &&
        n->meta().tensor()->dtype != n->args()[0].node()->meta().tensor()->dtype)
      return false;
    // a result the tracer knows to be on another storage than its argument
    if (!n->args().empty() && n->args()[0].is_node() && n->meta().tensor() && n->args()[0].node()->meta().tensor() &&
        n->meta().tensor()->storage_id >= 0 && n->args()[0].node()->meta().tensor()->storage_id >= 0 &&
        n->meta().tensor()->storage_id != n->args()[0].node()->meta().tensor()->storage_id)
      return false;
    if (op->traits.view) return true;
    if (op->traits.mutates && !op->traits.inplace) return std::nullopt;  // out=: the caller's tensor
    if (!op->traits.inplace || n->args().empty() || !n->args()[0].is_node()) return false;
    n = n->args()[0].node();
  }
  return std::nullopt;
}

// One entry per tensor the output arg flattens to (as AOT flattens it).
void output_fixes(const graph::Arg& a, std::vector<OutputFix>& out, bool backward_inside) {
  if (a.is_list()) {
    for (const graph::Arg& item : a.items()) output_fixes(item, out, backward_inside);
    return;
  }
  if (!a.is_node()) return;
  const graph::Node* n = a.node();
  if (n->meta().tensor()) {
    if (backward_inside && n->kind() != graph::NodeKind::placeholder && n->meta().tensor()->requires_grad) {
      out.push_back(OutputFix::freed_history);
      return;
    }
    bool detach = n->op() && !n->op()->is_getitem && (n->op()->base_name() == "detach" || non_differentiable_dtype_view(n));
    out.push_back(detach ? OutputFix::detach : eager_view(n) == false ? OutputFix::no_view : OutputFix::none);
    return;
  }
  if (n->meta().fake_is_sequence) out.insert(out.end(), n->meta().fake.size(), OutputFix::none);
}

bool shares_input(const at::Tensor& t, c10::ArrayRef<at::Tensor> inputs) {
  for (const at::Tensor& i : inputs)
    if (!t.has_storage() || !i.has_storage() || t.storage().is_alias_of(i.storage())) return true;
  return false;
}

}  // namespace

std::string aot_cannot_represent(const graph::Graph& graph) {
  for (const graph::Node* n : graph.nodes()) {
    if (n->kind() != graph::NodeKind::call_function || !n->op() || n->op()->is_getitem) continue;
    const std::string base = n->op()->base_name();
    if (base == "requires_grad_")
      return n->name() + " (requires_grad_): a functional graph cannot make a tensor require grad";
    if (base == "set_") return n->name() + " (set_): functionalization cannot swap a tensor's storage";
    if (base == "detach_") return n->name() + " (detach_): a functional graph cannot detach a tensor in place";
    // squeeze_/t_ of a tensor that requires grad: the joint graph's autograd
    // rebases that tensor's history, which LibTorch 1.13 asserts against
    // (fuzz seed 504896).
    static const char* kMetadataInplace[] = {"squeeze_", "unsqueeze_", "t_", "transpose_", "swapdims_", "swapaxes_",
                                             "as_strided_"};
    for (const char* m : kMetadataInplace) {
      if (base != m || n->args().empty() || !n->args()[0].is_node()) continue;
      const auto& target = n->args()[0].node()->meta().tensor();
      if (target && target->requires_grad)
        return n->name() + " (" + base + "): a tensor that requires grad changes its shape in place";
    }
  }
  return "";
}

AotBoundary prepare_for_aot(std::shared_ptr<const graph::Graph> captured) {
  AotBoundary b;
  if (const graph::Node* out = captured->output_node(); out && out->args().size() == 1)
    output_fixes(out->args()[0], b.fixes, graph::aot::runs_backward_inside(*captured));
  std::shared_ptr<graph::Graph> copy = captured->clone();
  b.extra_outputs = graph::expose_unused_results(*copy);
  if (b.extra_outputs > 0)
    TJ_LOG(aot_graphs, "{} unused result(s) kept as extra outputs (eager computes them; they may fail)",
           b.extra_outputs);
  b.graph = b.extra_outputs > 0 ? std::shared_ptr<const graph::Graph>(std::move(copy)) : std::move(captured);
  bool any = false;
  for (OutputFix f : b.fixes) any |= f != OutputFix::none;
  if (!any) b.fixes.clear();
  return b;
}

jit::CompiledFn with_eager_outputs(jit::CompiledFn fn, const AotBoundary& boundary) {
  if (boundary.extra_outputs == 0 && boundary.fixes.empty()) return fn;
  return [fn = std::move(fn), extra = static_cast<size_t>(boundary.extra_outputs),
          fixes = boundary.fixes](c10::ArrayRef<at::Tensor> in) {
    std::vector<at::Tensor> out = fn(in);
    TORCH_INTERNAL_ASSERT(out.size() >= extra, "tracejit: AOT's extra outputs are missing");
    out.resize(out.size() - extra);
    if (fixes.size() != out.size()) return out;  // flattened unlike the captured outputs: leave them
    // One detached tensor per tensor AOT returned (a tensor returned twice stays one).
    std::vector<std::pair<at::Tensor, at::Tensor>> done;
    for (size_t k = 0; k < out.size(); ++k) {
      if (fixes[k] == OutputFix::none || !out[k].defined()) continue;
      // A view of an intermediate AOT regenerated where eager has a tensor
      // of its own: detached, unless it requires grad (detaching would lose
      // its history; only `_is_view()` and `detach_()` tell then).
      if (fixes[k] == OutputFix::no_view && (!out[k].is_view() || out[k].requires_grad() || shares_input(out[k], in)))
        continue;
      at::Tensor d;
      for (const auto& [from, to] : done)
        if (from.is_same(out[k])) d = to;
      if (!d.defined()) {
        d = fixes[k] == OutputFix::freed_history ? graph::aot::with_freed_history(out[k]) : out[k].detach();
        done.emplace_back(out[k], d);
      }
      out[k] = d;
    }
    return out;
  };
}

}  // namespace tj::compile
