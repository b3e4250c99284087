// Data-dependent sizes in the graph (issue 43, item 2: TorchDynamo's
// capture_dynamic_output_shape_ops and unbacked sizes).
//
// Ops whose output size depends on tensor data (nonzero, boolean-mask
// indexing, masked_select, unique, repeat_interleave with a tensor,
// single-argument where) have no meta kernel: only running them says how
// big their result is. Meta inference describes such a result with a
// placeholder size, kUnbackedHint, for every data-dependent dim, and flags
// the node (NodeMeta::unbacked). A dim of a tensor computed from a flagged
// node is data-dependent when its size is at least kUnbackedThreshold (the
// hint is a multiple of small factors, so views and products of it stay
// above the threshold); smaller dims are exact. The hint is never a value
// anything may rely on: the tracer hands such a dim to Python only as a
// symbolic size whose facts and specializations break the graph
// (tracer/symbolic_sizes.cpp), and the runtime never folds the hint into a
// graph it compiles: a graph with data-dependent sizes runs op by op, each
// op on the real tensors (runtime/backend_step.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace tj::graph {

class Graph;
class Node;
struct OpInfo;

// 2^16 * 3^2 * 5 * 7: divisible by every small view factor, its square fits int64.
inline constexpr int64_t kUnbackedHint = 20643840;
inline constexpr int64_t kUnbackedThreshold = 16384;

// The meta results of a data-dependent op (`stack`: its boxed meta
// arguments), their data-dependent dims kUnbackedHint; nullopt when `op`
// with these arguments has a size that does not depend on data.
std::optional<std::vector<at::Tensor>> unbacked_meta_results(const OpInfo& op, const std::vector<c10::IValue>& stack);

// Whether `node` is, or is computed from, a node whose sizes depend on data.
bool depends_on_unbacked(const Node& node);
// Whether dim `dim` of tensor node `node` (a sequence item for getitem
// nodes: their own meta) may depend on data.
bool unbacked_dim(const Node& node, int64_t dim);
// The first node of `graph` whose sizes depend on data, or null.
const Node* first_unbacked_node(const Graph& graph);
// "aten::nonzero (at f.py:12)" for logs.
std::string describe_unbacked(const Node& node);

}  // namespace tj::graph
