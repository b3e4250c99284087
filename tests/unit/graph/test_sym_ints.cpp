// Size builtins (graph/sym_ints.h): Python's int semantics, meta values
// through a view shaped by sizes, the interpreter on real tensors, folding
// into constants, the printer and the Python code generator.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tj::graph
