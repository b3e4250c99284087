// One lowered program for every size (jit/program_template.h): the llvm
// backend's programs of one functional graph at three sizes made one, its
// ints evaluated for sizes never lowered, compared with lowering those
// sizes and with running them in ATen; and what is refused.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "../compile/aot_test_util.h"
#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "jit/llvm_backend.h"
#include "jit/program_template.h"

namespace tj::jit {
namespace {

using testing::graph_of;

// A functional graph over x [rows, 4] and y [rows, 4] with kernels over
// [rows, 4], a reduction over the rows (a mean and a softmax: the row count
// is an inner size) and extern ops whose ints depend on rows (a view).
std::shared_ptr<const graph::Graph> functional(int64_t rows) {
  const std::string n = std::to_string(rows * 4);
  return graph_of(R"(
    in x y
    mul = aten.mul.Tensor(%x, %y)
    e = aten.exp.default(%mul)
    s = aten.sum.dim_IntList(%e, [1])
    flat = aten.view.default(%mul, [)" + n + R"(])
    c = aten.cumsum.default(%flat, 0)
    m = aten.mean.dim(%x, [0])
    sm = aten._softmax.default(%x, 0, False)
    d = aten.add.Tensor(%sm, %m)
    ret (%s, %c, %d, %e))");
}

std::vector<at::Tensor> inputs(int64_t rows) {
  at::Tensor x = at::arange(rows * 4, at::kFloat).reshape({rows, 4}) * 0.01;
  return {x, x.flip(0).sin()};
}

// The graph at `rows` with its metas, as a backend receives it.
std::shared_ptr<const graph::Graph> with_metas(int64_t rows) {
  std::shared_ptr<graph::Graph> g = functional(rows)->clone();
  std::vector<at::Tensor> in = inputs(rows);
  std::vector<graph::Node*> phs = g->placeholders();
  for (size_t i = 0; i < phs.size(); ++i) phs[i]->meta().set_tensor(graph::TensorMeta::of(in[i]));
  auto st = graph::infer_meta_all(*g);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  return g;
}

Program lowered(int64_t rows) {
  auto p = lower(with_metas(rows), LoweringOptions{});
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return std::move(*p);
}

std::vector<graph::TensorMeta> metas_of(const std::vector<at::Tensor>& in) {
  std::vector<graph::TensorMeta> out;
  for (const at::Tensor& t : in) out.push_back(graph::TensorMeta::of(t));
  return out;
}

TEST(ProgramTemplate, EvaluatesToTheProgramLoweredAtANewSize) {
  Program a = lowered(3), b = lowered(5), c = lowered(8);
  auto t = generalize_program({&a, &b, &c});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_FALSE(t->ints.empty()) << "no int of the program depends on the size";
  for (int64_t rows : {2, 13, 40}) {
    Program want = lowered(rows);
    ProgramSizes got = program_sizes(*t, metas_of(inputs(rows)));
    ASSERT_EQ(got.kernel_sizes.size(), want.kernels.size());
    for (size_t k = 0; k < want.kernels.size(); ++k)
      EXPECT_EQ(got.kernel_sizes[k], want.kernels[k].sizes) << "kernel " << k << " at rows " << rows;
    // The template's steps start with its size nodes.
    const size_t shift = t->program.steps.size() - want.steps.size();
    for (size_t s = 0; s < want.steps.size(); ++s)
      for (size_t o = 0; o < want.steps[s].output_metas.size(); ++o) {
        const graph::TensorMeta& m = got.output_metas[s + shift][o];
        const graph::TensorMeta& w = want.steps[s].output_metas[o];
        EXPECT_EQ(m.sizes, w.sizes) << "step " << s << " at rows " << rows;
        EXPECT_EQ(m.strides, w.strides) << "step " << s << " at rows " << rows;
        EXPECT_EQ(m.storage_offset, w.storage_offset) << "step " << s << " at rows " << rows;
      }
  }
}

TEST(ProgramTemplate, OneExecutableRunsEverySizeAsATen) {
  std::vector<ProgramPoint> points;
  for (int64_t rows : {3, 5, 8}) {
    ProgramPoint p;
    auto g = with_metas(rows);
    auto fn = compile_llvm_point(g, metas_of(inputs(rows)), &p);
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    ASSERT_TRUE(p);
    points.push_back(p);
  }
  auto all = compile_llvm_all_sizes(points);
  ASSERT_TRUE(all.ok()) << all.error().message;
  const long long differ = inputs_differ_fallbacks();
  // Sizes never lowered, back and forth (each size signature change
  // evaluates the ints again and keeps that size's buffers).
  for (int64_t rows : {7, 2, 30, 7, 5, 64}) {
    std::vector<at::Tensor> in = inputs(rows);
    auto want = graph::interpret_tensors(*functional(rows), in);
    ASSERT_TRUE(want.ok()) << want.error().message;
    std::vector<at::Tensor> got = all->fn(in);
    ASSERT_EQ(got.size(), want->size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].sizes(), (*want)[i].sizes()) << "output " << i << " at rows " << rows;
      EXPECT_EQ(got[i].strides(), (*want)[i].strides()) << "output " << i << " at rows " << rows;
      EXPECT_TRUE(at::allclose(got[i], (*want)[i], 1e-5, 1e-6)) << "output " << i << " at rows " << rows;
    }
  }
  EXPECT_EQ(inputs_differ_fallbacks(), differ) << "a size ran op by op instead of through the one program";
  // Sizes the template does not serve (another column count): `mismatch`
  // says so, and a call with them raises rather than run the template
  // graph's ints, which do not hold for them.
  at::Tensor x = at::rand({4, 6}), y = at::rand({4, 6});
  EXPECT_NE(all->mismatch(metas_of({x, y})), "");
  EXPECT_EQ(all->mismatch(metas_of(inputs(9))), "");
  EXPECT_THROW(all->fn({x, y}), std::runtime_error);
}

TEST(ProgramTemplate, RefusesProgramsThatDifferButForInts) {
  Program a = lowered(3), b = lowered(5);
  // Another graph at the third point: its steps differ.
  auto other = graph_of(R"(
    in x y
    mul = aten.mul.Tensor(%x, %y)
    ret (%mul,))")->clone();
  std::vector<at::Tensor> in = inputs(8);
  for (size_t i = 0; i < 2; ++i) other->placeholders()[i]->meta().set_tensor(graph::TensorMeta::of(in[i]));
  ASSERT_TRUE(graph::infer_meta_all(*other).ok());
  auto c = lower(std::shared_ptr<const graph::Graph>(std::move(other)), LoweringOptions{});
  ASSERT_TRUE(c.ok());
  auto t = generalize_program({&a, &b, &*c});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("differ"), std::string::npos) << t.error().message;
  EXPECT_FALSE(generalize_program({&a, &b}).ok()) << "two points cannot fit a size";
}

}  // namespace
}  // namespace tj::jit
