// Helpers for the AOT tests: graphs from a terse text, a functional backend
// that interprets graphs op by op, and the comparison of a compiled call
// with running the captured graph eagerly (graph::interpret_tensors): values,
// sizes/strides/offsets, aliasing between inputs and outputs (same tensor,
// same storage, same data_ptr, `_base`), input values and `_version`.
#pragma once

#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "graph/interpreter.h"
#include "graph/printer.h"
#include "graph/text_format.h"
#include "compile/aot/runtime_wrapper.h"

namespace tj::jit::testing {

// Lines: `in x y` (placeholders), `name = aten.op.overload(args)`,
// `ret (a, b)`.
inline std::shared_ptr<const graph::Graph> graph_of(const std::string& terse) {
  std::ostringstream text;
  text << "graph():\n";
  std::istringstream lines(terse);
  std::string line;
  while (std::getline(lines, line)) {
    size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    line = line.substr(start);
    if (line.rfind("in ", 0) == 0) {
      std::istringstream names(line.substr(3));
      std::string name;
      while (names >> name) text << "    %" << name << " : ? = placeholder[target=" << name << "]\n";
    } else if (line.rfind("ret ", 0) == 0) {
      text << "    return " << line.substr(4) << "\n";
    } else {
      size_t eq = line.find(" = ");
      size_t paren = line.find('(', eq);
      std::string name = line.substr(0, eq), target = line.substr(eq + 3, paren - eq - 3);
      std::string args = line.substr(paren + 1, line.rfind(')') - paren - 1);
      text << "    %" << name << " : ? = call_function[target=" << target << "](args = (" << args
           << (args.find(',') == std::string::npos ? ",)" : ")") << ")\n";
    }
  }
  auto g = graph::parse_graph(text.str());
  if (!g.ok()) throw std::runtime_error(g.error().message + "\n" + text.str());
  return std::shared_ptr<const graph::Graph>(std::move(*g));
}

// A functional backend that runs the graph op by op; `fuses_pointwise`
// pretends it fuses (AOT then recomputes cheap ops in the backward).
inline Backend interpreter_backend(bool fuses_pointwise = false) {
  Backend b;
  b.name = "test_interpreter";
  b.functional = true;
  b.fuses_pointwise = fuses_pointwise;
  b.compile = [](std::shared_ptr<const graph::Graph> g,
                 const std::vector<graph::TensorMeta>&) -> Expected<CompiledFn> {
    return CompiledFn([g](c10::ArrayRef<at::Tensor> in) {
      auto r = graph::interpret_tensors(*g, in.vec());
      TORCH_CHECK(r.ok(), r.ok() ? "" : r.error().message);
      return std::move(*r);
    });
  };
  return b;
}

using Inputs = std::function<std::vector<at::Tensor>()>;

inline bool shares(const at::Tensor& a, const at::Tensor& b) {
  return a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage());
}

inline void expect_like(const at::Tensor& e, const at::Tensor& c, const std::string& what) {
  ASSERT_EQ(e.defined(), c.defined()) << what;
  if (!e.defined()) return;
  EXPECT_EQ(e.sizes(), c.sizes()) << what;
  EXPECT_EQ(e.strides(), c.strides()) << what;
  EXPECT_EQ(e.storage_offset(), c.storage_offset()) << what;
  EXPECT_EQ(e.scalar_type(), c.scalar_type()) << what;
  EXPECT_EQ(e.requires_grad(), c.requires_grad()) << what;
  if (e.sizes() == c.sizes() && e.scalar_type() == c.scalar_type()) {
    if (at::isFloatingType(e.scalar_type()))
      EXPECT_TRUE(at::allclose(e.detach(), c.detach(), 1e-5, 1e-6)) << what << "\neager:\n" << e << "\ncompiled:\n" << c;
    else
      EXPECT_TRUE(at::equal(e, c)) << what;
  }
}

