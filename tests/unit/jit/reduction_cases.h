// The reductions the llvm backend fuses, as graph bodies over one input,
// inputs of every layout they are tested on, and pointwise chains: shared
// by the llvm backend's tests and the nvrtc backend's emulated kernels.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "llvm_test_util.h"

namespace tj::jit::test_util {

using Make = std::function<Node*(Graph&, Node*)>;

struct Reduction {
  std::string name;
  Make make;
  bool floats_only = false;
};

inline Arg ints(std::vector<int64_t> v) {
  std::vector<Arg> items(v.begin(), v.end());
  return Arg::list(items);
}

inline Make call(const char* name, std::vector<Arg> extra, std::vector<Kwarg> kwargs = {}) {
  return [=](Graph& g, Node* x) {
    std::vector<Arg> args = {x};
    for (const Arg& a : extra) args.push_back(a);
    return g.call(op(name), args, kwargs);
  };
}

// getitem(native_layer_norm(x, [last dim], w?, b?, eps), i); w and b are made from x's last row
inline Make layer_norm(int result, bool affine) {
  return [=](Graph& g, Node* x) -> Node* {
    const auto& sizes = x->meta().tensor()->sizes;
    int64_t last = sizes.empty() ? 1 : sizes.back();
    Arg w, b;
    if (affine) {
      Node* row = g.call(op("aten::ones"), {ints({last})}, {{"dtype", x->meta().tensor()->dtype}});
      w = g.call(op("aten::mul.Tensor"), {row, 1.5});
      b = g.call(op("aten::add.Tensor"), {row, -0.25});
    }
    Node* ln = g.call(op("aten::native_layer_norm"), {x, ints({last}), w, b, 1e-5});
    return g.call(graph::OpRegistry::instance().getitem(), {ln, int64_t{result}});
  };
}

// _softmax_backward_data / _log_softmax_backward_data(x, y, dim, x's dtype), y = sigmoid(x) (softmax: values
// in (0, 1)) or x * 0.25 - 1 (log_softmax: mostly negative)
inline Make softmax_backward(const char* name, int64_t dim) {
  return [=](Graph& g, Node* x) -> Node* {
    const bool log = std::string(name).find("log") != std::string::npos;
    Node* y = log ? g.call(op("aten::sub.Tensor"), {g.call(op("aten::mul.Tensor"), {x, 0.25}), 1.0})
                  : g.call(op("aten::sigmoid"), {x});
    return g.call(op(name), {x, y, dim, x->meta().tensor()->dtype});
  };
}

inline std::vector<Reduction> reductions() {
  std::vector<Reduction> out;
  out.push_back({"sum last", call("aten::sum.dim_IntList", {ints({-1})})});
  out.push_back({"sum first keepdim", call("aten::sum.dim_IntList", {ints({0}), true})});
  out.push_back({"sum all", call("aten::sum", {})});
  out.push_back({"sum to double", call("aten::sum.dim_IntList", {ints({1})}, {{"dtype", at::kDouble}})});
  out.push_back({"mean last", call("aten::mean.dim", {ints({-1})}), true});
  out.push_back({"mean all", call("aten::mean", {}), true});
  out.push_back({"amax last", call("aten::amax", {ints({1})})});
  out.push_back({"amin first keepdim", call("aten::amin", {ints({0}), true})});
  out.push_back({"argmax last", call("aten::argmax", {int64_t{1}})});
  out.push_back({"argmin first keepdim", call("aten::argmin", {int64_t{0}, true})});
  out.push_back({"argmax flat", call("aten::argmax", {})});
  out.push_back({"var last", call("aten::var.correction", {ints({-1})}, {{"correction", int64_t{1}}}), true});
  out.push_back({"var first population", call("aten::var.correction", {ints({0})}, {{"correction", int64_t{0}}}), true});
  out.push_back({"std keepdim", call("aten::std.correction", {ints({1})}, {{"correction", int64_t{1}}, {"keepdim", true}}), true});
  out.push_back({"softmax last", call("aten::_softmax", {int64_t{-1}, false}), true});
  out.push_back({"softmax first", call("aten::_softmax", {int64_t{0}, false}), true});
  out.push_back({"log_softmax last", call("aten::_log_softmax", {int64_t{1}, false}), true});
  out.push_back({"layer_norm", layer_norm(0, true), true});
  out.push_back({"layer_norm plain", layer_norm(0, false), true});
  out.push_back({"layer_norm mean", layer_norm(1, true), true});
  out.push_back({"layer_norm rstd", layer_norm(2, false), true});
  // the backward of (log_)softmax: x as the gradient, a pointwise function of x as the forward's output
  out.push_back({"softmax backward last", softmax_backward("aten::_softmax_backward_data", -1), true});
  out.push_back({"log_softmax backward last", softmax_backward("aten::_log_softmax_backward_data", 1), true});
  out.push_back({"log_softmax backward first", softmax_backward("aten::_log_softmax_backward_data", 0), true});
  return out;
}

// Inputs of every kind the kernels take; `nan_rows` puts NaN and inf in the first rows.
inline at::Tensor input(const std::string& layout, c10::ScalarType t) {
  if (layout == "contiguous") return values({6, 7}, t);
  if (layout == "transposed") return values({7, 6}, t).t();
  if (layout == "sliced") return values({8, 16}, t).slice(0, 1, 7).slice(1, 0, 14, 2);
  if (layout == "3d") return values({3, 4, 5}, t);
  if (layout == "3d permuted") return values({5, 3, 4}, t).permute({1, 2, 0});
  if (layout == "no rows") return values({0, 7}, t);
  if (layout == "empty rows") return values({6, 0}, t);
  if (layout == "nan rows") {
    at::Tensor x = values({6, 7}, t);
    if (at::isFloatingType(t)) {
      x[0][3] = NAN;
      x[1][2] = INFINITY;
      x[2][5] = -INFINITY;
      x[3].fill_(-INFINITY);
    }
    return x;
  }
  throw std::runtime_error("layout " + layout);
}

inline const std::vector<std::string> kInputs = {"contiguous", "transposed", "sliced",     "3d",
                                          "3d permuted", "no rows",   "empty rows", "nan rows"};

inline Node* call2(Graph& g, const char* name, Arg a, Arg b) { return g.call(op(name), {a, b}); }

// A chain of pointwise ops of every family: arithmetic with promotion and
// a Python scalar, comparisons, where, maximum (NaN), abs, neg.
inline std::vector<Node*> chain(Graph& g, const std::vector<Node*>& x) {
  Node* a = call2(g, "aten::add.Tensor", x[0], x[1]);
  Node* b = call2(g, "aten::mul.Tensor", a, 3);
  Node* gt = call2(g, "aten::gt.Tensor", b, x[1]);
  Node* w = g.call(op("aten::where.self"), {gt, b, x[0]});
  Node* m = call2(g, "aten::maximum", w, x[1]);
  Node* ab = g.call(op("aten::abs"), {m});
  Node* neg = g.call(op("aten::neg"), {ab});
  return {m, ab, neg, gt};
}

// Transcendental functions of floats (the backends' math libraries).
inline std::vector<Node*> transcendental(Graph& g, const std::vector<Node*>& x) {
  Node* s = g.call(op("aten::sin"), {x[0]});
  Node* e = g.call(op("aten::exp"), {s});
  Node* t = g.call(op("aten::tanh"), {call2(g, "aten::mul.Tensor", e, x[1])});
  Node* sg = g.call(op("aten::sigmoid"), {t});
  Node* r = g.call(op("aten::rsqrt"), {call2(g, "aten::add.Tensor", sg, 1.0)});
  return {r, g.call(op("aten::erf"), {x[1]}), g.call(op("aten::relu"), {x[0]})};
}

inline Body single(const Make& make) {
  return [make](Graph& g, const std::vector<Node*>& x) { return std::vector<Node*>{make(g, x[0])}; };
}


}  // namespace tj::jit::test_util
