// Standalone GEMM baselines for issue 41's "matmuls inside compiled graphs within 10 % of a standalone prepacked
// oneDNN primitive" goal: for one Linear shape (x [M, K] @ w [N, K]^T + bias, an optional gelu after it) times,
// in this process and on the calling thread's OpenMP team, OpenBLAS's cblas_sgemm (what eager's at::linear ends
// in on Debian's LibTorch), a oneDNN inner product and a oneDNN matmul, each with its weight reordered once into
// the layout the primitive picked (format_tag::any) and only `execute` timed. tests/bench/gemm_shapes.py runs it
// beside ATen's at::linear and a tracejit-compiled Linear of the same shape. Not part of the build (no test);
// built by hand:
//   g++ -O2 -std=c++20 tests/bench/gemm_primitives.cpp -o /tmp/gemm_primitives -ldnnl -l:libopenblas.so.0
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /tmp/gemm_primitives M K N [gelu] [reps] [fresh]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// The best and the median of `reps` timed calls of `f` (after 3 untimed ones), in milliseconds.
std::pair<double, double> time_ms(const std::function<void()>& f, int reps) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

void report(const char* what, std::pair<double, double> ms, double flop) {
  std::printf("%-36s best %8.3f ms  median %8.3f ms  %6.1f GFLOP/s (best)\n", what, ms.first, ms.second,
              flop / ms.first * 1e-6);
}

dnnl::primitive_attr gelu_attr(bool gelu) {
  dnnl::post_ops po;
  if (gelu) po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return attr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s M K N [gelu] [reps] [fresh]\n", argv[0]);
    return 2;
  }
  const int64_t m = std::atoll(argv[1]), k = std::atoll(argv[2]), n = std::atoll(argv[3]);
  const bool gelu = argc > 4 && std::string(argv[4]) == "gelu";
  const int reps = argc > 5 ? std::atoi(argv[5]) : 20;
  // "fresh": each call writes a newly allocated output (as an ATen op does: malloc, pages faulted in on first touch)
  const bool fresh = argc > 6 && std::string(argv[6]) == "fresh";
  const double flop = 2.0 * m * k * n;
  std::vector<float> x(m * k), w(n * k), b(n), y(m * n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919 % 1000) / 1000.0 - 0.5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 104729 % 1000) / 1000.0 - 0.5) * 0.05f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.01f * static_cast<float>(i % 7);
  std::printf("M %lld K %lld N %lld%s\n", static_cast<long long>(m), static_cast<long long>(k),
              static_cast<long long>(n), gelu ? " +gelu" : "");

  // OpenBLAS: y = x @ w^T, the bias broadcast first (as ATen's addmm does with beta 1)
  report("openblas sgemm (+bias)", time_ms([&] {
    for (int64_t r = 0; r < m; ++r) std::memcpy(&y[r * n], b.data(), n * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, x.data(), k, w.data(), k, 1.f, y.data(), n);
  }, reps), flop);

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  memory::desc src({m, k}, dt::f32, tag::ab), dst({m, n}, dt::f32, tag::ab), bmd({n}, dt::f32, tag::x);
  memory::desc w_plain({n, k}, dt::f32, tag::ab), w_any({n, k}, dt::f32, tag::any);
  memory xm(src, eng, x.data()), ym(dst, eng, y.data()), bm(bmd, eng, b.data()), wplain(w_plain, eng, w.data());
  {
    dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, src, w_any, bmd, dst);
    dnnl::inner_product_forward::primitive_desc pd(d, gelu_attr(gelu), eng);
    memory wp(pd.weights_desc(), eng);
    dnnl::reorder(wplain, wp).execute(s, wplain, wp);
    s.wait();
    dnnl::inner_product_forward prim(pd);
    std::string name = "onednn inner product (" + std::string(pd.impl_info_str()) + ")";
    report(name.c_str(), time_ms([&] {
      float* out = fresh ? static_cast<float*>(std::malloc(m * n * sizeof(float))) : y.data();
      prim.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wp}, {DNNL_ARG_BIAS, bm},
                       {DNNL_ARG_DST, memory(dst, eng, out)}});
      s.wait();
      if (fresh) std::free(out);
    }, reps), flop);
  }
  {
    // matmul's weights are [K, N]: w^T, any layout
    memory::desc wk_any({k, n}, dt::f32, tag::any), wk_plain({k, n}, dt::f32, tag::ba);
    memory::desc b2({1, n}, dt::f32, tag::ab);
    dnnl::matmul::desc d(src, wk_any, b2, dst);
    dnnl::matmul::primitive_desc pd(d, gelu_attr(gelu), eng);
    memory wsrc(wk_plain, eng, w.data()), wp(pd.weights_desc(), eng), bm2(b2, eng, b.data());
    dnnl::reorder(wsrc, wp).execute(s, wsrc, wp);
    s.wait();
    dnnl::matmul prim(pd);
    std::string name = "onednn matmul (" + std::string(pd.impl_info_str()) + ")";
    report(name.c_str(), time_ms([&] {
      prim.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wp}, {DNNL_ARG_BIAS, bm2}, {DNNL_ARG_DST, ym}});
      s.wait();
    }, reps), flop);
  }
  return 0;
}
