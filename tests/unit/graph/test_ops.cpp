// For every op case: the interpreter equals direct ATen calls (outputs and
// mutated inputs), meta inference equals the real outputs' sizes, strides
// and dtypes, and the generated Python (run by /usr/bin/python3.11 in one
// batch) gives the same tensors.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <sstream>

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "graph/interpreter.h"
#include "graph/lint.h"
#include "graph/meta_infer.h"
#include "graph/printer.h"
#include "graph/python_codegen.h"
#include "graph/tensor_text.h"
#include "graph/type_names.h"
#include "graph_test_util.h"
#include "op_cases.h"

namespace tj::graph {
namespace {

using testing::op_cases;
using testing::OpCase;

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.clone());
  return out;
}

::testing::AssertionResult same_tensor(const at::Tensor& got, const at::Tensor& want) {
  if (got.sizes() != want.sizes())
    return ::testing::AssertionFailure() << "sizes " << got.sizes() << " vs " << want.sizes();
  if (got.scalar_type() != want.scalar_type())
    return ::testing::AssertionFailure() << "dtype " << got.scalar_type() << " vs " << want.scalar_type();
  bool close = at::isFloatingType(want.scalar_type()) ? at::allclose(got, want, 1e-5, 1e-6) : at::equal(got, want);
  if (!close) return ::testing::AssertionFailure() << "values differ:\n" << got << "\nvs\n" << want;
  return ::testing::AssertionSuccess();
}

// The nodes the output tuple names, in order.
std::vector<const Node*> output_nodes(const Graph& g) {
  std::vector<const Node*> out;
  g.output_node()->args().at(0).for_each_node([&](Node* n) { out.push_back(n); });
  return out;
}

class OpCaseTest : public ::testing::TestWithParam<size_t> {};

TEST_P(OpCaseTest, InterpreterEqualsEagerAndMetaEqualsReal) {
  const OpCase& c = op_cases()[GetParam()];
  std::vector<at::Tensor> inputs = c.inputs();
  auto g = testing::build_case(c, inputs);
  ASSERT_TRUE(lint(*g).ok()) << lint(*g).error().message;

  std::vector<at::Tensor> eager_in = clones(inputs);
  std::vector<at::Tensor> want = c.eager(eager_in);

  std::vector<at::Tensor> interp_in = clones(inputs);
  auto got = interpret_tensors(*g, interp_in);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same_tensor((*got)[i], want[i])) << "output " << i;
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_TRUE(same_tensor(interp_in[i], eager_in[i])) << "input " << i;

  auto st = infer_meta_all(*g);
  ASSERT_TRUE(st.ok()) << st.error().message;
  auto outs = output_nodes(*g);
  ASSERT_EQ(outs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TensorMeta* m = outs[i]->meta().tensor();
    ASSERT_NE(m, nullptr) << outs[i]->name();
    EXPECT_EQ(m->sizes, want[i].sizes().vec()) << outs[i]->name();
    EXPECT_EQ(m->dtype, want[i].scalar_type()) << outs[i]->name();
    EXPECT_EQ(m->storage_offset, want[i].storage_offset()) << outs[i]->name();
    for (size_t d = 0; d < m->sizes.size(); ++d)
      if (m->sizes[d] > 1) {
        EXPECT_EQ(m->strides[d], want[i].stride(d)) << outs[i]->name() << " dim " << d;
      }
  }
}

// An output that is a view of an input, or an input mutated in place,
// shares the input's storage id; a fresh result gets a fresh one.
TEST(MetaInference, StorageIdsFollowAliasing) {
  for (const char* name : {"transpose", "view_then_inplace", "add_inplace_input", "mul"}) {
    const OpCase* c = nullptr;
    for (const auto& oc : op_cases())
      if (oc.name == name) c = &oc;
    ASSERT_NE(c, nullptr);
    auto g = testing::build_case(*c, c->inputs());
    ASSERT_TRUE(infer_meta_all(*g).ok());
    int64_t input_storage = g->placeholders()[0]->meta().tensor()->storage_id;
    int64_t out_storage = output_nodes(*g)[0]->meta().tensor()->storage_id;
    if (std::string(name) == "mul") {
      EXPECT_NE(out_storage, input_storage) << name;
    } else {
      EXPECT_EQ(out_storage, input_storage) << name;
    }
  }
}

