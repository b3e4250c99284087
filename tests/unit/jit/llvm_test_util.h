// Helpers of the llvm backend's unit tests: graphs built from a body over
// placeholders, run eagerly (the graph interpreter, i.e. ATen) and with the
// llvm backend, results compared (strides too; bit-exact for integer/bool,
// a tolerance for floats).
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "jit/backend.h"
#include "jit/llvm_backend.h"
#include "jit/llvm_codegen.h"

namespace tj::jit::test_util {


// A fresh kernel disk cache for this process (resolved on the first
// compile), so the counter checks see real compiles; TRACEJIT_CACHE_DIR,
// which would win over XDG_CACHE_HOME, is dropped.
inline const bool kFreshDiskCache = [] {
  char dir[] = "/tmp/tracejit_unit_cache_XXXXXX";
  return mkdtemp(dir) != nullptr && unsetenv("TRACEJIT_CACHE_DIR") == 0 && setenv("XDG_CACHE_HOME", dir, 1) == 0;
}();

using graph::Arg;
using graph::Graph;
using graph::Kwarg;
using graph::Node;

inline const graph::OpInfo& op(const char* name) {
  auto info = graph::OpRegistry::instance().get(name);
  if (!info.ok()) throw std::runtime_error(info.error().message);
  return **info;
}

// Builds the body of a graph from its placeholders; returns its outputs.
using Body = std::function<std::vector<Node*>(Graph&, const std::vector<Node*>&)>;

struct Built {
  std::shared_ptr<const Graph> graph;
  std::vector<graph::TensorMeta> metas;
};

// nullopt when meta inference rejects the graph (eager would too).
inline std::optional<Built> build(const Body& body, const std::vector<at::Tensor>& inputs) {
  auto g = std::make_shared<Graph>();
  std::vector<Node*> ph;
  Built out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    out.metas.push_back(graph::TensorMeta::of(inputs[i]));
    ph.push_back(g->placeholder("x" + std::to_string(i), out.metas.back()));
  }
  std::vector<Node*> results = body(*g, ph);
  std::vector<Arg> items(results.begin(), results.end());
  g->output(Arg::tuple(items));
  if (auto st = graph::infer_meta_all(*g); !st.ok()) {
    // Ops without a meta kernel here (rsub.Tensor): one node on
    // placeholders gets the description of eager's result instead.
    if (results.size() != 1) return std::nullopt;
    try {
      auto r = graph::interpret_tensors(*g, inputs);
      if (!r.ok()) return std::nullopt;
      results[0]->meta().set_tensor(graph::TensorMeta::of((*r)[0]));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  out.graph = g;
  return out;
}

inline void expect_close(const at::Tensor& e, const at::Tensor& c, const std::string& what) {
  ASSERT_EQ(e.sizes(), c.sizes()) << what;
  EXPECT_EQ(e.strides(), c.strides()) << what;
  ASSERT_EQ(e.scalar_type(), c.scalar_type()) << what;
  if (at::isFloatingType(e.scalar_type())) {
    // float16/bfloat16: eager's own functions (erf, exp) may round the other way by one unit
    double tol = e.scalar_type() == at::kHalf ? 1e-3 : e.scalar_type() == at::kBFloat16 ? 1e-2 : 1e-5;
    EXPECT_TRUE(at::allclose(e.to(at::kDouble), c.to(at::kDouble), tol, tol, /*equal_nan=*/true))
        << what << "\neager:\n" << e << "\ncompiled:\n" << c;
  } else {
    EXPECT_TRUE(at::equal(e, c)) << what << "\neager:\n" << e << "\ncompiled:\n" << c;
  }
}

// How a test compiles a graph: the llvm backend by default.
using GraphCompiler = std::function<Expected<CompiledFn>(std::shared_ptr<const Graph>,
                                                         const std::vector<graph::TensorMeta>&)>;
inline Expected<CompiledFn> llvm_compile(std::shared_ptr<const Graph> g, const std::vector<graph::TensorMeta>& m) {
  return find_backend("llvm")->compile(std::move(g), m);
}

// Runs `body` eagerly and compiled; false when eager rejects it.
inline bool compare(const Body& body, const std::vector<at::Tensor>& inputs, const std::string& what,
                    int* kernels = nullptr, const GraphCompiler& compile = llvm_compile) {
  auto built = build(body, inputs);
  if (!built) return false;
  std::vector<at::Tensor> expected;
  try {
    auto r = graph::interpret_tensors(*built->graph, inputs);
    if (!r.ok()) return false;
    expected = *r;
  } catch (const std::exception& e) {
    if (getenv("TJ_TEST_DEBUG")) fprintf(stderr, "eager: %s\n", e.what());
    return false;  // eager rejects these inputs (e.g. sub on bool)
  }
  auto fn = compile(built->graph, built->metas);
  EXPECT_TRUE(fn.ok()) << what << ": " << (fn.ok() ? "" : fn.error().message);
  if (!fn.ok()) return true;
  if (kernels) *kernels = last_llvm_compile_stats().kernels;
  std::vector<at::Tensor> got = (*fn)(inputs);
  EXPECT_EQ(expected.size(), got.size()) << what;
  for (size_t i = 0; i < expected.size() && i < got.size(); ++i) expect_close(expected[i], got[i], what);
  return true;
}

inline const std::vector<c10::ScalarType> kDtypes = {at::kBool,  at::kInt,   at::kLong,    at::kFloat,
                                                     at::kDouble, at::kHalf, at::kBFloat16};

inline at::Tensor values(std::vector<int64_t> sizes, c10::ScalarType t) {
  if (t == at::kBool) return at::randint(0, 2, sizes).to(at::kBool);
  if (t == at::kInt || t == at::kLong) return at::randint(-5, 6, sizes).to(t);
  return (at::randn(sizes) * 3).to(t);
}

}  // namespace tj::jit::test_util
