// Winograd's F(4x4, 3x3) of our own where oneDNN has none (see onednn_f43.h).
#include "jit/onednn_f43.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <unordered_map>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "jit/onednn_memory.h"

namespace tj::jit::onednn {

using dnnl::memory;

namespace {

// The loops over a block of channels vectorize; built for AVX2 and for the baseline, picked at load time.
#define TJ_F43_CLONES __attribute__((target_clones("avx2", "default")))

constexpr int64_t kBlock = 16;  // channels a tile's transform works on at once
constexpr float kRoot2 = 1.41421356237309515f;

// Copies n <= kBlock floats; the loops of a whole block have a constant count (GCC's -O2 vectorizes only those).
__attribute__((always_inline)) inline void copy_block(float* to, const float* from, int64_t n) {
  if (n == kBlock) {
    for (int64_t c = 0; c < kBlock; ++c) to[c] = from[c];
  } else {
    for (int64_t c = 0; c < n; ++c) to[c] = from[c];
  }
}

struct Geometry {
  int64_t n, c, h, w, k, oh, ow, th, tw, tiles, pad_t, pad_l;
};

Geometry geometry_of(const Plan& p, const at::Tensor& x, const at::Tensor& dst) {
  Geometry g{};
  g.n = x.size(0);
  g.c = x.size(1);
  g.h = x.size(2);
  g.w = x.size(3);
  g.k = dst.size(1);
  g.oh = dst.size(2);
  g.ow = dst.size(3);
  g.th = (g.oh + 3) / 4;
  g.tw = (g.ow + 3) / 4;
  g.tiles = g.n * g.th * g.tw;
  g.pad_t = p.padding[0];
  g.pad_l = p.padding[1];
  return g;
}

// The post-ops in order, as run_f43 applies them to each output pixel's channels.
struct Post {
  enum class Op { relu, leaky, clamp, scale, sum } op;
  float a = 0, b = 0;
};

// Input tiles [t0, t1) of the pass over [base, base + count): v[(ij * count + t - base) * C + c] = (Bᵀ d B)[i][j]
// of the 6x6 window at tile t's origin.
TJ_F43_CLONES void input_tiles(const Geometry& g, const float* x, float* v, int64_t base, int64_t count, int64_t t0,
                               int64_t t1) {
  float d[6][6][kBlock] = {}, r[6][6][kBlock];
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t n = t / (g.th * g.tw), ty = t / g.tw % g.th, tx = t % g.tw;
    const int64_t h0 = ty * 4 - g.pad_t, w0 = tx * 4 - g.pad_l;
    for (int64_t c0 = 0; c0 < g.c; c0 += kBlock) {
      const int64_t cb = std::min(kBlock, g.c - c0);
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 6; ++j) {
          const int64_t hh = h0 + i, ww = w0 + j;
          if (hh < 0 || hh >= g.h || ww < 0 || ww >= g.w) {
            std::fill(d[i][j], d[i][j] + kBlock, 0.f);
          } else {
            copy_block(d[i][j], x + ((n * g.h + hh) * g.w + ww) * g.c + c0, cb);
          }
        }
      for (int64_t j = 0; j < 6; ++j)  // Bᵀ d: along the rows
        for (int64_t c = 0; c < kBlock; ++c) {
          const float z0 = d[0][j][c], z1 = d[1][j][c], z2 = d[2][j][c], z3 = d[3][j][c], z4 = d[4][j][c],
                      z5 = d[5][j][c];
          const float a = z4 - 2 * z2, b = kRoot2 * z3 * 0.5f - kRoot2 * z1, e = z4 - 0.5f * z2,
                      f = kRoot2 * z3 - kRoot2 * z1 * 0.5f;
          r[0][j][c] = z0 - 2.5f * z2 + z4;
          r[1][j][c] = a + b;
          r[2][j][c] = a - b;
          r[3][j][c] = e + f;
          r[4][j][c] = e - f;
          r[5][j][c] = z1 - 2.5f * z3 + z5;
        }
      for (int64_t i = 0; i < 6; ++i) {  // (Bᵀ d) B: along the columns
        float out[6][kBlock];
        for (int64_t c = 0; c < kBlock; ++c) {
          const float z0 = r[i][0][c], z1 = r[i][1][c], z2 = r[i][2][c], z3 = r[i][3][c], z4 = r[i][4][c],
                      z5 = r[i][5][c];
          const float a = z4 - 2 * z2, b = kRoot2 * z3 * 0.5f - kRoot2 * z1, e = z4 - 0.5f * z2,
                      f = kRoot2 * z3 - kRoot2 * z1 * 0.5f;
          out[0][c] = z0 - 2.5f * z2 + z4;
          out[1][c] = a + b;
          out[2][c] = a - b;
          out[3][c] = e + f;
          out[4][c] = e - f;
          out[5][c] = z1 - 2.5f * z3 + z5;
        }
        for (int64_t j = 0; j < 6; ++j) copy_block(v + ((i * 6 + j) * count + t - base) * g.c + c0, out[j], cb);
      }
    }
  }
}