TEST(MetaInference, MissingMetaKernelIsAnErrorNamingTheOp) {
  Graph g;
  Node* x = testing::input(g, "x", at::ones({4}));
  Node* h = g.call(testing::op("aten::histc"), {x});  // no Meta kernel in LibTorch 1.13, no rule of ours
  g.output(h);
  auto st = infer_meta_all(g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("no meta kernel for aten::histc"), std::string::npos) << st.error().message;
}

TEST(MetaInference, FactoryRequiresGradAndDevice) {
  Graph g;
  at::Tensor w = at::ones({3});
  w.set_requires_grad(true);
  Node* x = testing::input(g, "x", w);
  Node* z = g.call(testing::op("aten::zeros"), {Arg::ints({2, 3})}, {{"dtype", c10::ScalarType::Double}});
  Node* m = g.call(testing::op("aten::mul.Tensor"), {z, x});
  Node* am = g.call(testing::op("aten::argmax"), {m});
  g.output(Arg::tuple({m, am}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  EXPECT_EQ(format_fake(z->meta()), "f64[2, 3]");
  EXPECT_EQ(format_fake(m->meta()), "f64[2, 3]{grad}");
  EXPECT_EQ(format_fake(am->meta()), "i64[]");
  EXPECT_EQ(m->meta().tensor()->device, c10::Device(c10::kCPU));
}

// LibTorch 1.13's meta kernels of full and arange do not infer the dtype
// from the fill value / bounds as the CPU kernels do; meta inference does.
TEST(MetaInference, FactoryDtypeInferredAsOnCpu) {
  struct Row {
    const char* op;
    std::vector<Arg> args;
    at::Tensor real;
  };
  std::vector<Row> rows = {
      {"aten::full", {Arg::ints({2}), Arg(int64_t{8})}, at::full({2}, 8)},
      {"aten::full", {Arg::ints({2}), Arg(true)}, at::full({2}, true)},
      {"aten::full", {Arg::ints({2}), Arg(1.5)}, at::full({2}, 1.5)},
      {"aten::arange", {Arg(3.0)}, at::arange(3.0)},
      {"aten::arange", {Arg(int64_t{3})}, at::arange(3)},
      {"aten::arange.start", {Arg(int64_t{1}), Arg(3.5)}, at::arange(1, 3.5)},
      {"aten::arange.start_step", {Arg(int64_t{0}), Arg(int64_t{5}), Arg(int64_t{2})}, at::arange(0, 5, 2)},
  };
  for (const Row& r : rows) {
    Graph g;
    Node* n = g.call(testing::op(r.op), r.args);
    g.output(n);
    ASSERT_TRUE(infer_meta_all(g).ok()) << r.op;
    EXPECT_EQ(n->meta().tensor()->dtype, r.real.scalar_type()) << r.op;
    EXPECT_EQ(n->meta().tensor()->sizes, r.real.sizes().vec()) << r.op;
  }
}

// copy_ raises as eager does (LibTorch's meta copy_ checks nothing): into a
// destination with internal overlap, from a source partly overlapping it,
// from a source that does not broadcast to it; a full overlap is fine.
TEST(MetaInference, CopyChecksLikeEager) {
  auto copy_into = [](const at::Tensor& base, auto dst_of, auto src_of) {
    Graph g;
    Node* x = testing::input(g, "x", base);
    Node* dst = dst_of(g, x);
    Node* src = src_of(g, x);
    g.output(g.call(testing::op("aten::copy_"), {dst, src}));
    return infer_meta_all(g);
  };
  auto same = [](Graph&, Node* x) { return x; };
  auto row = [](int64_t i) {
    return [i](Graph& g, Node* x) { return g.call(testing::op("aten::select.int"), {x, Arg(int64_t{0}), Arg(i)}); };
  };
  auto slice = [](int64_t start, int64_t stop) {
    return [=](Graph& g, Node* x) {
      return g.call(testing::op("aten::slice.Tensor"), {x, Arg(int64_t{0}), Arg(start), Arg(stop), Arg(int64_t{1})});
    };
  };
  at::Tensor expanded = at::arange(2.).view({2, 1}).expand({2, 2});
  auto st = copy_into(expanded, slice(0, 2), same);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("more than one element of the written-to tensor"), std::string::npos)
      << st.error().message;
  st = copy_into(at::arange(4.), slice(0, 3), slice(1, 4));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("some elements of the input tensor and the written-to tensor refer"),
            std::string::npos) << st.error().message;
  EXPECT_FALSE(copy_into(at::zeros({3, 2}), row(0), slice(0, 2)).ok());  // [2] <- [2, 2]
  EXPECT_TRUE(copy_into(at::arange(4.), slice(0, 4), same).ok());
  EXPECT_TRUE(copy_into(at::zeros({3, 2}), row(0), row(1)).ok());
}

