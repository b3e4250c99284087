// The lowering's visiting order (fusion_order): the graph's, except that a
// pure 0-d node runs as soon as its inputs are ready; pinned on a small
// Adam-like graph, and kept on a chain of 20,000 scalar ops, which the
// order walks without recursing once per link.
#include <pthread.h>

#include <functional>
#include <string>
#include <vector>

#include "llvm_test_util.h"
#include "jit/lowering.h"

namespace tj::jit {
namespace {

using namespace test_util;  // NOLINT: the helpers of llvm_test_util.h
using graph::Graph;
using graph::Node;

std::vector<std::string> names(const std::vector<const Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->name());
  return out;
}

// Runs `fn` on a thread with a 1 MiB stack (Python's threading.stack_size
// can give a compiling thread less than the main thread's 8 MiB).
void run_on_small_stack(std::function<void()> fn) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 1 << 20), 0);
  pthread_t thread;
  auto body = [](void* f) -> void* {
    (*static_cast<std::function<void()>*>(f))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, &fn), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

TEST(FusionOrder, ScalarsRunAsSoonAsTheirInputsAreReady) {
  std::vector<std::string> made;  // the body's nodes, in graph order
  Body body = [&](Graph& g, const std::vector<Node*>& x) {
    Node* a = g.call(op("aten::mul.Tensor"), {x[0], 2.0});  // tensor
    Node* b = g.call(op("aten::add.Tensor"), {x[1], 1.0});  // scalar, ready at once
    Node* c = g.call(op("aten::sum"), {a});                 // scalar, once a is
    Node* d = g.call(op("aten::mul.Tensor"), {a, b});       // tensor
    Node* e = g.call(op("aten::mul.Tensor"), {c, 2.0});     // scalar of c
    Node* f = g.call(op("aten::add.Tensor"), {c, b});       // scalar of c and b
    Node* h = g.call(op("aten::mul.Tensor"), {e, f});       // scalar of e and f
    Node* i = g.call(op("aten::add.Tensor"), {d, h});       // tensor
    for (Node* n : {a, b, c, d, e, f, h, i}) made.push_back(n->name());
    return std::vector<Node*>{i};
  };
  auto built = build(body, {at::randn({4}), at::randn({})});
  ASSERT_TRUE(built);
  const std::vector<std::string> order = names(fusion_order(*built->graph));
  ASSERT_EQ(order.size(), 11u);
  const std::string &a = made[0], &b = made[1], &c = made[2], &d = made[3], &e = made[4], &f = made[5],
                    &h = made[6], &i = made[7];
  // placeholders; b (ready at once); a, then depth first the scalars it
  // unblocks: c, e (h waits for f), f, h; then d and i in graph order
  const std::vector<std::string> want = {"x0", "x1", b, a, c, e, f, h, d, i, order.back()};
  EXPECT_EQ(order, want);
}

// Each link of the chain unblocks the next: 20,000 nested calls when the
// order recursed per link, which overflowed a 1 MiB stack.
TEST(FusionOrder, ALongScalarChainKeepsGraphOrder) {
  constexpr int kLinks = 20000;
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    Node* v = x[0];
    for (int k = 0; k < kLinks; ++k) v = g.call(op(k % 2 ? "aten::mul.Tensor" : "aten::add.Tensor"), {v, 1.5});
    return std::vector<Node*>{v};
  };
  auto built = build(body, {at::randn({})});
  ASSERT_TRUE(built);
  const std::vector<Node*> graph_nodes = built->graph->nodes();
  const std::vector<const Node*> want(graph_nodes.begin(), graph_nodes.end());
  ASSERT_EQ(want.size(), static_cast<size_t>(kLinks + 2));
  std::vector<const Node*> order;
  run_on_small_stack([&] { order = fusion_order(*built->graph); });
  EXPECT_TRUE(order == want);
}

}  // namespace
}  // namespace tj::jit
