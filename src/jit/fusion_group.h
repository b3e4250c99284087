// A fusion group under construction (internal to the lowering): the loop-IR
// kernel it becomes and how every graph value in it lies over the group's
// shape.
//
// A group has a shape S, the shape of the tensors its pointwise members
// compute, and, once it holds a reduction, the dimensions of S it reduces.
// A value of the group has one of three *forms*: `full` (shape S), `keep`
// (S with the reduced dimensions as 1, keepdim=True) or `squeezed` (S
// without them); the last two are outer values, one per row. Which
// dimension of S each dimension of a tensor is depends on the form of the
// node that reads it (broadcasting right-aligns against the reader's own
// shape), so a value is read through a *dimension map* (tensor dim -> S dim,
// -1 for a size-1 dim): a member read with another map than its own, or a
// tensor that does not broadcast, makes the emitter give up (-1) and the
// reader goes extern.
//
// Emitters (the pointwise table in lower_pointwise.cpp, the reductions in
// lower_reductions.cpp) build expressions through `operand`, `op`, `cast`,
// `constant` and `reduce`; an emitter that cannot take a node returns -1 and
// `add_member` rolls the kernel back.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "jit/loop_ir.h"

namespace tj::jit {

enum class Form { none, full, keep, squeezed };

// bool, int32, int64, float16, bfloat16, float32, float64
bool supported_dtype(c10::ScalarType t);
bool is_float(c10::ScalarType t);
bool is_reduced_float(c10::ScalarType t);  // float16, bfloat16
// Eager's CPU kernels lack many ops for float16 (LibTorch 1.13): the node's
// op, run on one-element tensors of its inputs' dtypes, does not raise.
// Cached per op and dtypes.
bool eager_runs_on_cpu(const graph::Node& node);
// The single CPU tensor of a supported dtype `node` produces, or nullptr.
const graph::TensorMeta* tensor_meta(const graph::Node* node);

// The dtype of the tensor a fused node produces (emitters run only on nodes with one).
inline c10::ScalarType out_dtype(const graph::Node& n) { return n.meta().tensor()->dtype; }

class GroupBuilder;
using Emitter = std::function<int(GroupBuilder&, const graph::Node&)>;

class GroupBuilder {
 public:
  // A tensor the kernel loads, read through `dims` (tensor dim -> S dim).
  struct InputUse {
    const graph::Node* node;
    std::vector<int> dims;
  };
  struct Member {
    const graph::Node* node;
    int expr;
    Form form;
    std::vector<int> dims;  // its own map (tensor dim -> S dim)
  };

  explicit GroupBuilder(std::vector<int64_t> shape) : shape_(std::move(shape)) { kernel_.sizes = shape_; }

  const std::vector<int64_t>& shape() const { return shape_; }
  // Per dimension of S: reduced. Empty while the group is pointwise.
  const std::vector<bool>& reduced() const { return reduced_; }
  bool can_reduce(const std::vector<bool>& dims) const { return reduced_.empty() || reduced_ == dims; }
  Form form_of(const std::vector<int64_t>& sizes) const;
  // The map of a tensor of `sizes` read by a node of `form` and shape `reader`.
  std::optional<std::vector<int>> dims_of(const std::vector<int64_t>& sizes, Form form,
                                          const std::vector<int64_t>& reader) const;

  loop::Kernel& kernel() { return kernel_; }
  const std::vector<Member>& members() const { return members_; }
  const std::vector<InputUse>& inputs() const { return inputs_; }
  bool empty() const { return members_.empty(); }
  bool contains(const graph::Node* n) const { return member_index_.count(n) != 0; }
  const Member& member(const graph::Node* n) const { return members_[member_index_.at(n)]; }

  // --- for emitters
  int constant(double v, c10::ScalarType t);
  int cast(int e, c10::ScalarType t);
  int op(loop::Op o, c10::ScalarType t, std::vector<int> args);
  int reduce(loop::Op o, c10::ScalarType t, int arg) { return op(o, t, {arg}); }
  // The value of `arg` (a member, a loaded tensor or a Python number) cast to `t`, or -1.
  int operand(const graph::Arg& arg, c10::ScalarType t);
  // The dtype of `arg` as an operand (a number: its Python kind).
  std::optional<c10::ScalarType> dtype_of(const graph::Arg& arg) const;
  // A node with several results (native_layer_norm): their expressions,
  // taken by the getitem nodes that read them.
  void set_results(const graph::Node* node, std::vector<int> exprs) { results_[node] = std::move(exprs); }
  std::optional<int> result(const graph::Node* node, size_t index) const;

  // --- for the lowering
  // Adds `node` with `emit`: its operands are read as by a node of `form`
  // and shape `reader`; `reduce` (flags per dim of S) turns the group into a
  // reduction group. False, and the group unchanged, when it cannot.
  bool add_member(const graph::Node* node, const Emitter& emit, Form form, const std::vector<int64_t>& reader,
                  const std::vector<bool>* reduce = nullptr);
  // A node whose value is `expr` (a getitem of a member's result, a view that
  // only adds or removes size-1 dims of a member).
  bool add_alias(const graph::Node* node, int expr);
  // A view of `of` (a member) with `node`'s shape: the same values?
  bool same_values(const graph::Node* node, const graph::Node* of) const;

 private:
  int load(const graph::Node* n, const graph::TensorMeta& m);

  std::vector<int64_t> shape_;
  std::vector<bool> reduced_;
  loop::Kernel kernel_;
  std::vector<Member> members_;
  std::unordered_map<const graph::Node*, size_t> member_index_;
  std::vector<InputUse> inputs_;
  std::map<std::pair<const graph::Node*, std::vector<int>>, int> input_index_;
  std::unordered_map<const graph::Node*, std::vector<int>> results_;
  // the node being added
  Form reader_form_ = Form::full;
  std::vector<int64_t> reader_shape_;
};

// The emitter for `node` if it is a pointwise op on supported CPU tensors.
const Emitter* pointwise_emitter(const graph::Node* node);

// A view op the lowering reads through (view, _unsafe_view, reshape,
// unsqueeze, squeeze): fusion_order.cpp.
bool is_view_op(const graph::Node* n);

// A reduction the lowering fuses: which dims of its input (`input`) it
// reduces, and its emitter. nullopt for anything else.
struct ReductionOp {
  const graph::Node* input = nullptr;
  std::vector<bool> dims;
  const Emitter* emit = nullptr;
};
std::optional<ReductionOp> reduction_op(const graph::Node* node);

// Whether `r`, a sum or mean of `node`, reduces across rows of a layout
// whose contiguous (smallest-stride) dimension it keeps: the fused loop
// would walk each output element's row with a stride (one scalar load a
// cache line: 700x10000 `sum(0)` 12.6 ms, 256x256 55 us), where ATen's
// reduction vectorizes along the kept contiguous dim (1.9 ms, 4 us). The
// host lowering leaves such a node to ATen, unless its input is small
// enough to stay in L1 (8 KiB: a Linear's bias gradient in a small MLP),
// where the fused loop, and its producer fused with it, cost less.
bool sums_across_contiguous_rows(const graph::Node& node, const ReductionOp& r);

const graph::Arg* arg_at(const graph::Node& n, size_t i, const char* name);

}  // namespace tj::jit
