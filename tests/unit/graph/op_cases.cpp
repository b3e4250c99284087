// ~55 op cases: pointwise, reductions with dim/keepdim, views, matmul,
// conv2d, softmax, layer_norm, cat/stack, index/slice, where, in-place.
#include "op_cases.h"

#include <ATen/Functions.h>

#include "graph_test_util.h"

namespace tj::graph::testing {

namespace {

using Tensors = std::vector<at::Tensor>;
using Nodes = std::vector<Node*>;

// Deterministic float data (no RNG): sin of a ramp.
at::Tensor T(std::vector<int64_t> sizes, double seed = 0.0) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return at::arange(n, at::kFloat).mul(0.37).add(seed).sin().reshape(sizes);
}
at::Tensor Ints(std::vector<int64_t> idx) { return at::tensor(idx, at::kLong); }

Node* C(Graph& g, const char* op_name, std::vector<Arg> args, std::vector<Kwarg> kwargs = {}) {
  return g.call(op(op_name), std::move(args), std::move(kwargs));
}

// A one-op case: out = op(x0, ...extra args).
OpCase unary(std::string name, std::vector<int64_t> sizes, const char* op_name, std::vector<Arg> extra,
             std::function<at::Tensor(const at::Tensor&)> eager, std::vector<Kwarg> kwargs = {}) {
  return OpCase{
      std::move(name), [sizes] { return Tensors{T(sizes)}; },
      [op_name, extra, kwargs](Graph& g, const Nodes& x) {
        std::vector<Arg> args{x[0]};
        args.insert(args.end(), extra.begin(), extra.end());
        g.output(Arg::tuple({C(g, op_name, args, kwargs)}));
      },
      [eager](Tensors& in) { return Tensors{eager(in[0])}; }};
}

// A two-input one-op case: out = op(x0, x1, ...extra).
OpCase binary(std::string name, at::Tensor a, at::Tensor b, const char* op_name, std::vector<Arg> extra,
              std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> eager, std::vector<Kwarg> kwargs = {}) {
  return OpCase{
      std::move(name), [a, b] { return Tensors{a.clone(), b.clone()}; },
      [op_name, extra, kwargs](Graph& g, const Nodes& x) {
        std::vector<Arg> args{x[0], x[1]};
        args.insert(args.end(), extra.begin(), extra.end());
        g.output(Arg::tuple({C(g, op_name, args, kwargs)}));
      },
      [eager](Tensors& in) { return Tensors{eager(in[0], in[1])}; }};
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> cases;
  auto add = [&](OpCase c) { cases.push_back(std::move(c)); };
  // ---- pointwise ----
  add(binary("add_alpha", T({4, 8}), T({4, 8}, 1), "aten::add.Tensor", {}, [](auto& a, auto& b) { return at::add(a, b, 2); },
             {{"alpha", 2}}));
  add(unary("add_scalar", {4, 8}, "aten::add.Scalar", {3}, [](auto& a) { return at::add(a, 3); }));
  add(binary("sub_broadcast", T({4, 8}), T({8}, 1), "aten::sub.Tensor", {}, [](auto& a, auto& b) { return at::sub(a, b); }));
  add(binary("mul", T({4, 8}), T({4, 8}, 2), "aten::mul.Tensor", {}, [](auto& a, auto& b) { return at::mul(a, b); }));
  add(binary("div", T({4, 8}), T({4, 8}, 2).add(3), "aten::div.Tensor", {}, [](auto& a, auto& b) { return at::div(a, b); }));
  add(binary("div_floor", T({4, 8}), T({4, 8}, 2).add(3), "aten::div.Tensor_mode", {},
             [](auto& a, auto& b) { return at::div(a, b, "floor"); }, {{"rounding_mode", "floor"}}));
  add(unary("neg", {3, 5}, "aten::neg", {}, [](auto& a) { return at::neg(a); }));
  add(unary("abs", {3, 5}, "aten::abs", {}, [](auto& a) { return at::abs(a); }));
  add(unary("exp", {3, 5}, "aten::exp", {}, [](auto& a) { return at::exp(a); }));
  add(unary("tanh", {3, 5}, "aten::tanh", {}, [](auto& a) { return at::tanh(a); }));
  add(unary("sigmoid", {3, 5}, "aten::sigmoid", {}, [](auto& a) { return at::sigmoid(a); }));
  add(unary("relu", {3, 5}, "aten::relu", {}, [](auto& a) { return at::relu(a); }));
  add(unary("gelu", {3, 5}, "aten::gelu", {}, [](auto& a) { return at::gelu(a); }));
  add(unary("pow_scalar", {3, 5}, "aten::pow.Tensor_Scalar", {2}, [](auto& a) { return at::pow(a, 2); }));
  add(unary("clamp_kwargs", {3, 5}, "aten::clamp", {}, [](auto& a) { return at::clamp(a, -0.5, 0.5); },
            {{"min", -0.5}, {"max", 0.5}}));
  add(unary("to_double", {3, 5}, "aten::_to_copy", {}, [](auto& a) { return a.to(at::kDouble); },
            {{"dtype", c10::ScalarType::Double}}));
  add(OpCase{"log_abs_chain", [] { return Tensors{T({4, 4})}; },
             [](Graph& g, const Nodes& x) {
               Node* a = C(g, "aten::abs", {x[0]});
               Node* p = C(g, "aten::add.Scalar", {a, 1});
               Node* l = C(g, "aten::log", {p});
               Node* s = C(g, "aten::sin", {l});
               g.output(Arg::tuple({C(g, "aten::cos", {s}), l}));
             },
             [](Tensors& in) {
               auto l = at::log(at::abs(in[0]).add(1));
               return Tensors{at::cos(at::sin(l)), l};
             }});
  add(OpCase{"where_gt", [] { return Tensors{T({4, 8}), T({4, 8}, 1)}; },
             [](Graph& g, const Nodes& x) {
               Node* m = C(g, "aten::gt.Scalar", {x[0], 0.0});
               g.output(Arg::tuple({C(g, "aten::where.self", {m, x[0], x[1]})}));
             },
             [](Tensors& in) { return Tensors{at::where(at::gt(in[0], 0.0), in[0], in[1])}; }});
  // A number for other or self: the condition's layout leads (eager's
  // TensorIterator order), not the transposed tensor's (regression 33).
  add(OpCase{"where_scalar_other_layout", [] { return Tensors{T({2, 5}), T({5, 2}, 1).t()}; },
             [](Graph& g, const Nodes& x) {
               Node* m = C(g, "aten::ne.Scalar", {x[0], 0.0});
               g.output(Arg::tuple({C(g, "aten::where.ScalarOther", {m, x[1], 0.0})}));
             },
             [](Tensors& in) { return Tensors{at::where(at::ne(in[0], 0.0), in[1], 0.0)}; }});
  add(OpCase{"where_scalar_self_layout", [] { return Tensors{T({2, 5}), T({5, 2}, 1).t()}; },
             [](Graph& g, const Nodes& x) {
               Node* m = C(g, "aten::gt.Scalar", {x[0], 0.0});
               g.output(Arg::tuple({C(g, "aten::where.ScalarSelf", {m, 1.5, x[1]})}));
             },
             [](Tensors& in) { return Tensors{at::where(at::gt(in[0], 0.0), 1.5, in[1])}; }});
  add(binary("eq", T({4, 8}).round(), T({4, 8}, 1).round(), "aten::eq.Tensor", {},
             [](auto& a, auto& b) { return at::eq(a, b); }));
  add(binary("maximum", T({4, 8}), T({8}, 1), "aten::maximum", {}, [](auto& a, auto& b) { return at::maximum(a, b); }));
  add(OpCase{"masked_fill", [] { return Tensors{T({4, 8}), T({4, 8}, 1).gt(0)}; },
             [](Graph& g, const Nodes& x) { g.output(Arg::tuple({C(g, "aten::masked_fill.Scalar", {x[0], x[1], 0.0})})); },
             [](Tensors& in) { return Tensors{at::masked_fill(in[0], in[1], 0.0)}; }});
  // ---- reductions ----
  add(unary("sum_all", {4, 8}, "aten::sum", {}, [](auto& a) { return at::sum(a); }));
  add(unary("sum_dim_keepdim", {4, 8}, "aten::sum.dim_IntList", {Arg::ints({1}), true},
            [](auto& a) { return at::sum(a, {1}, true); }));
  add(unary("mean_dim", {4, 8}, "aten::mean.dim", {Arg::ints({0})}, [](auto& a) { return at::mean(a, {0}); }));
  add(unary("amax", {4, 8}, "aten::amax", {Arg::ints({1})}, [](auto& a) { return at::amax(a, {1}); }));
  add(unary("argmax_keepdim", {4, 8}, "aten::argmax", {1, true}, [](auto& a) { return at::argmax(a, 1, true); }));
  add(unary("var_correction", {4, 8}, "aten::var.correction", {Arg::ints({1})},
            [](auto& a) { return at::var(a, at::IntArrayRef{1}, /*correction=*/0, false); },
            {{"correction", 0}}));
  add(OpCase{"max_dim_getitem", [] { return Tensors{T({4, 8})}; },
             [](Graph& g, const Nodes& x) {
               Node* m = C(g, "aten::max.dim", {x[0], 1, false});
               const OpInfo& gi = OpRegistry::instance().getitem();
               g.output(Arg::tuple({g.call(gi, {m, 0}), g.call(gi, {m, 1})}));
             },
             [](Tensors& in) {
               auto [v, i] = at::max(in[0], 1, false);
               return Tensors{v, i};
             }});
  // ---- views ----
  add(unary("view", {4, 8}, "aten::view", {Arg::ints({8, 4})}, [](auto& a) { return a.view({8, 4}); }));
  add(unary("permute", {2, 3, 4}, "aten::permute", {Arg::ints({2, 0, 1})}, [](auto& a) { return a.permute({2, 0, 1}); }));
  add(unary("transpose", {4, 8}, "aten::transpose.int", {0, 1}, [](auto& a) { return a.transpose(0, 1); }));
  add(unary("slice", {4, 8}, "aten::slice.Tensor", {1, 2, 7, 2}, [](auto& a) { return a.slice(1, 2, 7, 2); }));
  add(unary("select", {4, 8}, "aten::select.int", {0, -1}, [](auto& a) { return a.select(0, -1); }));
  add(unary("unsqueeze", {4, 8}, "aten::unsqueeze", {1}, [](auto& a) { return a.unsqueeze(1); }));
  add(unary("expand", {4, 1}, "aten::expand", {Arg::ints({4, 6})}, [](auto& a) { return a.expand({4, 6}); }));
  add(unary("narrow", {4, 8}, "aten::narrow", {0, 1, 2}, [](auto& a) { return a.narrow(0, 1, 2); }));
  add(OpCase{"reshape_of_transpose", [] { return Tensors{T({4, 6})}; },
             [](Graph& g, const Nodes& x) {
               Node* t = C(g, "aten::t", {x[0]});
               g.output(Arg::tuple({C(g, "aten::reshape", {t, Arg::ints({-1})})}));
             },
             [](Tensors& in) { return Tensors{in[0].t().reshape({-1})}; }});
  add(unary("contiguous_clone", {4, 8}, "aten::clone", {}, [](auto& a) { return a.clone(); }));
  // ---- matmul, linear, conv ----
  add(binary("mm", T({4, 8}), T({8, 3}, 1), "aten::mm", {}, [](auto& a, auto& b) { return at::mm(a, b); }));
  add(binary("matmul_3d_2d", T({2, 4, 8}), T({8, 3}, 1), "aten::matmul", {}, [](auto& a, auto& b) { return at::matmul(a, b); }));
  add(binary("bmm", T({2, 4, 8}), T({2, 8, 3}, 1), "aten::bmm", {}, [](auto& a, auto& b) { return at::bmm(a, b); }));
  add(OpCase{"addmm", [] { return Tensors{T({3}), T({4, 8}, 1), T({8, 3}, 2)}; },
             [](Graph& g, const Nodes& x) { g.output(Arg::tuple({C(g, "aten::addmm", {x[0], x[1], x[2]}, {{"beta", 0.5}})})); },
             [](Tensors& in) { return Tensors{at::addmm(in[0], in[1], in[2], 0.5)}; }});
  add(OpCase{"linear", [] { return Tensors{T({2, 5, 8}), T({3, 8}, 1), T({3}, 2)}; },
             [](Graph& g, const Nodes& x) { g.output(Arg::tuple({C(g, "aten::linear", {x[0], x[1], x[2]})})); },
             [](Tensors& in) { return Tensors{at::linear(in[0], in[1], in[2])}; }});
  add(OpCase{"conv2d_bias_pad", [] { return Tensors{T({2, 3, 8, 8}), T({4, 3, 3, 3}, 1), T({4}, 2)}; },
             [](Graph& g, const Nodes& x) {
               g.output(Arg::tuple({C(g, "aten::conv2d",
                                      {x[0], x[1], x[2], Arg::ints({1, 1}), Arg::ints({1, 1}), Arg::ints({1, 1}), 1})}));
             },
             [](Tensors& in) { return Tensors{at::conv2d(in[0], in[1], in[2], {1, 1}, {1, 1}, {1, 1}, 1)}; }});
  add(OpCase{"conv2d_stride_groups", [] { return Tensors{T({1, 4, 9, 9}), T({4, 2, 3, 3}, 1)}; },
             [](Graph& g, const Nodes& x) {
               g.output(Arg::tuple({C(g, "aten::conv2d",
                                      {x[0], x[1], Arg(), Arg::ints({2, 2}), Arg::ints({0, 0}), Arg::ints({1, 1}), 2})}));
             },
             [](Tensors& in) { return Tensors{at::conv2d(in[0], in[1], c10::optional<at::Tensor>(), at::IntArrayRef{2, 2}, at::IntArrayRef{0, 0}, at::IntArrayRef{1, 1}, 2)}; }});
  // ---- normalization ----
  add(unary("softmax", {4, 8}, "aten::softmax.int", {1}, [](auto& a) { return at::softmax(a, 1); }));
  add(unary("log_softmax", {4, 8}, "aten::log_softmax.int", {0}, [](auto& a) { return at::log_softmax(a, 0); }));
  add(OpCase{"layer_norm", [] { return Tensors{T({2, 3, 8}), T({8}, 1), T({8}, 2)}; },
             [](Graph& g, const Nodes& x) {
               g.output(Arg::tuple({C(g, "aten::layer_norm", {x[0], Arg::ints({8}), x[1], x[2], 1e-5})}));
             },
             [](Tensors& in) { return Tensors{at::layer_norm(in[0], {8}, in[1], in[2], 1e-5)}; }});
  add(OpCase{"native_layer_norm", [] { return Tensors{T({2, 3, 8}), T({3, 8}, 1), T({3, 8}, 2)}; },
             [](Graph& g, const Nodes& x) {
               Node* ln = C(g, "aten::native_layer_norm", {x[0], Arg::ints({3, 8}), x[1], x[2], 1e-5});
               const OpInfo& gi = OpRegistry::instance().getitem();
               g.output(Arg::tuple({g.call(gi, {ln, 0}), g.call(gi, {ln, 1}), g.call(gi, {ln, 2})}));
             },
             [](Tensors& in) {
               auto [o, m, r] = at::native_layer_norm(in[0], {3, 8}, in[1], in[2], 1e-5);
               return Tensors{o, m, r};
             }});
  // ---- joining, indexing ----
  add(OpCase{"cat", [] { return Tensors{T({2, 8}), T({3, 8}, 1)}; },
             [](Graph& g, const Nodes& x) { g.output(Arg::tuple({C(g, "aten::cat", {Arg::list({x[0], x[1]}), 0})})); },
             [](Tensors& in) { return Tensors{at::cat({in[0], in[1]}, 0)}; }});
  add(OpCase{"stack", [] { return Tensors{T({2, 8}), T({2, 8}, 1)}; },
             [](Graph& g, const Nodes& x) { g.output(Arg::tuple({C(g, "aten::stack", {Arg::list({x[0], x[1]}), 1})})); },
             [](Tensors& in) { return Tensors{at::stack({in[0], in[1]}, 1)}; }});
  add(OpCase{"index_tensor", [] { return Tensors{T({5, 8}), Ints({4, 0, 2})}; },
             [](Graph& g, const Nodes& x) { g.output(Arg::tuple({C(g, "aten::index.Tensor", {x[0], Arg::list({x[1]})})})); },
             [](Tensors& in) { return Tensors{at::index(in[0], {c10::optional<at::Tensor>(in[1])})}; }});
  add(OpCase{"index_second_dim", [] { return Tensors{T({5, 8}), Ints({7, 1})}; },
             [](Graph& g, const Nodes& x) {
               g.output(Arg::tuple({C(g, "aten::index.Tensor", {x[0], Arg::list({Arg(), x[1]})})}));
             },
             [](Tensors& in) { return Tensors{at::index(in[0], {c10::nullopt, c10::optional<at::Tensor>(in[1])})}; }});
  add(binary("index_select", T({5, 8}), Ints({3, 3, 1}), "aten::index_select", {},
             [](auto& a, auto& i) { return at::index_select(a, 1, i); }));
  cases.back().build = [](Graph& g, const Nodes& x) { g.output(Arg::tuple({C(g, "aten::index_select", {x[0], 1, x[1]})})); };
  add(OpCase{"split_getitem", [] { return Tensors{T({4, 6})}; },
             [](Graph& g, const Nodes& x) {
               Node* s = C(g, "aten::split.Tensor", {x[0], 4, 1});
               const OpInfo& gi = OpRegistry::instance().getitem();
               g.output(Arg::tuple({g.call(gi, {s, 0}), g.call(gi, {s, 1})}));
             },
             [](Tensors& in) { return in[0].split(4, 1); }});
  // ---- in-place ----
  add(OpCase{"add_inplace_input", [] { return Tensors{T({4, 8}), T({4, 8}, 1)}; },
             [](Graph& g, const Nodes& x) {
               Node* a = C(g, "aten::add_.Tensor", {x[0], x[1]});
               g.output(Arg::tuple({a, C(g, "aten::mul.Tensor", {x[0], x[1]})}));
             },
             [](Tensors& in) {
               in[0].add_(in[1]);
               return Tensors{in[0], at::mul(in[0], in[1])};
             }});
  add(OpCase{"view_then_inplace", [] { return Tensors{T({4, 8})}; },
             [](Graph& g, const Nodes& x) {
               Node* v = C(g, "aten::view", {x[0], Arg::ints({-1})});
               Node* s = C(g, "aten::slice.Tensor", {v, 0, 0, 5});
               C(g, "aten::mul_.Scalar", {s, 10});
               g.output(Arg::tuple({x[0]}));
             },
             [](Tensors& in) {
               in[0].view({-1}).slice(0, 0, 5).mul_(10);
               return Tensors{in[0]};
             }});
  add(OpCase{"relu_on_clone", [] { return Tensors{T({3, 5})}; },
             [](Graph& g, const Nodes& x) {
               Node* c = C(g, "aten::clone", {x[0]});
               Node* r = C(g, "aten::relu_", {c});
               g.output(Arg::tuple({r, x[0]}));
             },
             [](Tensors& in) { return Tensors{at::relu(in[0]), in[0]}; }});
  add(OpCase{"copy_", [] { return Tensors{T({3, 5}), T({5}, 1)}; },
             [](Graph& g, const Nodes& x) {
               C(g, "aten::copy_", {x[0], x[1]});
               g.output(Arg::tuple({x[0]}));
             },
             [](Tensors& in) {
               in[0].copy_(in[1]);
               return Tensors{in[0]};
             }});
  return cases;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = make_cases();
  return cases;
}

std::unique_ptr<Graph> build_case(const OpCase& c, const std::vector<at::Tensor>& inputs) {
  auto g = std::make_unique<Graph>();
  std::vector<Node*> xs;
  for (size_t i = 0; i < inputs.size(); ++i) xs.push_back(input(*g, "x" + std::to_string(i), inputs[i]));
  c.build(*g, xs);
  return g;
}

}  // namespace tj::graph::testing
