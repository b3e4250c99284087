// Which ops' results depend on tensor data (graph/data_dependent_ops.h): the
// table answers from the op and its arguments, and meta inference fails
// with ErrorKind::data_dependent exactly for those it cannot describe, and
// with ErrorKind::unsupported for an op that only lacks a meta kernel.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "graph/data_dependent_ops.h"
#include "graph/meta_infer.h"
#include "graph_test_util.h"

namespace tj::graph {
namespace {

using testing::op;
using Stack = std::vector<c10::IValue>;

at::Tensor meta(std::vector<int64_t> sizes, c10::ScalarType t = at::kFloat) {
  return at::empty(sizes, at::TensorOptions().device(at::kMeta).dtype(t));
}

c10::IValue indices(std::vector<at::Tensor> index) {
  c10::List<c10::optional<at::Tensor>> list;
  for (const at::Tensor& t : index) list.push_back(t);
  return c10::IValue(list);
}

TEST(DataDependentOps, CountsAndValuesReadFromTheData) {
  const at::Tensor x = meta({5}), mask = meta({5}, at::kBool), ints = meta({5}, at::kLong);
  EXPECT_TRUE(result_depends_on_data(op("aten::nonzero"), {x}));
  EXPECT_TRUE(result_depends_on_data(op("aten::argwhere"), {x}));
  EXPECT_TRUE(result_depends_on_data(op("aten::masked_select"), {x, mask}));
  EXPECT_TRUE(result_depends_on_data(op("aten::_unique2"), {x, true, false, false}));
  EXPECT_TRUE(result_depends_on_data(op("aten::bincount"), {ints, c10::IValue(), 0}));
  EXPECT_TRUE(result_depends_on_data(op("aten::equal"), {x, x}));
  EXPECT_TRUE(result_depends_on_data(op("aten::is_nonzero"), {meta({1})}));
  EXPECT_TRUE(result_depends_on_data(op("aten::_local_scalar_dense"), {meta({})}));
  // an op only lacking a meta kernel, or counting into a fixed size, is none
  EXPECT_FALSE(result_depends_on_data(op("aten::histc"), {x, 100, 0, 0}));
  EXPECT_FALSE(result_depends_on_data(op("aten::count_nonzero"), {x, c10::IValue()}));
  EXPECT_FALSE(result_depends_on_data(op("aten::mm"), {meta({2, 3}), meta({3, 4})}));
}

TEST(DataDependentOps, DependingOnTheArguments) {
  const at::Tensor x = meta({5}), mask = meta({5}, at::kBool), ints = meta({5}, at::kLong);
  // indexing: with a boolean (or byte) mask, not with integer indices
  EXPECT_TRUE(result_depends_on_data(op("aten::index.Tensor"), {x, indices({mask})}));
  EXPECT_TRUE(result_depends_on_data(op("aten::index.Tensor"), {x, indices({meta({5}, at::kByte)})}));
  EXPECT_FALSE(result_depends_on_data(op("aten::index.Tensor"), {x, indices({ints})}));
  // where: the condition alone, not the elementwise select
  EXPECT_TRUE(result_depends_on_data(op("aten::where"), {mask}));
  EXPECT_FALSE(result_depends_on_data(op("aten::where.self"), {mask, x, x}));
  // repeat_interleave: a tensor of repeats without output_size
  EXPECT_TRUE(result_depends_on_data(op("aten::repeat_interleave.Tensor"), {ints, c10::IValue()}));
  EXPECT_FALSE(result_depends_on_data(op("aten::repeat_interleave.Tensor"), {ints, 12}));
  EXPECT_TRUE(result_depends_on_data(op("aten::repeat_interleave.self_Tensor"), {x, ints, 0, c10::IValue()}));
  EXPECT_FALSE(result_depends_on_data(op("aten::repeat_interleave.self_Tensor"), {x, ints, 0, 9}));
  EXPECT_FALSE(result_depends_on_data(op("aten::repeat_interleave.self_int"), {x, 2, 0, c10::IValue()}));
  // one_hot: without num_classes
  EXPECT_TRUE(result_depends_on_data(op("aten::one_hot"), {ints, -1}));
  EXPECT_FALSE(result_depends_on_data(op("aten::one_hot"), {ints, 4}));
}

// AOT capture refuses what the table says depends on data, and its own few
// ops in every overload; by name and overload, as the proxy sees a call.
TEST(DataDependentOps, CaptureRefusesTheTableAndItsOwnOps) {
  const at::Tensor x = meta({5}), mask = meta({5}, at::kBool), ints = meta({5}, at::kLong);
  EXPECT_TRUE(capture_refuses("aten::nonzero", "", Stack{x}));
  EXPECT_TRUE(capture_refuses("aten::_local_scalar_dense", "", Stack{meta({})}));
  EXPECT_TRUE(capture_refuses("aten::index", "Tensor", Stack{x, indices({mask})}));
  EXPECT_FALSE(capture_refuses("aten::index", "Tensor", Stack{x, indices({ints})}));
  EXPECT_TRUE(capture_refuses("aten::histc", "", Stack{x, 100, 0, 0}));
  EXPECT_TRUE(capture_refuses("aten::is_same_size", "", Stack{x, x}));
  EXPECT_TRUE(capture_refuses("aten::_assert_async", "", Stack{meta({})}));
  EXPECT_TRUE(capture_refuses("aten::repeat_interleave", "self_int", Stack{x, 2, 0, c10::IValue()}));
  EXPECT_FALSE(capture_refuses("aten::mm", "", Stack{meta({2, 3}), meta({3, 4})}));
  EXPECT_FALSE(capture_refuses("aten::count_nonzero", "", Stack{x, c10::IValue()}));
}

// The error kind meta inference gives: data_dependent from the table, not
// from the words of LibTorch's message.
ErrorKind kind_of_failure(const std::string& name, const at::Tensor& input, std::vector<Arg> more = {}) {
  Graph g;
  Node* x = testing::input(g, "x", input);
  std::vector<Arg> args{x};
  for (Arg& a : more) args.push_back(std::move(a));
  Node* n = g.call(op(name), std::move(args));
  g.output(n);
  Status st = infer_meta(g, *n);
  EXPECT_FALSE(st.ok()) << name;
  return st.ok() ? ErrorKind::internal : st.error().kind;
}

TEST(DataDependentOps, MetaInferenceClassifiesByTheTable) {
  EXPECT_EQ(kind_of_failure("aten::item", at::ones({1})), ErrorKind::data_dependent);
  EXPECT_EQ(kind_of_failure("aten::one_hot", at::arange(4)), ErrorKind::data_dependent);
  EXPECT_EQ(kind_of_failure("aten::is_nonzero", at::ones({1})), ErrorKind::data_dependent);
  // "Could not run ... Meta": no meta kernel, but a result of known size
  EXPECT_EQ(kind_of_failure("aten::histc", at::ones({4})), ErrorKind::unsupported);
  EXPECT_EQ(kind_of_failure("aten::count_nonzero", at::ones({4})), ErrorKind::unsupported);
  // nonzero itself has a description with a data-dependent size: no failure
  Graph g;
  Node* nz = g.call(op("aten::nonzero"), {testing::input(g, "x", at::ones({4}))});
  g.output(nz);
  ASSERT_TRUE(infer_meta(g, *nz).ok());
  EXPECT_TRUE(nz->meta().unbacked);
}

}  // namespace
}  // namespace tj::graph
