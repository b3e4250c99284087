// What a graph does outside its own values; see effects.h.
#include "graph/effects.h"

#include <set>
#include <string>

#include "graph/op_registry.h"
#include "graph/passes/mutation.h"

namespace tj::graph {

namespace {

// In-place ops that change a tensor's sizes or strides, not only its data.
bool changes_metadata(const std::string& name) {
  static const std::set<std::string> names = {"t_", "transpose_", "squeeze_", "unsqueeze_", "as_strided_",
                                              "resize_", "resize_as_", "swapdims_", "swapaxes_", "set_"};
  return names.count(name) > 0;
}

bool is_float_meta(const TensorMeta& t) {
  return t.dtype == c10::ScalarType::Float || t.dtype == c10::ScalarType::Double;
}

// Every tensor the node reads or makes is float32/float64: the CPU kernels
// of other dtypes reject some inputs their meta kernels accept (log_softmax
// of a bool tensor, many float16 ops), and integers divide by zero.
bool only_float_tensors(const Node& n) {
  if (n.meta().fake.empty()) return false;
  for (const TensorMeta& t : n.meta().fake)
    if (!is_float_meta(t)) return false;
  for (const Node* in : n.inputs())
    for (const TensorMeta& t : in->meta().fake)
      if (!is_float_meta(t)) return false;
  return true;
}

}  // namespace

// Ops that cannot raise whatever the values are listed; anything else may.
bool may_raise_on_data(const Node& n) {
  const OpInfo* op = n.op();
  if (!op) return false;
  if (op->is_getitem || op->sym != SymOp::none) return false;
  if (op->is_autograd_function || op->traits.random || op->traits.check) return true;
  if (op->traits.view && !op->traits.mutates) return false;
  if (!only_float_tensors(n)) return true;
  if (op->traits.pointwise || op->traits.reduction) return false;
  static const std::set<std::string> safe = {
      "copy", "fill", "zero", "detach", "alias", "clone", "contiguous", "expand", "expand_as", "conj",
      "resolve_conj", "resolve_neg", "scalar_tensor", "zeros", "ones", "empty", "full", "zeros_like",
      "ones_like", "empty_like", "full_like", "new_zeros", "new_ones", "new_empty", "new_full", "mm", "addmm",
      "bmm", "baddbmm", "matmul", "linear", "t", "lift_fresh", "lift_fresh_copy", "_unsafe_view", "cat",
      "stack", "softmax", "_softmax", "log_softmax", "_log_softmax", "native_layer_norm", "layer_norm",
      // a training step's backward (checked on NaN, inf and out-of-range values: only sizes raise;
      // binary_cross_entropy itself raises on inputs outside [0, 1], its backward does not)
      "convolution", "convolution_backward", "native_batch_norm", "native_batch_norm_backward",
      "native_layer_norm_backward", "_softmax_backward_data", "_log_softmax_backward_data",
      "binary_cross_entropy_backward"};
  return !safe.count(op->stem_name());
}

GraphEffects effects_of(const Graph& graph) {
  GraphEffects out;
  auto mutated = detail::possibly_mutated(graph);
  int placeholder = 0;
  bool written_before = false;
  for (const Node* n : graph.nodes()) {
    if (n->op() && n->op()->traits.mutates) written_before = true;
    if (written_before && may_raise_on_data(*n)) out.may_fail_after_a_write = true;
    if (n->kind() == NodeKind::placeholder || n->kind() == NodeKind::get_attr) {
      bool written = mutated.count(n) > 0;
      out.writes_inputs |= written;
      if (written && n->kind() == NodeKind::placeholder) out.written_inputs.push_back(placeholder);
      if (written && n->kind() == NodeKind::get_attr) out.writes_attrs = true;
      if (n->kind() == NodeKind::placeholder) ++placeholder;
      continue;
    }
    if (n->op() && n->op()->traits.mutates && changes_metadata(n->op()->base_name())) out.changes_metadata = true;
    if (!n->op() || n->op()->is_getitem || !n->op()->traits.random) continue;
    out.draws_random = true;
    if (n->meta().fake.empty()) out.random_only_on_cpu = false;
    for (const TensorMeta& t : n->meta().fake) out.random_only_on_cpu &= t.device.is_cpu();
  }
  return out;
}

}  // namespace tj::graph
