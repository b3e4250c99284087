// Writes of values that require grad into tensors that do not, as the
// other tensors of the written memory see them. In eager, `x0[0] = x1` (x1
// requiring grad, x0 not) gives x0 the grad_fn CopySlices, and every
// differentiable view of x0's base, made before the write or after it,
// requires grad from then on (autograd regenerates a view's grad_fn when
// its base's version moves). The graph records the write on the view it
// went through (a `copy_` of a `select` of x0): that node's meta requires
// grad, the metas of x0's placeholder and of its other views do not, and
// they cannot change (the placeholder describes the input as it comes in).
// So the trace keeps the writes (TraceShared::grad_writes) and asks, for a
// tensor read later, whether one of them reached its view family: its
// `requires_grad` (tensor_methods.cpp), its `grad_fn` (unknown until the
// graph runs: a graph break) and the metas of the ops that read it
// (torch_ops.cpp, take_grad_writes_into_meta) follow eager's.
//
// A view family: the tensors reached from one base through differentiable
// view ops (not `detach`, `.data`, sparse accessors, whose results are
// outside autograd's view tracking) and in-place ops, which return their
// argument. Distinct inputs that alias one storage are distinct families
// here (their autograd relation is not in the graph).
#include <set>
#include <string>

#include "graph/sym_ints.h"
#include "support/tensor_bridge.h"
#include "tracer/grad_writes.h"
#include "tracer/torch_ops.h"
#include "tracer/translator.h"

namespace tj::tracer {

bool is_differentiable_view(const graph::OpInfo& op) {
  static const std::set<std::string, std::less<>> kNonDifferentiableViews = {
      "detach", "_indices", "_values", "indices", "values", "crow_indices", "col_indices", "ccol_indices",
      "row_indices"};
  return op.traits.view && !kNonDifferentiableViews.count(op.base_name());
}

namespace {

bool can_require_grad(const graph::TensorMeta& m) {
  return c10::isFloatingType(m.dtype) || c10::isComplexType(m.dtype);
}

// The first tensor of `n`'s view family: back through differentiable views,
// getitems of multi-output views (unbind, split) and in-place ops (but
// `detach_`, after which the tensor leaves autograd, and `requires_grad_`,
// which sets a leaf's flag) to the first node that is none of these.
const graph::Node* family_root(const graph::Node* n) {
  while (n->kind() == graph::NodeKind::call_function && !graph::is_sym(*n) && !n->op()->is_autograd_function &&
         !n->args().empty() && n->args()[0].is_node()) {
    const graph::Node* prev = n->args()[0].node();
    const graph::OpInfo& op = *n->op();
    bool link = false;
    if (op.is_getitem)
      link = prev->kind() == graph::NodeKind::call_function && !graph::is_sym(*prev) && !prev->op()->is_builtin() &&
             is_differentiable_view(*prev->op());
    else if (op.traits.inplace)
      link = op.base_name() != "detach_" && op.base_name() != "requires_grad_";
    else
      link = is_differentiable_view(op);
    if (!link) break;
    n = prev;
  }
  return n;
}

// `fill_` with a tensor value that requires grad (Python's `t[...] = v`
// and `t[i] = v` of a 0-d v, fuzz `--dynamic` seed 9979603): LibTorch
// 1.13's autograd rebases the target's history on FillBackward3 without
// checking that its dtype can require grad, so even a bool or integer
// target's view family requires grad after it (`requires_grad_()` would
// refuse that; `copy_` checks: a write of a same-sized value leaves False).
// Most ops reading such a tensor then hit LibTorch's own internal assert in
// eager; its flag (printed, returned) and the float results of ops reading
// it are what the trace follows.
bool fills_with_grad_value(TraceContext cx, const graph::Node& node) {
  if (!node.op() || node.op()->base_name() != "fill_" || node.args().size() < 2 || !node.args()[1].is_node())
    return false;
  const graph::Node* value = node.args()[1].node();
  const graph::TensorMeta* vm = value->meta().tensor();
  return vm && (vm->requires_grad || requires_grad_by_write(cx, value));
}

}  // namespace

void note_grad_write(TraceContext cx, const graph::Node& node) {
  const graph::OpInfo* op = node.op();
  const graph::TensorMeta* m = node.meta().tensor();
  if (!op || !op->traits.inplace || op->base_name() == "requires_grad_" || op->base_name() == "detach_" || !m ||
      !grad_mode_enabled() || node.args().empty() || !node.args()[0].is_node() ||
      !(m->requires_grad || fills_with_grad_value(cx, node)))
    return;
  // A target that required grad already: so does its family (its views
  // follow their base's flag), nothing to note (a training step's in-place
  // updates of computed tensors never get here).
  const graph::Node* target = node.args()[0].node();
  const graph::TensorMeta* tm = target->meta().tensor();
  if (!tm || tm->requires_grad || requires_grad_by_write(cx, target)) return;
  cx.shared().grad_writes.emplace_back(&node, node.name());
}

bool requires_grad_by_write(TraceContext cx, const graph::Node* node) {
  const TraceShared& shared = cx.shared();
  if (shared.grad_writes.empty() || !node) return false;
  const graph::TensorMeta* m = node->meta().tensor();
  if (!m) return false;
  const bool any_write = can_require_grad(*m);  // else only a fill_ (fills_with_grad_value)
  const graph::Graph& g = *shared.graph;
  const graph::Node* root = family_root(node);
  for (const auto& [write, name] : shared.grad_writes) {
    // A write undone by a graph break at an earlier checkpoint is no longer
    // in the graph (a later node may have its address, not its name).
    if (g.find(name) != write) continue;
    if (family_root(write) == root && (any_write || write->op()->base_name() == "fill_")) return true;
  }
  return false;
}

bool grad_written_input_read(TraceContext cx, const graph::Node& node) {
  if (cx.shared().grad_writes.empty()) return false;
  for (const graph::Node* in : node.inputs()) {
    const graph::TensorMeta* m = in->meta().tensor();
    // (not a bool or integer tensor a fill_ made require grad: whether an
    // op's result then requires grad depends on which of its arguments the
    // op differentiates, `where`'s condition none; the metas' flags stay)
    if (m && !m->requires_grad && can_require_grad(*m) && requires_grad_by_write(cx, in)) return true;
  }
  return false;
}

}  // namespace tj::tracer
