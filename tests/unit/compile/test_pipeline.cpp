// The compile pipeline (compile/pipeline.h) as the runtime relies on it:
// a functional backend gets AOT's graphs after the passes, a backend that
// is not functional the captured graph as it is; each failure names its
// step and whom it blames (AOT's failures are only logged by the runtime,
// the backend's warned); a backend's failures, at compile time and at call
// time, reach Hooks::backend_failed with the graph handed to it; an
// interruption stops the steps; an exception becomes a failure.
#include <stdexcept>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "aot_test_util.h"
#include "compile/pipeline.h"
#include "graph/printer.h"
#include "support/internal_error.h"

namespace tj::compile {
namespace {

using jit::testing::graph_of;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// sin(x) twice: CSE (a pass) makes it one.
std::shared_ptr<const graph::Graph> twice_sin() {
  return graph_of(R"(
    in x
    a = aten.sin.default(%x)
    b = aten.sin.default(%x)
    s = aten.add.Tensor(%a, %b)
    ret (%s,))");
}

Request request_of(std::shared_ptr<const graph::Graph> g, const jit::Backend& backend) {
  Request r;
  r.graph = std::move(g);
  r.example_inputs = {at::arange(6, at::kFloat).reshape({2, 3})};
  r.backend = &backend;
  r.where = "test";
  r.grad_enabled = false;
  return r;
}

// The interpreter backend, keeping the text of each graph it is handed.
jit::Backend keeping(std::vector<std::string>* handed, bool functional = true) {
  jit::Backend b = jit::testing::interpreter_backend();
  b.functional = functional;
  b.compile = [handed, inner = b.compile](std::shared_ptr<const graph::Graph> g,
                                          const std::vector<graph::TensorMeta>& in) {
    handed->push_back(graph::print_graph(*g));
    return inner(g, in);
  };
  return b;
}

TEST(Pipeline, FunctionalBackendGetsAotsGraphAfterThePasses) {
  std::vector<std::string> handed;
  jit::Backend backend = keeping(&handed);
  Request r = request_of(twice_sin(), backend);
  Result result = compile_graph(r);
  ASSERT_TRUE(result.compiled) << result.failure.message;
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(count(handed[0], "aten.sin"), 1) << handed[0];
  EXPECT_TRUE(result.compiled->through_aot);
  EXPECT_TRUE(result.captured);
  EXPECT_TRUE(has(result.compiled->aot_summary, "fresh")) << result.compiled->aot_summary;
  EXPECT_EQ(result.folded, r.graph);  // no size nodes: the graph itself
  std::vector<at::Tensor> out = result.compiled->fn({r.example_inputs[0]});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::allclose(out[0], r.example_inputs[0].sin() * 2));
}

TEST(Pipeline, BackendThatIsNotFunctionalGetsTheCapturedGraph) {
  std::vector<std::string> handed;
  jit::Backend backend = keeping(&handed, /*functional=*/false);
  Result result = compile_graph(request_of(twice_sin(), backend));
  ASSERT_TRUE(result.compiled) << result.failure.message;
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(count(handed[0], "aten.sin"), 2) << handed[0];
  EXPECT_FALSE(result.compiled->through_aot);
  EXPECT_FALSE(result.captured);
}

TEST(Pipeline, WhatAotCannotRepresentIsBlamedOnAotAtTheBoundary) {
  std::vector<std::string> handed;
  jit::Backend backend = keeping(&handed);
  Result result = compile_graph(request_of(graph_of(R"(
    in x
    r = aten.requires_grad_.default(%x)
    ret (%r,))"),
                                           backend));
  ASSERT_FALSE(result.compiled);
  EXPECT_EQ(result.failure.step, Step::aot_boundary);
  EXPECT_EQ(result.failure.blame, Blame::aot);
  EXPECT_TRUE(has(result.failure.message, "AOT: ")) << result.failure.message;
  EXPECT_TRUE(handed.empty());
  EXPECT_FALSE(result.captured);
}

TEST(Pipeline, BackendFailureIsBlamedOnTheBackendAndRecorded) {
  jit::Backend backend = jit::testing::interpreter_backend();
  backend.name = "failing";
  backend.compile = [](std::shared_ptr<const graph::Graph>, const std::vector<graph::TensorMeta>&)
      -> Expected<jit::CompiledFn> { return Error{"no kernel for this"}; };
  std::vector<std::string> recorded;
  Hooks hooks;
  hooks.backend_failed = [&](std::shared_ptr<const graph::Graph> g, std::vector<graph::TensorMeta> in,
                             std::string message) {
    recorded.push_back(message + "\n" + graph::print_graph(*g));
    EXPECT_EQ(in.size(), 1u);
  };
  Result result = compile_graph(request_of(twice_sin(), backend), hooks);
  ASSERT_FALSE(result.compiled);
  EXPECT_EQ(result.failure.step, Step::backend_compile);
  EXPECT_EQ(result.failure.blame, Blame::backend);
  EXPECT_EQ(result.failure.message, "backend failing (forward): no kernel for this");
  EXPECT_TRUE(result.captured);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_TRUE(has(recorded[0], "no kernel for this"));
  EXPECT_EQ(count(recorded[0], "aten.sin"), 1) << "the graph handed to it, after the passes:\n" << recorded[0];
}

TEST(Pipeline, CompiledFunctionThatThrowsIsRecorded) {
  jit::Backend backend = jit::testing::interpreter_backend();
  backend.compile = [](std::shared_ptr<const graph::Graph>, const std::vector<graph::TensorMeta>&)
      -> Expected<jit::CompiledFn> {
    return jit::CompiledFn([](c10::ArrayRef<at::Tensor>) -> std::vector<at::Tensor> {
      throw std::runtime_error("kernel crashed");
    });
  };
  std::vector<std::string> recorded;
  Hooks hooks;
  hooks.backend_failed = [&](std::shared_ptr<const graph::Graph>, std::vector<graph::TensorMeta>, std::string message) {
    recorded.push_back(message);
  };
  Request r = request_of(twice_sin(), backend);
  Result result = compile_graph(r, hooks);
  ASSERT_TRUE(result.compiled) << result.failure.message;
  EXPECT_TRUE(recorded.empty());
  EXPECT_THROW(result.compiled->fn({r.example_inputs[0]}), std::runtime_error);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_TRUE(has(recorded[0], "kernel crashed")) << recorded[0];
}

TEST(Pipeline, InterruptionStopsBeforeTheNextStep) {
  std::vector<std::string> handed;
  jit::Backend backend = keeping(&handed);
  Hooks hooks;
  hooks.interrupted = [] { return true; };
  Result result = compile_graph(request_of(twice_sin(), backend), hooks);
  ASSERT_FALSE(result.compiled);
  EXPECT_EQ(result.failure.message, "interrupted");
  EXPECT_EQ(result.failure.step, Step::capture);
  EXPECT_TRUE(handed.empty());
}

TEST(Pipeline, ExceptionOfOursIsAReportedInternalError) {
  jit::Backend backend = jit::testing::interpreter_backend();
  backend.compile = [](std::shared_ptr<const graph::Graph>, const std::vector<graph::TensorMeta>&)
      -> Expected<jit::CompiledFn> { throw std::logic_error("a bug"); };
  const long long before = internal_error_count();
  Result result = compile_graph(request_of(twice_sin(), backend));
  ASSERT_FALSE(result.compiled);
  EXPECT_EQ(result.failure.kind, ErrorKind::internal);
  EXPECT_EQ(result.failure.blame, Blame::aot);  // as an AOT failure: the graph runs as captured, logged
  EXPECT_EQ(result.failure.message.rfind(kInternalErrorPrefix, 0), 0u) << result.failure.message;
  EXPECT_EQ(internal_error_count(), before + 1);
}

}  // namespace
}  // namespace tj::compile
