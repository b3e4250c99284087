// Graph structure: names, use lists under insert / replace / erase, clone,
// and lint catching each broken invariant; whose error a caught exception is.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <unordered_map>

#include "graph/boxing.h"
#include "graph/graph.h"
#include "graph/lint.h"
#include "graph/printer.h"
#include "graph_test_util.h"

namespace tj::graph {

// Reaches into a graph to break it on purpose.
struct GraphTestAccess {
  static std::vector<Arg>& args(Node* n) { return n->args_; }
  static std::vector<Node*>& users(Node* n) { return n->users_; }
  static std::string& name(Node* n) { return n->name_; }
};

namespace {

using testing::op;

TensorMeta f32(std::vector<int64_t> sizes) { return TensorMeta::contiguous(std::move(sizes), c10::kFloat); }

struct Small {
  Graph g;
  Node* x;
  Node* y;
  Node* add;
  Node* mul;
  Node* out;
  Small() {
    x = g.placeholder("x", f32({4}));
    y = g.placeholder("y", f32({4}));
    add = g.call(op("aten::add.Tensor"), {x, y});
    mul = g.call(op("aten::mul.Tensor"), {add, add});
    out = g.output(Arg::tuple({mul}));
  }
};

TEST(Graph, NamesAreUniqueAndReadable) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* a = g.call(op("aten::add.Tensor"), {x, x});
  Node* b = g.call(op("aten::add.Tensor"), {a, x});
  Node* c = g.call(op("aten::add.Tensor"), {b, x});
  Node* s = g.call(op("aten::sin"), {c});
  Node* i = g.call(op("aten::add_.Tensor"), {s, x});
  Node* kw = g.call(op("aten::sin"), {s}, {}, "lambda");
  Node* dup = g.placeholder("x");
  EXPECT_EQ(a->name(), "add");
  EXPECT_EQ(b->name(), "add_1");
  EXPECT_EQ(c->name(), "add_2");
  EXPECT_EQ(s->name(), "sin");
  EXPECT_EQ(i->name(), "add_");
  EXPECT_EQ(kw->name(), "lambda_");
  EXPECT_EQ(dup->name(), "x_1");
  EXPECT_EQ(dup->target(), "x");
  EXPECT_EQ(a->target(), "aten.add.Tensor");
  EXPECT_EQ(s->target(), "aten.sin.default");
  EXPECT_EQ(g.find("add_1"), b);
}

TEST(Graph, UseListsFollowEdits) {
  Small s;
  EXPECT_EQ(s.x->users(), std::vector<Node*>{s.add});
  EXPECT_EQ(s.add->users(), std::vector<Node*>{s.mul});  // once, although used twice
  EXPECT_EQ(s.mul->users(), std::vector<Node*>{s.out});
  EXPECT_TRUE(lint(s.g).ok());

  // Insert a node before mul and route mul through it.
  s.g.set_insert_point(s.mul);
  Node* neg = s.g.call(op("aten::neg"), {s.add});
  s.g.set_insert_point(nullptr);
  s.mul->replace_input(s.add, neg);
  EXPECT_EQ(s.add->users(), std::vector<Node*>{neg});
  EXPECT_EQ(neg->users(), std::vector<Node*>{s.mul});
  EXPECT_TRUE(lint(s.g).ok()) << lint(s.g).error().message;

  // Replace all uses of neg with y, then erase neg and add.
  neg->replace_all_uses_with(s.y);
  EXPECT_TRUE(neg->users().empty());
  EXPECT_EQ(s.y->users(), (std::vector<Node*>{s.add, s.mul}));
  s.g.erase(neg);
  s.g.erase(s.add);
  EXPECT_TRUE(s.x->users().empty());
  EXPECT_EQ(s.y->users(), std::vector<Node*>{s.mul});
  EXPECT_TRUE(lint(s.g).ok()) << lint(s.g).error().message;
  EXPECT_EQ(s.g.size(), 4u);

  // set_args on the output.
  s.out->set_args({Arg::tuple({s.mul, s.x})});
  EXPECT_EQ(s.x->users(), std::vector<Node*>{s.out});
  EXPECT_TRUE(lint(s.g).ok());
}

TEST(Graph, KwargsAndListsAreUses) {
  Graph g;
  Node* x = g.placeholder("x", f32({2, 3}));
  Node* y = g.placeholder("y", f32({2, 3}));
  Node* cat = g.call(op("aten::cat"), {Arg::list({x, y})}, {{"dim", 0}});
  Node* add = g.call(op("aten::add.Tensor"), {x}, {{"other", y}, {"alpha", 2}});
  g.output(Arg::tuple({cat, add}));
  EXPECT_EQ(x->users(), (std::vector<Node*>{cat, add}));
  EXPECT_EQ(y->users(), (std::vector<Node*>{cat, add}));
  ASSERT_NE(add->kwarg("alpha"), nullptr);
  EXPECT_EQ(add->kwarg("alpha")->as<int64_t>(), 2);
  EXPECT_TRUE(lint(g).ok());
}

TEST(Graph, CloneIsDeepAndPrintsTheSame) {
  Small s;
  s.add->meta().loc = SourceLoc{"t.py", 3, "x + y"};
  s.add->meta().tags.grad_enabled = false;
  auto c = s.g.clone();
  EXPECT_EQ(print_graph(*c, {true}), print_graph(s.g, {true}));
  EXPECT_TRUE(lint(*c).ok());
  EXPECT_NE(c->find("add"), s.add);
  EXPECT_EQ(c->find("add")->users(), std::vector<Node*>{c->find("mul")});
}

TEST(Lint, CatchesUseBeforeDef) {
  Small s;
  s.g.move_before(s.mul, s.add);
  auto st = lint(s.g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("before its definition"), std::string::npos) << st.error().message;
}

TEST(Lint, CatchesMissingUser) {
  Small s;
  GraphTestAccess::users(s.x).clear();
  auto st = lint(s.g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("users list misses"), std::string::npos) << st.error().message;
}

TEST(Lint, CatchesExtraUser) {
  Small s;
  GraphTestAccess::users(s.x).push_back(s.mul);
  auto st = lint(s.g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("does not use it"), std::string::npos) << st.error().message;
}

TEST(Lint, CatchesDuplicateUser) {
  Small s;
  GraphTestAccess::users(s.x).push_back(s.add);
  auto st = lint(s.g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("twice"), std::string::npos) << st.error().message;
}

TEST(Lint, CatchesMissingAndExtraOutput) {
  Graph g;
  Node* x = g.placeholder("x");
  g.call(op("aten::sin"), {x});
  auto none = lint(g);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("0 output nodes"), std::string::npos);
  g.output(x);
  EXPECT_TRUE(lint(g).ok());
  g.output(x);
  auto two = lint(g);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("2 output nodes"), std::string::npos);
}