// An op promoting an expanded input to another dtype lays its output out
// as the CPU kernel does (after the input's contiguous copy), not after the
// other input's transposed layout as LibTorch's meta does: every op whose
// TensorIterator promotes, whichever operand is promoted, for pairs of
// dtypes (a bool, an int64, a float32 input expanded; the other transposed).
TEST(MetaInference, PromotedInputsAreCopiedAsOnCpu) {
  using Call = std::function<Node*(Graph&, Node*, Node*)>;
  auto binary = [](const char* name) -> Call {
    return [name](Graph& g, Node* a, Node* b) { return g.call(testing::op(name), {a, b}); };
  };
  auto bool_of = [](Graph& g, Node* x) { return g.call(testing::op("aten::ne.Scalar"), {x, 0}); };
  const std::map<std::string, Call> calls = {
      {"sub", binary("aten::sub.Tensor")},
      {"mul", binary("aten::mul.Tensor")},
      {"eq", binary("aten::eq.Tensor")},
      {"div", binary("aten::div.Tensor")},
      {"maximum", binary("aten::maximum")},
      {"clamp_min", binary("aten::clamp_min.Tensor")},
      {"clamp_max", binary("aten::clamp_max.Tensor")},
      {"copysign", binary("aten::copysign.Tensor")},
      {"logical_and", binary("aten::logical_and")},
      {"clamp min", [](Graph& g, Node* a, Node* b) { return g.call(testing::op("aten::clamp.Tensor"), {a, b}); }},
      {"clamp max", [](Graph& g, Node* a, Node* b) {
         return g.call(testing::op("aten::clamp.Tensor"), {a}, {{"max", Arg(b)}});
       }},
      {"clamp min max", [](Graph& g, Node* a, Node* b) { return g.call(testing::op("aten::clamp.Tensor"), {a, b, b}); }},
      {"addcmul", [](Graph& g, Node* a, Node* b) { return g.call(testing::op("aten::addcmul"), {b, a, b}); }},
      {"addcdiv", [](Graph& g, Node* a, Node* b) { return g.call(testing::op("aten::addcdiv"), {a, b, b}); }},
      {"where", [&](Graph& g, Node* a, Node* b) { return g.call(testing::op("aten::where.self"), {bool_of(g, b), a, b}); }},
      {"add scalar", [](Graph& g, Node* a, Node*) { return g.call(testing::op("aten::add.Tensor"), {a, 2.5}); }},
  };
  const std::vector<std::pair<at::ScalarType, at::ScalarType>> pairs = {
      {at::kBool, at::kLong}, {at::kLong, at::kFloat}, {at::kFloat, at::kDouble}, {at::kLong, at::kLong}};
  int checked = 0;
  for (const auto& [expanded_dtype, transposed_dtype] : pairs) {
    at::Tensor expanded = at::arange(3).view({3, 1}).to(expanded_dtype).expand({3, 2});
    at::Tensor transposed = at::arange(6).view({2, 3}).add(1).to(transposed_dtype).t();
    for (const auto& [what, call] : calls) {
      for (bool swapped : {false, true}) {
        const std::string name = what + " " + c10::toString(expanded_dtype) + " " + c10::toString(transposed_dtype) +
                                 (swapped ? " swapped" : "");
        Graph g;
        Node* a = testing::input(g, "a", swapped ? transposed : expanded);
        Node* b = testing::input(g, "b", swapped ? expanded : transposed);
        Node* r = call(g, a, b);
        g.output(r);
        std::vector<at::Tensor> real;
        try {
          auto r_eager = interpret_tensors(g, {swapped ? transposed : expanded, swapped ? expanded : transposed});
          if (!r_eager.ok()) continue;
          real = *r_eager;
        } catch (const std::exception&) {
          continue;  // eager rejects these dtypes
        }
        ASSERT_TRUE(infer_meta_all(g).ok()) << name;
        EXPECT_EQ(r->meta().tensor()->strides, real[0].strides().vec()) << name;
        EXPECT_EQ(r->meta().tensor()->dtype, real[0].scalar_type()) << name;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 80);
}

// _embedding_bag's four results have the CPU kernel's sizes (the meta
// kernel's offset2bag and max_indices differ in `sum` mode), in every mode,
// with and without per-sample weights, padding and the last offset, for
// the fast path's dtypes and layouts and the others.
TEST(MetaInference, EmbeddingBagResultsHaveTheCpuSizes) {
  int checked = 0;
  for (const char* name : {"aten::_embedding_bag_forward_only", "aten::_embedding_bag"})
    for (at::ScalarType dtype : {at::kFloat, at::kDouble})
      for (bool transposed_weight : {false, true})
        for (int64_t mode : {0, 1, 2})
          for (int per_sample : {0, 1, 2})  // none, contiguous, strided
            for (bool include_last : {false, true})
              for (int64_t padding_idx : {int64_t{-1}, int64_t{3}}) {
                if (per_sample && mode != 0) continue;
                at::Tensor weight = transposed_weight ? at::randn({8, 20}, dtype).t() : at::randn({20, 8}, dtype);
                at::Tensor indices = at::randint(0, 20, {12});
                at::Tensor offsets = include_last ? at::arange(0, 13, 4) : at::arange(0, 12, 4);
                Graph g;
                std::vector<at::Tensor> inputs = {weight, indices, offsets};
                Node* w = testing::input(g, "w", weight);
                Node* i = testing::input(g, "i", indices);
                Node* o = testing::input(g, "o", offsets);
                Arg weights;
                if (per_sample) {
                  inputs.push_back(per_sample == 1 ? at::rand({12}, dtype) : at::rand({24}, dtype).slice(0, 0, 24, 2));
                  weights = testing::input(g, "p", inputs.back());
                }
                Node* bag = g.call(testing::op(name), {w, i, o, false, mode, false, weights, include_last, padding_idx});
                g.output(bag);
                const std::string what = std::string(name) + " " + c10::toString(dtype) + " mode " +
                                         std::to_string(mode) + " per_sample " + std::to_string(per_sample) +
                                         (transposed_weight ? " transposed" : "") + (include_last ? " last" : "") +
                                         " padding " + std::to_string(padding_idx);
                auto inferred = infer_meta_all(g);
                ASSERT_TRUE(inferred.ok()) << what << ": " << inferred.error().message;
                auto real = interpret_tensors(g, inputs);
                ASSERT_TRUE(real.ok()) << what;
                ASSERT_EQ(bag->meta().fake.size(), real->size()) << what;
                for (size_t r = 0; r < real->size(); ++r) {
                  EXPECT_EQ(bag->meta().fake[r].sizes, (*real)[r].sizes().vec()) << what << " result " << r;
                  EXPECT_EQ(bag->meta().fake[r].dtype, (*real)[r].scalar_type()) << what << " result " << r;
                }
                ++checked;
              }
  EXPECT_GT(checked, 100);
}

// mm, bmm and matmul of two dtypes raise as the CPU kernels do (the meta
// kernels do not compare the dtypes).
TEST(MetaInference, MatrixProductsOfTwoDtypesRaise) {
  for (const char* name : {"aten::mm", "aten::matmul"}) {
    Graph g;
    Node* a = testing::input(g, "a", at::randn({2, 2}));
    Node* b = testing::input(g, "b", at::randn({2, 2}, at::kDouble));
    g.output(g.call(testing::op(name), {a, b}));
    auto st = infer_meta_all(g);
    ASSERT_FALSE(st.ok()) << name;
    EXPECT_NE(st.error().message.find("expected scalar type Float but found Double"), std::string::npos)
        << st.error().message;
  }
}

// What autograd refuses on a leaf requiring grad: add_ and mul_
// (differentiable), nothing on an integer tensor. (logical_not_, which it
// allows, has its meta function only from LibTorch's Python:
// tests/e2e/tracer_mutation.py checks it under the launcher.)
TEST(MetaInference, InplaceOpsAutogradRefusesOnAGradLeaf) {
  auto refused = [](const char* name, const at::Tensor& x, std::vector<Arg> rest) {
    Graph g;
    Node* in = testing::input(g, "x", x);
    rest.insert(rest.begin(), Arg(in));
    Node* n = g.call(testing::op(name), std::move(rest));
    g.output(n);
    EXPECT_TRUE(infer_meta_all(g).ok()) << name;
    return inplace_raises_on_grad_leaf(g, *n);
  };
  EXPECT_TRUE(refused("aten::add_.Tensor", at::randn({3}), {Arg(1.0)}));
  EXPECT_TRUE(refused("aten::mul_.Tensor", at::randn({3}), {Arg(2.0)}));
  EXPECT_FALSE(refused("aten::add_.Tensor", at::arange(3), {Arg(int64_t{1})}));
}

TEST(TensorMeta, EmptyTensorsAreContiguous) {
  EXPECT_TRUE(TensorMeta::of(at::zeros({3, 0})).is_contiguous());
  EXPECT_TRUE(TensorMeta::of(at::zeros({3, 5, 0}).slice(0, 1)).is_contiguous());
  EXPECT_TRUE(TensorMeta::of(at::zeros({0, 4}).t()).is_contiguous());
  EXPECT_FALSE(TensorMeta::of(at::zeros({2, 4}).t()).is_contiguous());
}

TEST(Interpreter, ReturnsTheSameTensorObjects) {
  Graph g;
  at::Tensor a = at::ones({2, 2});
  Node* x = testing::input(g, "x", a);
  Node* t = g.call(testing::op("aten::add_.Scalar"), {x, 1});
  g.output(Arg::tuple({x, t}));
  auto out = interpret_tensors(g, {a});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE((*out)[0].is_same(a));
  EXPECT_TRUE((*out)[1].is_same(a));
  EXPECT_EQ(a.sum().item<float>(), 8.0f);
}

// A node traced inside `with torch.no_grad():` carries its grad mode as a
// tag: the interpreter runs it under that mode, the Python code sets it.
TEST(Interpreter, GradEnabledTagSetsTheNodesGradMode) {
  Graph g;
  at::Tensor a = at::ones({2}).requires_grad_(true);
  Node* x = testing::input(g, "x", a);
  Node* free = g.call(testing::op("aten::mul.Scalar"), {x, 2});
  Node* no_grad = g.call(testing::op("aten::mul.Scalar"), {x, 3});
  no_grad->meta().tags.grad_enabled = false;
  Node* after = g.call(testing::op("aten::mul.Scalar"), {x, 4});
  g.output(Arg::tuple({free, no_grad, after}));
  auto out = interpret_tensors(g, {a});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE((*out)[0].requires_grad());
  EXPECT_FALSE((*out)[1].requires_grad());
  EXPECT_TRUE((*out)[2].requires_grad());
  EXPECT_TRUE(c10::GradMode::is_enabled());
  std::string code = python_code(g);
  EXPECT_NE(code.find("    _grad_enabled = torch.is_grad_enabled()\n    torch._C._set_grad_enabled(False)\n    mul_1 = "),
            std::string::npos) << code;
  EXPECT_NE(code.find("    torch._C._set_grad_enabled(_grad_enabled)\n    mul_2 = "), std::string::npos) << code;
}

TEST(Interpreter, MalformedCallsAreValuesOpFailuresThrowAtensOwnError) {
  Graph g;
  Node* x = testing::input(g, "x", at::ones({2, 3}));
  Node* y = testing::input(g, "y", at::ones({4, 5}));
  g.output(g.call(testing::op("aten::mm"), {x, y}));
  auto few = interpret_tensors(g, {at::ones({2, 3})});
  ASSERT_FALSE(few.ok());
  // The op's own exception, unchanged (no node-name prefix): eager's message.
  std::string eager;
  try {
    at::mm(at::ones({2, 3}), at::ones({4, 5}));
  } catch (const c10::Error& e) {
    eager = e.what_without_backtrace();
  }
  ASSERT_FALSE(eager.empty());
  try {
    (void)interpret_tensors(g, {at::ones({2, 3}), at::ones({4, 5})});
    FAIL() << "mm of mismatched shapes ran";
  } catch (const c10::Error& e) {
    EXPECT_EQ(std::string(e.what_without_backtrace()), eager);
  }
  // The c10::Error subclass survives (IndexError stays IndexError).
  Graph h;
  Node* v = testing::input(h, "v", at::ones({3}));
  h.output(h.call(testing::op("aten::tril"), {v}));
  EXPECT_THROW((void)interpret_tensors(h, {at::ones({3})}), c10::IndexError);
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) { return op_cases()[info.param].name; }

INSTANTIATE_TEST_SUITE_P(Ops, OpCaseTest, ::testing::Range<size_t>(0, op_cases().size()), case_name);

// ---- generated Python, run by a separate /usr/bin/python3.11 ----

const char* kHarness = R"PY(
import types
def _t(h, dt, sizes):
    if not h:
        return torch.empty(sizes, dtype=dt)
    return torch.frombuffer(bytearray.fromhex(h), dtype=dt).reshape(sizes).clone()
def _flat(v, out):
    if isinstance(v, torch.Tensor):
        out.append(v)
    elif isinstance(v, (tuple, list)):
        for e in v:
            _flat(e, out)
def _hex(t):
    t = t.detach().contiguous().reshape(-1)
    return bytes(t.view(torch.uint8).tolist()).hex() if t.numel() else ""
def _run(i, src, inputs):
    ns = {}
    exec(compile(src, "case%d" % i, "exec"), ns)
    out = []
    _flat(ns["forward"](types.SimpleNamespace(), *inputs), out)
    for k, t in enumerate(out):
        sizes = ",".join(str(s) for s in t.shape) or "-"
        print("OUT", i, k, str(t.dtype).replace("torch.", ""), sizes, _hex(t) or "-")
)PY";

std::string python_tensor(const at::Tensor& t) {
  std::string sizes;
  for (int64_t s : t.sizes()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
  return "_t(\"" + tensor_to_hex(t) + "\", torch." + std::string(dtype_python_name(t.scalar_type())) + ", [" + sizes + "])";
}

TEST(PythonCodegen, GeneratedCodeMatchesInterpreter) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tracejit_codegen_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ostringstream script;
  script << "import torch\n" << kHarness;
  std::map<size_t, std::vector<at::Tensor>> expected;
  for (size_t i = 0; i < op_cases().size(); ++i) {
    const OpCase& c = op_cases()[i];
    std::vector<at::Tensor> inputs = c.inputs();
    auto g = testing::build_case(c, inputs);
    std::vector<at::Tensor> in = clones(inputs);
    auto out = interpret_tensors(*g, in);
    ASSERT_TRUE(out.ok()) << c.name << ": " << out.error().message;
    expected[i] = *out;
    script << "_run(" << i << ", " << format_string_literal(python_code(*g)) << ", [";
    for (size_t k = 0; k < inputs.size(); ++k) script << (k ? ", " : "") << python_tensor(inputs[k]);
    script << "])\n";
  }
  fs::path py = dir / "codegen_cases.py", out_path = dir / "out.txt", err_path = dir / "err.txt";
  std::ofstream(py) << script.str();
  std::string cmd = "/usr/bin/python3.11 " + py.string() + " > " + out_path.string() + " 2> " + err_path.string();
  int rc = std::system(cmd.c_str());
  std::ifstream err_in(err_path);
  std::string err((std::istreambuf_iterator<char>(err_in)), {});
  ASSERT_EQ(rc, 0) << "python failed (script kept in " << py << "):\n" << err;

  std::ifstream lines(out_path);
  std::string tag, dtype, sizes, hex;
  size_t i = 0, k = 0, seen = 0;
  while (lines >> tag >> i >> k >> dtype >> sizes >> hex) {
    ASSERT_EQ(tag, "OUT");
    ASSERT_LT(k, expected[i].size()) << op_cases()[i].name;
    std::vector<int64_t> shape;
    if (sizes != "-") {
      std::stringstream ss(sizes);
      for (std::string part; std::getline(ss, part, ',');) shape.push_back(std::stoll(part));
    }
    auto dt = dtype_from_python_name(dtype);
    ASSERT_TRUE(dt.has_value()) << dtype;
    auto t = tensor_from_hex(hex == "-" ? "" : hex, shape, *dt);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_TRUE(same_tensor(*t, expected[i][k])) << op_cases()[i].name << " output " << k;
    ++seen;
  }
  size_t total = 0;
  for (const auto& [idx, ts] : expected) total += ts.size();
  EXPECT_EQ(seen, total);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace tj::graph
