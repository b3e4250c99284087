// Meta results of data-dependent ops, and which nodes and dims depend on
// them; see unbacked_sizes.h.
#include "graph/unbacked_sizes.h"

#include <unordered_set>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>

#include "graph/graph.h"
#include "graph/op_registry.h"

namespace tj::graph {

namespace {

at::Tensor meta_empty(std::vector<int64_t> sizes, c10::ScalarType dtype) {
  return at::empty(sizes, at::TensorOptions().dtype(dtype).device(c10::kMeta));
}

bool is_mask(const at::Tensor& t) {
  return t.defined() && (t.scalar_type() == c10::kBool || t.scalar_type() == c10::kByte);
}

std::optional<int64_t> int_arg(const std::vector<c10::IValue>& stack, size_t i) {
  if (i >= stack.size() || !stack[i].isInt()) return std::nullopt;
  return stack[i].toInt();
}

bool bool_arg(const std::vector<c10::IValue>& stack, size_t i, bool otherwise) {
  return i < stack.size() && stack[i].isBool() ? stack[i].toBool() : otherwise;
}

// `self`'s sizes with dim `dim` data-dependent.
std::vector<int64_t> with_unbacked_dim(const at::Tensor& self, int64_t dim) {
  std::vector<int64_t> sizes = self.sizes().vec();
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (dim < 0) dim += rank;
  if (dim >= 0 && dim < rank) sizes[static_cast<size_t>(dim)] = kUnbackedHint;
  return sizes;
}

// x[mask]: each mask index of k dims is k long indices of the data-dependent
// count, as eager's index kernel turns it (expandTensors); the index kernel's
// own meta function then gives the result.
std::optional<std::vector<at::Tensor>> masked_index(const OpInfo& op, const std::vector<c10::IValue>& stack) {
  if (stack.size() != 2 || !stack[1].isList()) return std::nullopt;
  c10::List<c10::optional<at::Tensor>> indices = c10::impl::toTypedList<c10::optional<at::Tensor>>(stack[1].toList());
  bool any_mask = false;
  c10::List<c10::optional<at::Tensor>> expanded;
  for (size_t i = 0; i < indices.size(); ++i) {
    c10::optional<at::Tensor> index = indices.get(i);
    if (!index || !is_mask(*index)) {
      expanded.push_back(index);
      continue;
    }
    any_mask = true;
    const int64_t dims = std::max<int64_t>(index->dim(), 1);
    for (int64_t d = 0; d < dims; ++d) expanded.push_back(meta_empty({kUnbackedHint}, c10::kLong));
  }
  if (!any_mask) return std::nullopt;
  std::vector<c10::IValue> call{stack[0], c10::IValue(expanded)};
  op.handle().callBoxed(call);
  return std::vector<at::Tensor>{call.at(0).toTensor()};
}

}  // namespace

std::optional<std::vector<at::Tensor>> unbacked_meta_results(const OpInfo& op, const std::vector<c10::IValue>& stack) {
  const std::string qualified = op.qualified_name();
  if (qualified == "aten::index.Tensor") return masked_index(op, stack);
  if (stack.empty() || !stack[0].isTensor()) return std::nullopt;
  const at::Tensor& self = stack[0].toTensor();
  const c10::ScalarType dtype = self.scalar_type();
  const int64_t rank = self.dim();
  using Results = std::vector<at::Tensor>;
  auto unbacked_1d = [&](c10::ScalarType t) { return meta_empty({kUnbackedHint}, t); };
  auto empty_long = [] { return meta_empty({0}, c10::kLong); };
  auto inverse_of = [&](bool wanted) { return wanted ? meta_empty(self.sizes().vec(), c10::kLong) : empty_long(); };
  if (qualified == "aten::nonzero" || qualified == "aten::argwhere")
    return Results{meta_empty({kUnbackedHint, rank}, c10::kLong)};
  if (qualified == "aten::nonzero_numpy" || qualified == "aten::where") {  // where(condition): a tuple of index tensors
    if (stack.size() != 1) return std::nullopt;
    Results out;
    for (int64_t d = 0; d < std::max<int64_t>(rank, 1); ++d) out.push_back(unbacked_1d(c10::kLong));
    return out;
  }
  if (qualified == "aten::masked_select") return Results{unbacked_1d(dtype)};
  if (qualified == "torchvision::nms") return Results{unbacked_1d(c10::kLong)};  // the kept boxes' indices
  if (qualified == "aten::bincount") {  // (self, weights=None, minlength=0): max(max(self) + 1, minlength) bins
    // int64 counts; float weights sum in float, any other weights in double (the CPU kernel's choice)
    const bool weighted = stack.size() > 1 && stack[1].isTensor() && stack[1].toTensor().defined();
    const c10::ScalarType out = !weighted ? c10::kLong
                                : stack[1].toTensor().scalar_type() == c10::kFloat ? c10::kFloat
                                                                                 : c10::kDouble;
    return Results{unbacked_1d(out)};
  }
  if (qualified == "aten::_unique2")  // (self, sorted, return_inverse, return_counts)
    return Results{unbacked_1d(dtype), inverse_of(bool_arg(stack, 2, false)),
                   bool_arg(stack, 3, false) ? unbacked_1d(c10::kLong) : empty_long()};
  if (qualified == "aten::_unique")  // (self, sorted, return_inverse)
    return Results{unbacked_1d(dtype), inverse_of(bool_arg(stack, 2, false))};
  // unique over a dim gives the inverse and the counts whatever the flags
  auto unique_dim = [&](int64_t dim) {
    const int64_t d = dim < 0 ? dim + rank : dim;
    if (d < 0 || d >= rank) return std::optional<Results>();
    return std::optional<Results>(Results{meta_empty(with_unbacked_dim(self, d), dtype),
                                          meta_empty({self.size(d)}, c10::kLong), unbacked_1d(c10::kLong)});
  };
  if (qualified == "aten::unique_dim" || qualified == "aten::unique_dim_consecutive") {
    auto dim = int_arg(stack, 1);
    return dim ? unique_dim(*dim) : std::nullopt;
  }
  if (qualified == "aten::unique_consecutive") {  // (self, return_inverse, return_counts, dim=None)
    if (auto dim = int_arg(stack, 3)) return unique_dim(*dim);
    return Results{unbacked_1d(dtype), inverse_of(bool_arg(stack, 1, false)),
                   bool_arg(stack, 2, false) ? unbacked_1d(c10::kLong) : empty_long()};
  }
  if (qualified == "aten::repeat_interleave.Tensor") {  // (repeats, output_size=None)
    if (auto size = int_arg(stack, 1)) return Results{meta_empty({*size}, c10::kLong)};
    return Results{unbacked_1d(c10::kLong)};
  }
  if (qualified == "aten::repeat_interleave.self_Tensor") {  // (self, repeats, dim=None, output_size=None)
    const int64_t total = int_arg(stack, 3).value_or(kUnbackedHint);
    auto dim = int_arg(stack, 2);
    if (!dim) return Results{meta_empty({total}, dtype)};
    std::vector<int64_t> sizes = with_unbacked_dim(self, *dim);
    const int64_t d = *dim < 0 ? *dim + rank : *dim;
    if (d < 0 || d >= rank) return std::nullopt;
    sizes[static_cast<size_t>(d)] = total;
    return Results{meta_empty(sizes, dtype)};
  }
  return std::nullopt;
}

bool depends_on_unbacked(const Node& node) {
  std::vector<const Node*> stack{&node};
  std::unordered_set<const Node*> seen{&node};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (n->meta().unbacked) return true;
    for (const Node* in : n->inputs())
      if (seen.insert(in).second) stack.push_back(in);
  }
  return false;
}

bool unbacked_dim(const Node& node, int64_t dim) {
  const TensorMeta* m = node.meta().tensor();
  if (!m) return false;
  const int64_t rank = static_cast<int64_t>(m->sizes.size());
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank || m->sizes[static_cast<size_t>(dim)] < kUnbackedThreshold) return false;
  return depends_on_unbacked(node);
}

const Node* first_unbacked_node(const Graph& graph) {
  for (const Node* n : graph.nodes())
    if (n->meta().unbacked) return n;
  return nullptr;
}

std::string describe_unbacked(const Node& node) {
  std::string text = node.op() ? node.op()->qualified_name() : node.name();
  if (const auto& loc = node.meta().loc) text += " (at " + loc->file + ":" + std::to_string(loc->line) + ")";
  return text;
}

}  // namespace tj::graph
