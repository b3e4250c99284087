// OpRegistry: direct lookup, overload selection by argument kinds (and its
// documented number -> Scalar policy), traits from the schema, errors.
#include <gtest/gtest.h>

#include "graph/op_registry.h"

namespace tj::graph {
namespace {

using K = ArgKind;

std::string pick(const std::string& name, std::vector<ArgKind> kinds, std::vector<std::pair<std::string, ArgKind>> kw = {}) {
  auto op = OpRegistry::instance().lookup(name, kinds, kw);
  return op ? (*op)->qualified_name() : "error: " + op.error().message;
}

const OpInfo& get(const std::string& name) {
  auto op = OpRegistry::instance().get(name);
  EXPECT_TRUE(op.ok()) << op.error().message;
  return **op;
}

TEST(OpRegistry, GetBySchemaOrPythonSpelling) {
  const OpInfo& a = get("aten::add.Tensor");
  EXPECT_EQ(&a, &get("aten.add.Tensor"));
  EXPECT_EQ(a.python_target(), "aten.add.Tensor");
  const OpInfo& s = get("aten::sin");
  EXPECT_EQ(&s, &get("aten.sin.default"));
  EXPECT_EQ(s.qualified_name(), "aten::sin");
  EXPECT_EQ(s.python_target(), "aten.sin.default");
  EXPECT_TRUE(get("getitem").is_getitem);
  auto bad = OpRegistry::instance().get("aten::no_such_op");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("aten::no_such_op"), std::string::npos);
}

TEST(OpRegistry, OverloadSelection) {
  EXPECT_EQ(pick("aten::add", {K::Tensor, K::Tensor}), "aten::add.Tensor");
  // Policy: a Python number goes to the Scalar overload when there is one,
  // except where Python's bindings take numbers as tensors (add, sub, mul,
  // div, floor_divide): their Tensor overload, as eager (MulBackward0).
  EXPECT_EQ(pick("aten::add", {K::Tensor, K::Int}), "aten::add.Tensor");
  EXPECT_EQ(pick("aten::mul", {K::Tensor, K::Float}), "aten::mul.Tensor");
  EXPECT_EQ(pick("aten::mul_", {K::Tensor, K::Float}), "aten::mul_.Tensor");
  EXPECT_EQ(pick("aten::div", {K::Tensor, K::Int}, {{"rounding_mode", K::String}}), "aten::div.Tensor_mode");
  EXPECT_EQ(pick("aten::floor_divide", {K::Tensor, K::Int}), "aten::floor_divide");
  EXPECT_EQ(pick("aten::remainder", {K::Tensor, K::Int}), "aten::remainder.Scalar");
  EXPECT_EQ(pick("aten::eq", {K::Tensor, K::Float}), "aten::eq.Scalar");
  EXPECT_EQ(pick("aten::add", {K::Tensor, K::Tensor}, {{"alpha", K::Int}}), "aten::add.Tensor");
  EXPECT_EQ(pick("aten::add", {K::Tensor, K::Tensor}, {{"out", K::Tensor}}), "aten::add.out");
  EXPECT_EQ(pick("aten::sum", {K::Tensor}), "aten::sum");
  EXPECT_EQ(pick("aten::sum", {K::Tensor, K::IntList}), "aten::sum.dim_IntList");
  EXPECT_EQ(pick("aten::sum", {K::Tensor, K::Int, K::Bool}), "aten::sum.dim_IntList");  // int -> int[1]
  EXPECT_EQ(pick("aten::max", {K::Tensor}), "aten::max");
  EXPECT_EQ(pick("aten::max", {K::Tensor, K::Int}), "aten::max.dim");
  EXPECT_EQ(pick("aten::max", {K::Tensor, K::Tensor}), "aten::max.other");
  EXPECT_EQ(pick("aten::softmax", {K::Tensor, K::Int}), "aten::softmax.int");
  EXPECT_EQ(pick("aten::where", {K::Tensor, K::Tensor, K::Tensor}), "aten::where.self");
  EXPECT_EQ(pick("aten::where", {K::Tensor, K::Tensor, K::Float}), "aten::where.ScalarOther");
  EXPECT_EQ(pick("aten::transpose", {K::Tensor, K::Int, K::Int}), "aten::transpose.int");
  EXPECT_EQ(pick("aten::index", {K::Tensor, K::OptionalTensorList}), "aten::index.Tensor");
  EXPECT_EQ(pick("aten::cat", {K::TensorList}, {{"dim", K::Int}}), "aten::cat");
  EXPECT_EQ(pick("aten::to", {K::Tensor, K::ScalarType}), "aten::to.dtype");
  EXPECT_EQ(pick("aten::zeros", {K::IntList}, {{"dtype", K::ScalarType}, {"device", K::Device}}), "aten::zeros");
  EXPECT_EQ(pick("aten::div", {K::Tensor, K::Tensor}, {{"rounding_mode", K::String}}), "aten::div.Tensor_mode");
  // Where no Scalar overload exists, the number goes to the Tensor parameter.
  EXPECT_EQ(pick("aten::maximum", {K::Tensor, K::Float}), "aten::maximum");
  // Several rejected arguments still reject (no overflow into a low cost):
  // _VF.lstm(input, hx, params, has_biases, num_layers, dropout, train,
  // bidirectional, batch_first) is lstm.input, not lstm.data.
  EXPECT_EQ(pick("aten::lstm", {K::Tensor, K::TensorList, K::TensorList, K::Bool, K::Int, K::Float, K::Bool, K::Bool,
                                K::Bool}),
            "aten::lstm.input");
  EXPECT_EQ(pick("aten::gru", {K::Tensor, K::Tensor, K::TensorList, K::Bool, K::Int, K::Float, K::Bool, K::Bool,
                               K::Bool}),
            "aten::gru.input");
}

TEST(OpRegistry, SelectionErrorsNameTheOp) {
  std::string e = pick("aten::add", {K::String, K::Tensor});
  EXPECT_NE(e.find("no overload of aten::add accepts (str, Tensor)"), std::string::npos) << e;
  EXPECT_NE(pick("aten::sin", {K::Tensor}, {{"bogus", K::Int}}).find("error"), std::string::npos);
  EXPECT_NE(pick("aten::not_an_op", {}).find("unknown operator aten::not_an_op"), std::string::npos);
}

TEST(OpRegistry, StemDropsOnlyAnInPlaceUnderscore) {
  EXPECT_EQ(get("aten::add_.Tensor").stem_name(), "add");
  EXPECT_EQ(get("aten::add.Tensor").stem_name(), "add");
  EXPECT_EQ(get("aten::copy_").stem_name(), "copy");
  EXPECT_EQ(get("aten::__and__.Tensor").stem_name(), "__and__");
  EXPECT_EQ(get("aten::__iand__.Tensor").stem_name(), "__iand__");
  EXPECT_EQ(get("aten::_softmax").stem_name(), "_softmax");
}

TEST(OpRegistry, TraitsFromSchemaAndTables) {
  OpTraits add = get("aten::add.Tensor").traits;
  EXPECT_TRUE(add.pointwise);
  EXPECT_FALSE(add.side_effecting());
  OpTraits add_ = get("aten::add_.Tensor").traits;
  EXPECT_TRUE(add_.inplace && add_.mutates && add_.pointwise && !add_.view);
  OpTraits add_out = get("aten::add.out").traits;
  EXPECT_TRUE(add_out.out && add_out.mutates && !add_out.inplace);
  EXPECT_TRUE(get("aten::view").traits.view);
  EXPECT_TRUE(get("aten::transpose.int").traits.view);
  EXPECT_FALSE(get("aten::clone").traits.view);
  EXPECT_TRUE(get("aten::sum.dim_IntList").traits.reduction);
  EXPECT_TRUE(get("aten::max.dim").traits.reduction);
  EXPECT_TRUE(get("aten::max.other").traits.pointwise);
  EXPECT_TRUE(get("aten::bernoulli").traits.random);
  EXPECT_TRUE(get("aten::dropout").traits.random);
  EXPECT_TRUE(get("aten::rand").traits.random);
  OpTraits copy = get("aten::copy_").traits;
  EXPECT_TRUE(copy.mutates && copy.side_effecting());
  // an op with no result is called for the error it raises: never dead code
  OpTraits check = get("aten::_linalg_check_errors").traits;
  EXPECT_TRUE(check.check && check.side_effecting() && !check.mutates);
  EXPECT_FALSE(get("aten::linalg_cholesky_ex").traits.check);
  EXPECT_FALSE(get("aten::mm").traits.pointwise);
}

}  // namespace
}  // namespace tj::graph