// Compares the worlds after an eager and a compiled call.
inline void expect_same_world(const std::vector<at::Tensor>& in_e, const std::vector<at::Tensor>& out_e,
                              const std::vector<at::Tensor>& in_c, const std::vector<at::Tensor>& out_c) {
  ASSERT_EQ(out_e.size(), out_c.size());
  for (size_t k = 0; k < out_e.size(); ++k) {
    std::string o = "output " + std::to_string(k);
    expect_like(out_e[k], out_c[k], o);
    for (size_t i = 0; i < in_e.size(); ++i) {
      std::string oi = o + " vs input " + std::to_string(i);
      EXPECT_EQ(out_e[k].is_same(in_e[i]), out_c[k].is_same(in_c[i])) << oi << ": same tensor";
      EXPECT_EQ(shares(out_e[k], in_e[i]), shares(out_c[k], in_c[i])) << oi << ": same storage";
      EXPECT_EQ(out_e[k].data_ptr() == in_e[i].data_ptr(), out_c[k].data_ptr() == in_c[i].data_ptr()) << oi;
    }
    for (size_t j = 0; j < k; ++j) {
      std::string oj = o + " vs output " + std::to_string(j);
      EXPECT_EQ(out_e[k].is_same(out_e[j]), out_c[k].is_same(out_c[j])) << oj << ": same tensor";
      EXPECT_EQ(shares(out_e[k], out_e[j]), shares(out_c[k], out_c[j])) << oj << ": same storage";
    }
    EXPECT_EQ(out_e[k].is_view(), out_c[k].is_view()) << o << ": is a view";
    if (out_e[k].is_view() && out_c[k].is_view()) {
      const at::TensorBase& be = out_e[k]._base();
      const at::TensorBase& bc = out_c[k]._base();
      EXPECT_EQ(be.sizes(), bc.sizes()) << o << ": _base sizes";
      for (size_t i = 0; i < in_e.size(); ++i)
        EXPECT_EQ(be.is_same(in_e[i]), bc.is_same(in_c[i])) << o << ": _base is input " << i;
      for (size_t j = 0; j < out_e.size(); ++j)
        EXPECT_EQ(be.is_same(out_e[j]), bc.is_same(out_c[j])) << o << ": _base is output " << j;
    }
  }
  ASSERT_EQ(in_e.size(), in_c.size());
  for (size_t i = 0; i < in_e.size(); ++i) {
    std::string w = "input " + std::to_string(i) + " after the call";
    expect_like(in_e[i], in_c[i], w);
    EXPECT_EQ(in_e[i]._version(), in_c[i]._version()) << w << ": _version";
  }
}

// Compiles `g` for inputs from `make` (grad mode as given), calls it twice on
// fresh inputs and compares each call with eager. Returns the AOT summary.
inline std::string check_against_eager(const std::shared_ptr<const graph::Graph>& g, const Inputs& make,
                                       bool grad_enabled = false) {
  at::AutoGradMode grad(grad_enabled);
  AotGraphs graphs;
  std::vector<at::Tensor> examples = make();
  auto fn = aot_compile(g, examples, interpreter_backend(), AotOptions{grad_enabled}, &graphs);
  EXPECT_TRUE(fn.ok()) << (fn.ok() ? "" : fn.error().message);
  if (!fn.ok()) return "";
  for (int call = 0; call < 2; ++call) {
    std::vector<at::Tensor> in_e = make(), in_c = make();
    auto out_e = graph::interpret_tensors(*g, in_e);
    EXPECT_TRUE(out_e.ok()) << (out_e.ok() ? "" : out_e.error().message);
    if (!out_e.ok()) return "";
    std::vector<at::Tensor> out_c = (*fn)(in_c);
    SCOPED_TRACE("call " + std::to_string(call) + "\n" + graphs.summary + "\nforward:\n" +
                 graph::print_graph(*graphs.forward));
    expect_same_world(in_e, *out_e, in_c, out_c);
  }
  return graphs.summary;
}

}  // namespace tj::jit::testing
