// The lowering's visiting order (fusion_order): the graph's, except that a
// pure 0-d node runs as soon as its inputs are ready; pinned on a small
// Adam-like graph, and kept on a chain of 20,000 scalar ops, which the
// order walks without recursing once per link. Independent pointwise work
// (a list comprehension's 200 `x * 2`) is cut into narrow kernels that
// print alike, so they compile once; a chain stays one kernel however many
// inputs it loads.
#include <pthread.h>

#include <functional>
#include <string>
#include <vector>

#include "llvm_test_util.h"
#include "jit/llvm_codegen.h"
#include "jit/loop_ir.h"
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

// 40 independent `x_i * 2`: one kernel of 80 buffers took LLVM seconds at
// 200; now kernels of at most 8 loaded inputs, all printing the same
// (one compile, the others kernel-cache hits), with eager's values.
TEST(FusionWidth, IndependentWorkIsCutIntoKernelsThatPrintAlike) {
  constexpr int kTerms = 40;
  std::vector<at::Tensor> inputs;
  for (int i = 0; i < kTerms; ++i) inputs.push_back(at::randn({4}));
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    std::vector<Node*> out;
    for (Node* xi : x) out.push_back(g.call(op("aten::mul.Tensor"), {xi, 2.0}));
    return out;
  };
  auto built = build(body, inputs);
  ASSERT_TRUE(built);
  auto program = lower(built->graph, LoweringOptions{});
  ASSERT_TRUE(program.ok()) << program.error().message;
  ASSERT_EQ(program->kernels.size(), 5u);
  for (const loop::Kernel& k : program->kernels) {
    EXPECT_EQ(k.inputs.size(), 8u);
    EXPECT_EQ(loop::print_kernel(k, false), loop::print_kernel(program->kernels[0], false));
  }
  forget_kernels();
  zero_kernel_counters();
  int kernels = 0;
  EXPECT_TRUE(compare(body, inputs, "40 independent muls", &kernels));
  EXPECT_EQ(kernels, 5);
  EXPECT_LE(kernels_compiled(), 1);  // 0 when the disk cache has it
  EXPECT_EQ(kernels_compiled() + kernel_cache_hits(), 5);
}

// A chain reading many inputs is not independent work: one kernel.
TEST(FusionWidth, AChainOverManyInputsStaysOneKernel) {
  constexpr int kTerms = 24;
  std::vector<at::Tensor> inputs;
  for (int i = 0; i < kTerms; ++i) inputs.push_back(at::randn({4}));
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    Node* acc = x[0];
    for (size_t i = 1; i < x.size(); ++i) acc = g.call(op("aten::add.Tensor"), {acc, x[i]});
    return std::vector<Node*>{acc};
  };
  int kernels = 0;
  EXPECT_TRUE(compare(body, inputs, "a chain of 24 adds", &kernels));
  EXPECT_EQ(kernels, 1);
}

}  // namespace
}  // namespace tj::jit