// Applies the post-ops to a block of channels of one output pixel (`res`: the residual's, or null).
__attribute__((always_inline)) inline void apply_post(const std::vector<Post>& post, float* y, const float* res) {
  for (const Post& q : post) {
    switch (q.op) {
      case Post::Op::relu: for (int64_t c = 0; c < kBlock; ++c) y[c] = y[c] > 0.f ? y[c] : 0.f; break;
      case Post::Op::leaky: for (int64_t c = 0; c < kBlock; ++c) y[c] = y[c] > 0.f ? y[c] : y[c] * q.a; break;
      case Post::Op::clamp: for (int64_t c = 0; c < kBlock; ++c) y[c] = std::min(std::max(y[c], q.a), q.b); break;
      case Post::Op::scale: for (int64_t c = 0; c < kBlock; ++c) y[c] *= q.a; break;
      case Post::Op::sum: for (int64_t c = 0; c < kBlock; ++c) y[c] += q.a * res[c]; break;
    }
  }
}

// Output tiles [t0, t1): Aᵀ m A of the 36 products, plus the bias and the post-ops, into y (channels-last).
TJ_F43_CLONES void output_tiles(const Geometry& g, const float* m, int64_t base, int64_t count, const float* bias,
                                const std::vector<Post>& post, const float* res, float* y, int64_t t0, int64_t t1) {
  float a[6][4][kBlock] = {}, o[4][4][kBlock], bias_block[kBlock] = {}, res_block[kBlock] = {};
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t n = t / (g.th * g.tw), ty = t / g.tw % g.th, tx = t % g.tw;
    for (int64_t k0 = 0; k0 < g.k; k0 += kBlock) {
      const int64_t kb = std::min(kBlock, g.k - k0);
      if (bias) copy_block(bias_block, bias + k0, kb);
      for (int64_t j = 0; j < 6; ++j) {  // Aᵀ m: along the rows
        float in[6][kBlock];
        for (int64_t i = 0; i < 6; ++i) copy_block(in[i], m + ((i * 6 + j) * count + t - base) * g.k + k0, kb);
        for (int64_t c = 0; c < kBlock; ++c) {
          const float z0 = in[0][c], z1 = in[1][c], z2 = in[2][c], z3 = in[3][c], z4 = in[4][c], z5 = in[5][c];
          const float p = z1 + z2, q = z1 - z2, u = z3 + z4, w = z3 - z4;
          a[j][0][c] = z0 + p + u;
          a[j][1][c] = kRoot2 * (0.5f * q + w);
          a[j][2][c] = 0.5f * p + 2 * u;
          a[j][3][c] = kRoot2 * (0.25f * q + 2 * w) + z5;
        }
      }
      for (int64_t r = 0; r < 4; ++r)  // (Aᵀ m) A: along the columns, plus the bias
        for (int64_t c = 0; c < kBlock; ++c) {
          const float z0 = a[0][r][c], z1 = a[1][r][c], z2 = a[2][r][c], z3 = a[3][r][c], z4 = a[4][r][c],
                      z5 = a[5][r][c];
          const float b = bias_block[c];
          const float p = z1 + z2, q = z1 - z2, u = z3 + z4, w = z3 - z4;
          o[r][0][c] = z0 + p + u + b;
          o[r][1][c] = kRoot2 * (0.5f * q + w) + b;
          o[r][2][c] = 0.5f * p + 2 * u + b;
          o[r][3][c] = kRoot2 * (0.25f * q + 2 * w) + z5 + b;
        }
      for (int64_t r = 0; r < 4 && ty * 4 + r < g.oh; ++r)
        for (int64_t s = 0; s < 4 && tx * 4 + s < g.ow; ++s) {
          const int64_t at = ((n * g.oh + ty * 4 + r) * g.ow + tx * 4 + s) * g.k + k0;
          // the post-ops before the write: the residual may be `y` itself (the sum in place)
          if (res) copy_block(res_block, res + at, kb);
          if (!post.empty()) apply_post(post, o[r][s], res_block);
          copy_block(y + at, o[r][s], kb);
        }
    }
  }
}

std::vector<Post> post_of(const Plan& p) {
  std::vector<Post> out;
  for (const PostOp& q : p.post) {
    const float a = static_cast<float>(q.alpha), b = static_cast<float>(q.beta);
    if (q.kind == PostOp::Kind::sum) out.push_back({Post::Op::sum, a});
    else if (q.alg == Eltwise::relu) out.push_back({Post::Op::relu});
    else if (q.alg == Eltwise::leaky_relu) out.push_back({Post::Op::leaky, a});
    else if (q.alg == Eltwise::clamp) out.push_back({Post::Op::clamp, a, b});
    else out.push_back({Post::Op::scale, a});  // f43_takes admits nothing else
  }
  return out;
}

