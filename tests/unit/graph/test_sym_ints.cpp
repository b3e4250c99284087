// Size builtins (graph/sym_ints.h): Python's int semantics, meta values
// through a view shaped by sizes, the interpreter on real tensors, folding
// into constants, the printer and the Python code generator.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <tuple>

#include "graph/interpreter.h"
#include "graph/lint.h"
#include "graph/meta_infer.h"
#include "graph/printer.h"
#include "graph/python_codegen.h"
#include "graph/sym_ints.h"
#include "graph_test_util.h"

namespace tj::graph {
namespace {

using testing::op;

TEST(SymInts, PythonIntSemantics) {
  EXPECT_EQ(sym_apply(SymOp::floordiv, 7, 2), 3);
  EXPECT_EQ(sym_apply(SymOp::floordiv, -7, 2), -4);  // floors, as Python
  EXPECT_EQ(sym_apply(SymOp::mod, -7, 2), 1);
  EXPECT_EQ(sym_apply(SymOp::mod, 7, -2), -1);
  EXPECT_EQ(sym_apply(SymOp::floordiv, 1, 0), std::nullopt);
  EXPECT_EQ(sym_apply(SymOp::gt, 17, 16), 1);
  EXPECT_EQ(sym_apply(SymOp::le, 17, 16), 0);
  EXPECT_EQ(sym_apply(SymOp::sub, 3, 5), -2);
}

// int ** int >= 0 exactly, no value past int64 or for a negative exponent
// (Python's big int and float results are the tracer's to avoid).
TEST(SymInts, PowerIsExactWithinInt64) {
  EXPECT_EQ(sym_apply(SymOp::pow, 3, 4), 81);
  EXPECT_EQ(sym_apply(SymOp::pow, 0, 0), 1);
  EXPECT_EQ(sym_apply(SymOp::pow, 0, 5), 0);
  EXPECT_EQ(sym_apply(SymOp::pow, -1, 7), -1);
  EXPECT_EQ(sym_apply(SymOp::pow, -1, int64_t{1} << 62), 1);
  EXPECT_EQ(sym_apply(SymOp::pow, -3, 3), -27);
  EXPECT_EQ(sym_apply(SymOp::pow, 2, 62), int64_t{1} << 62);
  EXPECT_EQ(sym_apply(SymOp::pow, 2, 63), std::nullopt);
  EXPECT_EQ(sym_apply(SymOp::pow, -2, 63), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(sym_apply(SymOp::pow, 10, 18), int64_t{1000000000000000000});
  EXPECT_EQ(sym_apply(SymOp::pow, 10, 19), std::nullopt);
  EXPECT_EQ(sym_apply(SymOp::pow, 5, -1), std::nullopt);
}

// view(x, [size(x, 0) * size(x, 1), -1]): the graph of `x.view(B * T, -1)`.
struct Flatten {
  Graph g;
  Node* x;
  Node* b;
  Node* bt;
  Node* view;
  Node* fact;
  explicit Flatten(std::vector<int64_t> sizes) {
    x = g.placeholder("x", TensorMeta::contiguous(sizes, c10::kFloat));
    b = g.call(OpRegistry::instance().sym(SymOp::size), {x, int64_t{0}}, {}, "size");
    Node* t = g.call(OpRegistry::instance().sym(SymOp::size), {x, int64_t{1}}, {}, "size");
    bt = g.call(OpRegistry::instance().sym(SymOp::mul), {b, t});
    view = g.call(op("aten::view"), {x, Arg::list({bt, int64_t{-1}})});
    fact = g.call(OpRegistry::instance().sym(SymOp::gt), {b, int64_t{16}});
    g.output(Arg::tuple({view}));
  }
};

TEST(SymInts, MetaInferenceComputesSizesAndShapes) {
  Flatten f({3, 5, 4});
  ASSERT_TRUE(infer_meta_all(f.g).ok());
  ASSERT_TRUE(lint(f.g).ok());
  EXPECT_EQ(f.bt->meta().sym_value, 15);
  EXPECT_EQ(f.fact->meta().sym_value, 0);
  EXPECT_EQ(f.view->meta().tensor()->sizes, (std::vector<int64_t>{15, 4}));
  // Other sizes: the same graph, inferred again.
  TensorMeta m = TensorMeta::contiguous({20, 2, 4}, c10::kFloat);
  f.x->meta().set_tensor(m);
  ASSERT_TRUE(infer_meta_all(f.g).ok());
  EXPECT_EQ(f.view->meta().tensor()->sizes, (std::vector<int64_t>{40, 4}));
  EXPECT_EQ(f.fact->meta().sym_value, 1);
}

TEST(SymInts, InterpreterRunsThemOnRealTensors) {
  Flatten f({3, 5, 4});
  at::Tensor x = at::arange(6 * 7 * 4, at::kFloat).reshape({6, 7, 4});
  auto out = interpret_tensors(f.g, {x});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(at::equal(out->at(0), x.view({42, 4})));
}

TEST(SymInts, FoldingLeavesConstantsForBackends) {
  Flatten f({3, 5, 4});
  ASSERT_TRUE(infer_meta_all(f.g).ok());
  ASSERT_TRUE(fold_sym_nodes(f.g).ok());
  ASSERT_TRUE(lint(f.g).ok());
  EXPECT_FALSE(has_sym_nodes(f.g));
  const Arg& shape = f.view->args().at(1);
  ASSERT_TRUE(shape.is_list());
  EXPECT_EQ(shape.items().at(0).as<int64_t>(), 15);
  EXPECT_EQ(shape.items().at(1).as<int64_t>(), -1);
}

TEST(SymInts, FoldingWithoutValuesFails) {
  Flatten f({3, 5, 4});  // never inferred: no sym_value
  EXPECT_FALSE(fold_sym_nodes(f.g).ok());
}

TEST(SymInts, PrintedAndGeneratedAsPython) {
  Flatten f({3, 5, 4});
  std::string text = print_graph(f.g);
  EXPECT_NE(text.find("sym_size"), std::string::npos) << text;
  EXPECT_NE(text.find("sym_mul"), std::string::npos) << text;
  std::string code = python_code(f.g);
  EXPECT_NE(code.find("size = x.size(0)"), std::string::npos) << code;
  EXPECT_NE(code.find("sym_mul = int(size * size_1)"), std::string::npos) << code;
  EXPECT_NE(code.find("sym_gt = int(size > 16)"), std::string::npos) << code;
}

// A size used as a number (tracer/size_numbers.cpp): the size node as a
// program over the inputs' sizes, evaluated per call with Python's ints.
TEST(SymInts, SizeExpressionOverInputSizes) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({6, 4}, c10::kFloat));
  Node* y = g.placeholder("y", TensorMeta::contiguous({3}, c10::kFloat));
  auto sym = [&](SymOp op, Arg a, Arg b) { return g.call(OpRegistry::instance().sym(op), {a, b}); };
  Node* n = sym(SymOp::size, x, int64_t{0});
  Node* c = sym(SymOp::size, x, int64_t{1});
  Node* m = sym(SymOp::size, y, int64_t{0});
  Node* nc = sym(SymOp::mul, n, c);                 // n * c
  Node* q = sym(SymOp::floordiv, sym(SymOp::sub, m, nc), int64_t{4});  // (m - n*c) // 4: floors below 0
  Node* r = sym(SymOp::mod, q, n);                  // % takes the divisor's sign
  Node* both = sym(SymOp::add, nc, nc);             // a node used twice is one step
  auto input_of = [&](const Node& p) -> std::optional<int> {
    if (&p == x) return 0;
    if (&p == y) return 1;
    return std::nullopt;
  };
  auto expr = size_expr_of(*r, input_of);
  ASSERT_TRUE(expr.ok()) << expr.error().message;
  EXPECT_EQ(expr->steps.size(), 4u);
  auto sizes_of = [](std::vector<std::vector<int64_t>> inputs) {
    return [inputs](int input, int64_t dim) -> std::optional<int64_t> {
      const auto& s = inputs.at(static_cast<size_t>(input));
      if (dim < 0 || dim >= static_cast<int64_t>(s.size())) return std::nullopt;
      return s[static_cast<size_t>(dim)];
    };
  };
  auto python = [](int64_t n, int64_t c, int64_t m) {  // what CPython computes, written out
    int64_t d = m - n * c;
    int64_t q = d >= 0 ? d / 4 : -((-d + 3) / 4);
    int64_t r = q % n;
    return r < 0 ? r + n : r;
  };
  for (auto [nn, cc, mm] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{6, 4, 3}, {2, 7, 100}, {5, 5, 26}, {9, 3, 0}}) {
    EXPECT_EQ(eval_size_expr(*expr, sizes_of({{nn, cc}, {mm}})), python(nn, cc, mm)) << nn << " " << cc << " " << mm;
  }
  auto twice = size_expr_of(*both, input_of);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(twice->steps.size(), 2u);
  EXPECT_EQ(eval_size_expr(*twice, sizes_of({{3, 5}, {1}})), 30);
  EXPECT_EQ(print_size_expr(*twice, [](int i) { return "in" + std::to_string(i); }),
            "(in0.size(0) * in0.size(1)) + (in0.size(0) * in0.size(1))");
  // A lone size is no step; a missing dim, a zero divisor or int64 overflow gives no value.
  auto lone = size_expr_of(*m, input_of);
  ASSERT_TRUE(lone.ok());
  EXPECT_TRUE(lone->steps.empty());
  EXPECT_EQ(eval_size_expr(*lone, sizes_of({{2, 2}, {11}})), 11);
  EXPECT_EQ(eval_size_expr(*lone, sizes_of({{2, 2}, {}})), std::nullopt);
  EXPECT_EQ(eval_size_expr(*expr, sizes_of({{0, 4}, {3}})), std::nullopt);  // q % 0
  auto big = size_expr_of(*nc, input_of);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(eval_size_expr(*big, sizes_of({{int64_t{1} << 40, int64_t{1} << 40}, {1}})), std::nullopt);
  // Sizes of an intermediate tensor, or a comparison, are not programs over the inputs.
  Node* relu = g.call(op("aten::relu"), {x});
  EXPECT_FALSE(size_expr_of(*sym(SymOp::size, relu, int64_t{0}), input_of).ok());
  EXPECT_FALSE(size_expr_of(*sym(SymOp::gt, n, int64_t{2}), input_of).ok());
}

}  // namespace
}  // namespace tj::graph