TEST(Lint, CatchesOutputNotLast) {
  Small s;
  s.g.move_before(s.out, s.mul);
  auto st = lint(s.g);
  ASSERT_FALSE(st.ok());
  // mul now comes after the output that uses it.
  EXPECT_NE(st.error().message.find("before its definition"), std::string::npos) << st.error().message;
  Small t;
  t.g.set_insert_point(nullptr);
  Node* late = t.g.call(op("aten::sin"), {t.x});
  (void)late;
  auto st2 = lint(t.g);
  ASSERT_FALSE(st2.ok());
  EXPECT_NE(st2.error().message.find("not the last node"), std::string::npos) << st2.error().message;
}

TEST(Lint, CatchesDanglingNode) {
  Small s;
  Graph other;
  Node* stranger = other.placeholder("z");
  GraphTestAccess::args(s.add)[1] = Arg(stranger);
  auto st = lint(s.g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("dangling"), std::string::npos) << st.error().message;
}

TEST(Lint, CatchesDuplicateName) {
  Small s;
  GraphTestAccess::name(s.mul) = "add";
  auto st = lint(s.g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("name"), std::string::npos) << st.error().message;
}

TEST(Lint, CatchesMalformedGetitem) {
  Graph g;
  Node* x = g.placeholder("x");
  Node* gi = g.call(OpRegistry::instance().getitem(), {x, "zero"});
  g.output(gi);
  auto st = lint(g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("getitem"), std::string::npos);
}

// An exception LibTorch throws (an op's check) is the program's error; any
// other std::exception caught on the way out of a layer is a bug of ours.
TEST(ExceptionKind, TellsOurBugsFromLibTorchErrors) {
  try {
    std::unordered_map<int, int> empty;
    (void)empty.at(1);
    FAIL() << "at() did not throw";
  } catch (const std::exception& e) {
    Error err = detail::exception_error("lowering failed: ", e);
    EXPECT_EQ(err.kind, ErrorKind::internal);
    EXPECT_EQ(err.message.rfind("lowering failed: ", 0), 0u);
  }
  try {
    TORCH_CHECK(false, "shape '[3]' is invalid for input of size 2");
  } catch (const std::exception& e) {
    EXPECT_NE(dynamic_cast<const c10::Error*>(&e), nullptr);
    EXPECT_EQ(detail::exception_kind(e), ErrorKind::unsupported);
  }
  EXPECT_EQ(detail::exception_kind(std::bad_alloc()), ErrorKind::unsupported);
  EXPECT_EQ(detail::exception_kind(std::runtime_error("ours")), ErrorKind::internal);
}

}  // namespace
}  // namespace tj::graph
