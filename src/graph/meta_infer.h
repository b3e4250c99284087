// Shape, stride and dtype inference: a node's fake tensor description comes
// from running its very overload on meta tensors (`c10::kMeta`: sizes,
// strides and dtype, no data) built from its inputs' descriptions, through
// the same boxed call the interpreter makes. Inputs that share a storage id
// are built as views of one meta storage, so alias analysis inside ATen (and
// the storage id of a view's result) comes out as in eager.
//
// Ops without a meta kernel in LibTorch 1.13 either have a hand-written rule
// in a small table (convolution, layer_norm, where) or produce an error that
// names the op. Where 1.13's meta kernels differ from the CPU ones, meta
// inference follows the CPU kernels: full/arange infer their dtype from the
// fill value / bounds, copy_ runs eager's overlap and broadcast checks,
// where/flip/abs give eager's output strides.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

// Sets `node.meta().fake` from its inputs' fake values (call_function only).
// An op whose result depends on tensor data (data_dependent_ops.h) and
// that no meta result describes fails with ErrorKind::data_dependent, any
// other failure with ErrorKind::unsupported.
Status infer_meta(Graph& graph, Node& node);

// Ops whose results are outside autograd whatever their inputs (`*_like`
// and `new_*` factories, `detach`): infer_meta gives them no requires_grad.
bool makes_tensors_outside_autograd(std::string_view base_name);

// Whether eager refuses in-place op `node` on a leaf tensor that requires
// grad in grad mode ("a leaf Variable that requires grad is being used in
// an in-place operation"): its first argument, made such a leaf on meta,
// goes through LibTorch's autograd kernel. False for ops autograd lets
// through (`logical_not_`, `requires_grad_`) and for non-float tensors.
bool inplace_raises_on_grad_leaf(Graph& graph, const Node& node);

// Why eager's autograd refuses in-place op `node` in grad mode on its first
// argument for the way the graph made that tensor: a view made by an op
// with several view outputs (`unbind`, `split`, `chunk`) or in no-grad
// mode, when a tensor involved requires grad ("Output 0 of UnbindBackward0
// is a view and is being modified inplace"). The view chain is replayed on
// meta tensors from its base, a computed tensor that requires grad when
// `base_requires_grad`; the links run in their recorded grad mode (the
// graph's is `entry_grad_enabled`). Nothing when autograd lets it through,
// or when the chain cannot be replayed.
std::optional<std::string> inplace_refused_on_view(Graph& graph, const Node& node, bool base_requires_grad,
                                                   bool entry_grad_enabled);

// infer_meta on every call_function node, in order; stops at the first error.
Status infer_meta_all(Graph& graph);

}  // namespace tj::graph
