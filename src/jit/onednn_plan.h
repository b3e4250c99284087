// oneDNN steps of the llvm backend, as the lowering sees them: which graph
// nodes one oneDNN primitive computes. A head (`aten::convolution`, 1-d to
// 3-d, grouped, dilated, transposed; a float32 Linear `addmm(b, x, w.t())`
// / `mm(x, w)` on a weight the graph takes as input) and the chain of
// single-use nodes after it that oneDNN applies as post-ops: relu,
// leaky_relu, gelu, silu, sigmoid, tanh, hardswish, hardsigmoid, elu,
// clamp/hardtanh, a multiplication by a number (a scale) and the addition
// of a residual tensor of the output's shape (oneDNN's sum post-op). The
// step runs where the chain's last node was; every node it absorbs keeps
// its place in `members`, so that a case oneDNN refuses at run time runs
// those nodes as ATen ops (onednn_exec.h runs the step).
//
// Batched matmuls (bmm, baddbmm) and their post-ops: onednn_matmul.h.
//
// This header does not include oneDNN: the lowering only plans.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"

namespace tj::jit::onednn {

// TRACEJIT_ONEDNN (environment, read once): "0" turns oneDNN steps off;
// they are on otherwise. `set_enabled` is for tests. "all": in training
// graphs too (`in_training`; off by default: see llvm_backend.cpp's
// lowering_options for why).
bool enabled();
void set_enabled(bool on);
bool in_training();

// Whether Linears (addmm/mm) become oneDNN inner-product steps. oneDNN 2.6
// beats the BLAS ATen calls only with its brgemm kernels (AVX-512); on an
// AVX2-only CPU its inner product is its own sgemm (`gemm:jit`), measured
// at 0.5-0.8x of ATen's addmm on OpenBLAS (AMD Zen 3, one thread, [64,512]
// x [512,512] and [256,1024] x [1024,1024]), so there Linears stay ATen's
// (their epilogues still fuse into llvm kernels); all but tall, shallow
// ones (rows >= kShallowRows, depth K <= kShallowDepth: convnext's first
// stage, [25088, 96] x [96, 384]), on which OpenBLAS's sgemm runs at ~17
// GFLOP/s and oneDNN's at ~35 with the gelu as a post-op (session 21,
// docs/benchmarks.md). `auto_` asks oneDNN once which implementation it
// picks; TRACEJIT_ONEDNN_LINEAR=1/0 (environment, read once) or
// set_linear_mode (tests) forces it.
enum class LinearMode { auto_, always, never };
inline constexpr int64_t kShallowRows = 4096, kShallowDepth = 128;
// Whether a Linear of `rows` x `depth` (input) becomes a oneDNN step.
bool linears_enabled(int64_t rows, int64_t depth);
void set_linear_mode(LinearMode mode);
// The mode in force: set_linear_mode's, else TRACEJIT_ONEDNN_LINEAR's.
LinearMode linear_mode();
// set_linear_mode for a scope (tests): the mode in force before comes back
// at its end, also when a test's ASSERT returns early.
class ScopedLinearMode {
 public:
  explicit ScopedLinearMode(LinearMode mode) : before_(linear_mode()) { set_linear_mode(mode); }
  ~ScopedLinearMode() { set_linear_mode(before_); }
  ScopedLinearMode(const ScopedLinearMode&) = delete;
  ScopedLinearMode& operator=(const ScopedLinearMode&) = delete;