// The batched matmul [36, T, C] x [36, C, K], one primitive per shape (a handle: copies share it).
dnnl::matmul matmul_for(int64_t tiles, int64_t c, int64_t k) {
  static std::mutex mutex;
  static std::unordered_map<std::string, dnnl::matmul> cache;
  const std::string key = std::to_string(tiles) + "," + std::to_string(c) + "," + std::to_string(k);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() > 256) cache.clear();  // shapes of programs long gone
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  memory::desc src({36, tiles, c}, f32, tag::abc), wei({36, c, k}, f32, tag::abc), dst({36, tiles, k}, f32, tag::abc);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine());
  return cache.emplace(key, dnnl::matmul(pd)).first->second;
}

}  // namespace

bool f43_takes(const Plan& p) {
  for (const PostOp& q : p.post) {
    if (q.kind == PostOp::Kind::sum) continue;
    if (q.kind != PostOp::Kind::eltwise) return false;
    if (q.alg != Eltwise::relu && q.alg != Eltwise::leaky_relu && q.alg != Eltwise::clamp &&
        q.alg != Eltwise::scale)
      return false;
  }
  return p.padding.size() == 2;
}

memory::desc f43_weight_md(const at::Tensor& w) {
  return memory::desc({36, w.size(1), w.size(0)}, memory::data_type::f32, memory::format_tag::abc);
}

void f43_transform_weight(const at::Tensor& w_in, float* out) {
  const at::Tensor w = w_in.contiguous();
  const float* g = w.data_ptr<float>();
  const int64_t k_count = w.size(0), c_count = w.size(1);
  // G (6x3): the rows that turn 3 taps into 6 (the points 0, ±√2/2, ±√2, ∞)
  const double r2 = std::sqrt(2.0);
  const double G[6][3] = {{1, 0, 0},         {-2. / 3, -r2 / 3, -1. / 3}, {-2. / 3, r2 / 3, -1. / 3},
                          {1. / 6, r2 / 6, 1. / 3}, {1. / 6, -r2 / 6, 1. / 3}, {0, 0, 1}};
  at::parallel_for(0, k_count, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k)
      for (int64_t c = 0; c < c_count; ++c) {
        const float* tap = g + (k * c_count + c) * 9;
        double gg[6][3];  // G g
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 3; ++j) gg[i][j] = G[i][0] * tap[j] + G[i][1] * tap[3 + j] + G[i][2] * tap[6 + j];
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 6; ++j)
            out[((i * 6 + j) * c_count + c) * k_count + k] =
                static_cast<float>(gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2]);
      }
  });
}

// Tiles per pass: the pass's transformed tiles and products (36 x tiles x (C + K) floats) near 2 MB, so that they
// stay in cache between the transforms and the matmul; at least 128 (a matmul of fewer rows is slow). Each pass
// reads the whole transformed weight: one over 4 MB (256 channels in and out) is read once, in one pass.
int64_t tiles_per_pass(const Geometry& g) {
  if (36 * 4 * g.c * g.k > (int64_t{4} << 20)) return g.tiles;
  const int64_t fit = (int64_t{2} << 20) / (36 * 4 * (g.c + g.k));
  return std::min(g.tiles, std::max<int64_t>(128, fit));
}

void run_f43(const Plan& p, const at::Tensor& x, const float* u, const float* bias, const at::Tensor* residual,
             const at::Tensor& dst) {
  RECORD_FUNCTION("tj::onednn winograd f43", c10::ArrayRef<const c10::IValue>{});
  const Geometry g = geometry_of(p, x, dst);
  const int64_t per_pass = tiles_per_pass(g);
  // the transformed tiles and their products of a pass: per thread, grown as needed (no page faults per call)
  thread_local std::vector<float> v_buffer, m_buffer;
  v_buffer.resize(std::max<size_t>(v_buffer.size(), static_cast<size_t>(36 * per_pass * g.c)));
  m_buffer.resize(std::max<size_t>(m_buffer.size(), static_cast<size_t>(36 * per_pass * g.k)));
  float *v = v_buffer.data(), *m = m_buffer.data();
  const float* xp = x.data_ptr<float>();
  const std::vector<Post> post = post_of(p);
  const float* res = residual ? residual->data_ptr<float>() : nullptr;
  float* y = dst.data_ptr<float>();
  dnnl::stream s(engine());
  const auto f32 = memory::data_type::f32;
  const auto abc = memory::format_tag::abc;
  memory wei(memory::desc({36, g.c, g.k}, f32, abc), engine(), const_cast<float*>(u));
  for (int64_t base = 0; base < g.tiles; base += per_pass) {
    const int64_t count = std::min(per_pass, g.tiles - base);
    at::parallel_for(base, base + count, 8,
                     [&](int64_t t0, int64_t t1) { input_tiles(g, xp, v, base, count, t0, t1); });
    matmul_for(count, g.c, g.k)
        .execute(s, {{DNNL_ARG_SRC, memory(memory::desc({36, count, g.c}, f32, abc), engine(), v)},
                     {DNNL_ARG_WEIGHTS, wei},
                     {DNNL_ARG_DST, memory(memory::desc({36, count, g.k}, f32, abc), engine(), m)}});
    s.wait();
    at::parallel_for(base, base + count, 8, [&](int64_t t0, int64_t t1) {
      output_tiles(g, m, base, count, bias, post, res, y, t0, t1);
    });
  }
}

}  // namespace tj::jit::onednn