 private:
  LinearMode before_;
};
// The implementation oneDNN picks for a float32 [64,512] x [512,512]
// inner product on this CPU (impl_info_str, e.g. "brgemm:avx512_core" or
// "x64:gemm:jit"); empty when oneDNN fails to build one.
std::string inner_product_impl();

enum class Eltwise { relu, leaky_relu, gelu_erf, gelu_tanh, silu, sigmoid, tanh, hardswish, hardsigmoid, elu, clamp,
                     scale };

struct PostOp {
  // binary_mul / binary_add: by a tensor broadcast along the output's channels
  // (conv: dim 1, linear: the last dim), e.g. an inference batch norm's
  // decomposed scale and shift (graph/passes/decompose.cpp)
  enum class Kind { eltwise, sum, binary_mul, binary_add } kind = Kind::eltwise;
  Eltwise alg = Eltwise::relu;
  // leaky_relu: slope; elu: alpha; clamp: lower, upper bound; scale: the factor; sum: the residual's factor
  double alpha = 0, beta = 0;
  int operand = -1;  // binary: its index in Match::reads
};

struct Plan {
  // pool: max or average pooling (onednn_pool.h), `kernel`, `stride`, `padding` (left), `padding_r`, `dilation`
  enum class Op { conv, linear, matmul, pool } op = Op::conv;
  // pool: which (avg_pool2d's count_include_pad: whether the padding counts in the divisor)
  enum class Pool { max, avg_include_pad, avg_exclude_pad } pool = Pool::max;
  std::vector<int64_t> kernel, padding_r, pool_input;  // pool_input: the input's sizes it was planned for
  // conv: aten::convolution's arguments
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
  bool has_bias = false;
  bool has_residual = false;
  // the weight is a graph input (a parameter): its reordered copy is cached
  bool cache_weight = false;
  // ... and a frozen constant (jit/frozen_constants.h, its placeholder's tag "frozen_constant"): never written
  bool frozen_weight = false;
  // linear: the weight read is the [K, N] operand of mm (w.t() of a [N, K] parameter or not)
  std::vector<PostOp> post;
  // matmul: the sizes of the view after it that splits the batch into dims (empty: none; onednn_matmul.h);
  // linear: the sizes of the view of its [M, N] as [..., N] (a Linear on a 3-d input) that the post-ops after
  // it read (only elementwise ones): the step's value has these sizes
  std::vector<int64_t> out_view;
  // matmul: a permutation of the viewed output written contiguous (`transpose`/`permute` then
  // `clone(memory_format=contiguous)`: attention's heads merged back); empty: none
  std::vector<int64_t> out_perm;
  // matmul: operand 0 (a) and 1 (b) read through their strides as a head split: non-empty, the operand bmm
  // reads is `view(clone(s, memory_format=contiguous), sizes)` of a tensor s of the output's rank (attention's
  // q, k, v: [B, H, T, D] views of one projection), and these are the view's sizes; the step reads s itself, so
  // the clone (a copy) is never made. Empty: bmm's own operand (onednn_matmul.h).
  std::vector<int64_t> a_view, b_view;
  // conv, pool: the result stays channels-last (onednn_layout.h: every reader a oneDNN step or an llvm kernel);
  // else eager's strides
  bool keep_channels_last = false;
  // ... and an llvm kernel reads it too (onednn_layout.h): its values are written when made (a Winograd result
  // is not left pending in its blocked twin, onednn_winograd.h)
  bool kernels_read = false;
  // conv/linear with a residual: this step is the residual's last reader (lowering.cpp's plan_releases), so the
  // primitive may accumulate into the residual's own buffer (the sum post-op in place) instead of a copy of it,
  // when at run time nothing else holds that buffer (onednn_exec.cpp checks). Not part of describe().
  bool residual_last_use = false;
  // One line: the op, its arguments and post-ops (logs, the program's structure).
  std::string describe() const;
};

struct Match {
  std::shared_ptr<Plan> plan;
  // the nodes the step computes, in order (the head at `head`, then the absorbed post-ops; before it, nodes that
  // only make its operands: a matmul's head-split copies); the last one's value is the step's
  std::vector<const graph::Node*> nodes;
  size_t head = 0;
  // what the step reads: the input, the weight, the bias (or null), the
  // residual (or null), then the operands of binary post-ops
  std::vector<const graph::Node*> reads;
};

// The oneDNN step headed by `head`, or none. Nodes in `taken` (absorbed
// by an earlier match) or in `excluded` (values whose bits the program
// reads) are not absorbed.
std::unique_ptr<Match> match(const graph::Node& head, const std::unordered_set<const graph::Node*>& taken,
                             const std::unordered_set<const graph::Node*>& excluded);

}  // namespace tj::jit::onednn
