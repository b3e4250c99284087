// Loop IR -> CUDA C; see cuda_codegen.h.
#include "jit/cuda_codegen.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

namespace tj::jit::cuda {

namespace {

using c10::ScalarType;
using loop::Expr;
using loop::Op;

// Device helpers every kernel's source starts with: this text, with the
// helpers that spell the op table's NaN rules and combiners (`prelude`)
// between its parts. argmax/argmin take the first NaN.
constexpr const char* kPreludeTypes = R"CUDA(typedef long long tj_i64;
typedef unsigned long long tj_u64;
)CUDA";
constexpr const char* kPreludeConversions = R"CUDA(// (value, index) of an argmax/argmin: is (v, i) before (w, j)?
template <class T> __device__ __forceinline__ bool tj_arg_first(T v, tj_i64 i, T w, tj_i64 j, bool max) {
  if (v != v || w != w) return (v != v && w != w) ? i < j : v != v;
  if (v == w) return i < j;
  return max ? v > w : v < w;
}
// float16 and bfloat16 live as their bits and only ever convert (the
// lowering computes them in float32): widening is exact, narrowing rounds
// to nearest even (NaN stays a quiet NaN), as c10's conversions do.
__device__ __forceinline__ float tj_half_to_float(unsigned short h) {
  const unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (m << 13));
  if (e != 0) return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
  const float v = (float)m * 5.9604644775390625e-8f;  // m * 2^-24
  return sign ? -v : v;
}
__device__ __forceinline__ unsigned short tj_float_to_half(float f) {
  const unsigned x = __float_as_uint(f), a = x & 0x7fffffffu;
  const unsigned short sign = (unsigned short)((x >> 16) & 0x8000u);
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to 65536 or more: inf
  if (a >= 0x38800000u) {                        // a normal half: rebias the exponent, round the mantissa
    const unsigned m = a - 0x38000000u;
    return sign | (unsigned short)((m + 0xfffu + ((m >> 13) & 1u)) >> 13);
  }
  const float scaled = __uint_as_float(a) * 16777216.0f;  // in units of 2^-24, exact
  return sign | (unsigned short)((scaled + 8388608.0f) - 8388608.0f);
}
__device__ __forceinline__ float tj_bf16_to_float(unsigned short b) { return __uint_as_float((unsigned)b << 16); }
__device__ __forceinline__ unsigned short tj_float_to_bf16(float f) {
  const unsigned x = __float_as_uint(f);
  return f != f ? (unsigned short)0x7fc0u : (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
)CUDA";
constexpr const char* kPreludeBlocks = R"CUDA(// Every thread of the block gets the block's value (blockDim.x a multiple of 32).
template <class T, class F> __device__ T tj_block_reduce(T v, T identity, F f, T* shared) {
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? shared[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) shared[32] = v;
  }
  __syncthreads();
  T out = shared[32];
  __syncthreads();
  return out;
}
template <class T> __device__ void tj_block_arg(T& v, tj_i64& i, bool max, T* sv, tj_i64* si) {
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_down_sync(0xffffffffu, v, o);
    tj_i64 j = __shfl_down_sync(0xffffffffu, i, o);
    if (tj_arg_first(w, j, v, i, max)) { v = w; i = j; }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 0) { sv[warp] = v; si[warp] = i; }
  __syncthreads();
  if (warp == 0) {
    v = sv[lane < warps ? lane : 0];
    i = si[lane < warps ? lane : 0];
    for (int o = 16; o > 0; o >>= 1) {
      T w = __shfl_down_sync(0xffffffffu, v, o);
      tj_i64 j = __shfl_down_sync(0xffffffffu, i, o);
      if (tj_arg_first(w, j, v, i, max)) { v = w; i = j; }
    }
    if (lane == 0) { sv[32] = v; si[32] = i; }
  }
  __syncthreads();
  v = sv[32];
  i = si[32];
  __syncthreads();
}
// Four consecutive elements: one vector load or store (16 bytes for float).
template <class T> struct alignas(4 * sizeof(T)) tj_vec4 { T v[4]; };
// c = rest % size, rest /= size: in 32 bits when both fit (far cheaper on a GPU).
__device__ __forceinline__ tj_i64 tj_divmod(tj_i64& rest, tj_i64 size) {
  if (((tj_u64)rest | (tj_u64)size) <= 0xffffffffull) {
    const unsigned q = (unsigned)rest / (unsigned)size, c = (unsigned)rest - q * (unsigned)size;
    rest = q;
    return c;
  }
  const tj_i64 c = rest % size;
  rest /= size;
  return c;
}
)CUDA";

using loop::Combine;
using loop::NanRule;

// How C folds or picks for each way the op table combines values
// (loop_ops.h, Combine): the helpers' names and comparisons.
struct CombineSpelling {
  Combine combine;
  const char* name;
  const char* pick;  // the comparison that prefers `a` (nullptr: a fold)
};
constexpr CombineSpelling kCombines[] = {
    {Combine::add, "sum", nullptr}, {Combine::max, "max", ">"}, {Combine::min, "min", "<"}};

const CombineSpelling& combine_spelling(Combine c) {
  for (const CombineSpelling& s : kCombines)
    if (s.combine == c) return s;
  assert(false && "a combine of the table");
  return kCombines[0];
}

// The C spelling of each pointwise op per class of dtype (floats: float32
// and float64; integers: int32 and int64; bools; bits: float16 and bfloat16,
// which only move). $0-$2 are the operands, $T the C type, $U the unsigned
// type of an integer's width (integer arithmetic wraps through it, as the
// op table says: C's signed overflow is undefined), $f "f" for float32's
// math functions. nullptr: the op is not computed in that class. Loads,
// constants, casts and reductions are spelled by the renderer itself.
struct CudaSpelling {
  Op op;
  const char* floats;
  const char* integers;
  const char* bools;
  const char* bits;
};
constexpr CudaSpelling kSpellings[] = {
    {Op::neg, "(-$0)", "(($T)(0u - ($U)$0))", nullptr, nullptr},
    {Op::abs, "fabs$f($0)", "($0 < 0 ? (($T)(0u - ($U)$0)) : $0)", nullptr, nullptr},
    {Op::relu, "($0 < ($T)0 ? ($T)0 : $0)", "($0 < ($T)0 ? ($T)0 : $0)", nullptr, nullptr},
    {Op::sigmoid, "(($T)1 / (($T)1 + exp$f(-$0)))", nullptr, nullptr, nullptr},
    {Op::tanh, "tanh$f($0)", nullptr, nullptr, nullptr},
    {Op::exp, "exp$f($0)", nullptr, nullptr, nullptr},
    {Op::log, "log$f($0)", nullptr, nullptr, nullptr},
    {Op::sin, "sin$f($0)", nullptr, nullptr, nullptr},
    {Op::cos, "cos$f($0)", nullptr, nullptr, nullptr},
    {Op::sqrt, "sqrt$f($0)", nullptr, nullptr, nullptr},
    {Op::rsqrt, "(($T)1 / sqrt$f($0))", nullptr, nullptr, nullptr},
    {Op::reciprocal, "(($T)1 / $0)", nullptr, nullptr, nullptr},
    {Op::erf, "erf$f($0)", nullptr, nullptr, nullptr},
    {Op::logical_not, nullptr, nullptr, "(!$0)", nullptr},
    {Op::add, "($0 + $1)", "(($T)(($U)$0 + ($U)$1))", "($0 || $1)", nullptr},
    {Op::sub, "($0 - $1)", "(($T)(($U)$0 - ($U)$1))", nullptr, nullptr},
    {Op::mul, "($0 * $1)", "(($T)(($U)$0 * ($U)$1))", "($0 && $1)", nullptr},
    {Op::div, "($0 / $1)", nullptr, nullptr, nullptr},
    {Op::pow, "pow$f($0, $1)", nullptr, nullptr, nullptr},
    // floats: the prelude's helpers of NaN rule `either` (nan_helpers)
    {Op::maximum, "tj_maximum($0, $1)", "($0 > $1 ? $0 : $1)", "($0 > $1 ? $0 : $1)", nullptr},
    {Op::minimum, "tj_minimum($0, $1)", "($0 < $1 ? $0 : $1)", "($0 < $1 ? $0 : $1)", nullptr},
    {Op::eq, "($0 == $1)", "($0 == $1)", "($0 == $1)", nullptr},
    {Op::ne, "($0 != $1)", "($0 != $1)", "($0 != $1)", nullptr},
    {Op::lt, "($0 < $1)", "($0 < $1)", "($0 < $1)", nullptr},
    {Op::le, "($0 <= $1)", "($0 <= $1)", "($0 <= $1)", nullptr},
    {Op::gt, "($0 > $1)", "($0 > $1)", "($0 > $1)", nullptr},
    {Op::ge, "($0 >= $1)", "($0 >= $1)", "($0 >= $1)", nullptr},
    {Op::logical_and, nullptr, nullptr, "($0 && $1)", nullptr},
    {Op::logical_or, nullptr, nullptr, "($0 || $1)", nullptr},
    {Op::logical_xor, nullptr, nullptr, "($0 != $1)", nullptr},
    {Op::select, "($0 ? $1 : $2)", "($0 ? $1 : $2)", "($0 ? $1 : $2)", "($0 ? $1 : $2)"},
    {Op::fma, "fma$f($0, $1, $2)", "(($T)(($U)(($T)(($U)$0 * ($U)$1)) + ($U)$2))", nullptr, nullptr},
};

// The prelude's helpers for the op table's NaN rules: `tj_<op>` for each
// op of rule `either` (NaN when either side is; else the pick), and
// `tj_<combine>_keep_nan` for each reduction of rule `keep` (a NaN stays).
std::string nan_helpers() {
  std::string out;
  const std::string head = "template <class T> __device__ __forceinline__ T ";
  for (const loop::OpInfo& op : loop::all_ops())
    if (op.nan == NanRule::either)
      out += head + "tj_" + op.name + "(T a, T b) { return (a != a || b != b) ? (T)(a + b) : (a " +
             combine_spelling(op.combine).pick + " b ? a : b); }\n";
  for (const loop::OpInfo& op : loop::all_ops())
    if (op.nan == NanRule::keep)
      out += head + "tj_" + combine_spelling(op.combine).name + "_keep_nan(T a, T b) { return a != a ? a : (b != b ? b : (a " +
             combine_spelling(op.combine).pick + " b ? a : b)); }\n";
  return out;
}

// The block reductions' combiners, `tj_<combine>`, one per reduction that
// folds values (sum, max, min; argmax/argmin carry an index: tj_block_arg).
std::string combiners() {
  std::string out;
  for (const loop::OpInfo& op : loop::all_ops()) {
    if (op.kind != loop::OpKind::reduction || op.result == loop::ResultRule::index) continue;
    const CombineSpelling& c = combine_spelling(op.combine);
    const std::string fold = op.nan == NanRule::keep ? "tj_" + std::string(c.name) + "_keep_nan(a, b)" : "a + b";
    out += "struct tj_" + std::string(c.name) +
           " { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return " + fold + "; } };\n";
  }
  return out;
}

const std::string& prelude() {
  static const std::string text =
      std::string(kPreludeTypes) + nan_helpers() + kPreludeConversions + combiners() + kPreludeBlocks;
  return text;
}

bool is_float(ScalarType t) { return t == ScalarType::Float || t == ScalarType::Double; }
bool is_int(ScalarType t) { return t == ScalarType::Int || t == ScalarType::Long; }
bool is_reduced_float(ScalarType t) { return t == ScalarType::Half || t == ScalarType::BFloat16; }

std::optional<std::string> c_type(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::Int: return "int";
    case ScalarType::Long: return "tj_i64";
    case ScalarType::Float: return "float";
    case ScalarType::Double: return "double";
    case ScalarType::Half:
    case ScalarType::BFloat16: return "unsigned short";  // the bits (see the prelude)
    default: return std::nullopt;
  }
}

// How a value of this dtype sits in memory (bool as one byte).
std::string mem_type(ScalarType t) { return t == ScalarType::Bool ? "unsigned char" : *c_type(t); }

// Block reductions shuffle ints, not bools.
std::string acc_type(ScalarType t) { return t == ScalarType::Bool ? "int" : *c_type(t); }

std::string literal(double value, ScalarType t) {
  char buf[64];
  switch (t) {
    case ScalarType::Half:
      std::snprintf(buf, sizeof buf, "((unsigned short)0x%04x)", c10::Half(static_cast<float>(value)).x);
      return buf;
    case ScalarType::BFloat16:
      std::snprintf(buf, sizeof buf, "((unsigned short)0x%04x)", c10::BFloat16(static_cast<float>(value)).x);
      return buf;
    case ScalarType::Bool: return value != 0 ? "true" : "false";
    case ScalarType::Int: std::snprintf(buf, sizeof buf, "((int)%lldLL)", static_cast<long long>(value)); return buf;
    case ScalarType::Long: std::snprintf(buf, sizeof buf, "((tj_i64)%lldLL)", static_cast<long long>(value)); return buf;
    default: break;
  }
  const bool f32 = t == ScalarType::Float;
  if (std::isnan(value)) return f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(value)) {
    std::string inf = f32 ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
    return value < 0 ? "(-" + inf + ")" : inf;
  }
  // a floating literal ("-0" would be the integer 0, and -0.0 would lose its sign)
  std::snprintf(buf, sizeof buf, "%.17g", value);
  std::string text = buf;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return f32 ? "((float)" + text + ")" : "(" + text + ")";
}

// The largest/smallest value of a dtype: max/min reductions start there.
std::string lowest(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "0";
    case ScalarType::Int: return "(-2147483647 - 1)";
    case ScalarType::Long: return "(-9223372036854775807LL - 1)";
    default: return literal(-INFINITY, t);
  }
}
std::string highest(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "1";
    case ScalarType::Int: return "2147483647";
    case ScalarType::Long: return "9223372036854775807LL";
    default: return literal(INFINITY, t);
  }
}

// A reduction's start value in dtype `t` (loop_ops.h, Identity).
std::string identity(Op op, ScalarType t) {
  switch (loop::info(op).identity) {
    case loop::Identity::lowest: return lowest(t);
    case loop::Identity::highest: return highest(t);
    default: return "0";
  }
}

bool is_arg_reduction(Op op) { return loop::info(op).result == loop::ResultRule::index; }
// tj_arg_first's `max` argument
const char* arg_max(Op op) { return loop::info(op).combine == Combine::argmax ? "true" : "false"; }

class Renderer {
 public:
  Renderer(const loop::Kernel& k, int vector_width) : k_(k), s_(loop::schedule(k)), vector_(vector_width == 4) {}

  Expected<std::string> render(const std::string& name) {
    if (auto checked = loop::verify(k_); !checked) return checked.error();
    for (const Expr& e : k_.exprs)
      if (!c_type(e.dtype)) return Error{"the CUDA code generator has no " + std::string(c10::toString(e.dtype)) + " yet"};
    for (const auto& o : k_.outputs)
      if (!c_type(o.dtype)) return Error{"the CUDA code generator has no " + std::string(c10::toString(o.dtype)) + " yet"};
    const int rank = static_cast<int>(k_.sizes.size());
    const int outer = rank - k_.reduced_dims;
    o_ << prelude() << "\n";
    o_ << "extern \"C\" __global__ void " << name
       << "(char* const* ptrs, const tj_i64* sizes, const tj_i64* strides) {\n";
    // pointers, sizes and strides in registers: a store through a pointer could alias them in memory
    for (int b = 0; b < num_buffers(); ++b) o_ << "  char* const p" << b << " = ptrs[" << b << "];\n";
    for (int d = 0; d < rank; ++d) o_ << "  const tj_i64 sz" << d << " = sizes[" << d << "];\n";
    for (int b = 0; b < num_buffers(); ++b)
      for (int d = 0; d < rank; ++d)
        o_ << "  const tj_i64 st" << b << "_" << d << " = strides[" << b * rank + d << "];\n";
    o_ << "  tj_i64 rows = 1, cols = 1;\n";
    for (int d = 0; d < rank; ++d) o_ << "  " << (d < outer ? "rows" : "cols") << " *= sz" << d << ";\n";
    if (k_.reduced_dims == 0) {
      std::string first = "0";
      if (vector_) {
        vector_loop();
        first = "rows / 4 * 4";  // the rest, one element per thread
      }
      o_ << "  for (tj_i64 r = " << first
         << " + (tj_i64)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += (tj_i64)blockDim.x * gridDim.x) {\n";
      offsets("r", 0, outer, "o", "    ", /*add_to=*/"");
      row(true);
      o_ << "  }\n";
    } else {
      declare_shared();
      o_ << "  for (tj_i64 r = blockIdx.x; r < rows; r += gridDim.x) {\n";
      offsets("r", 0, outer, "o", "    ", "");
      row(false);
      o_ << "  }\n";
    }
    o_ << "}\n";
    return o_.str();
  }

 private:
  int num_buffers() const { return static_cast<int>(k_.outputs.size() + k_.inputs.size()); }

  // `prefix<b>` = offset of the element at linear index `index` over dims
  // [from, to) for each buffer b (added to `add_to<b>` when given).
  void offsets(const std::string& index, int from, int to, const std::string& prefix, const std::string& ind,
               const std::string& add_to) {
    const int rank = static_cast<int>(k_.sizes.size());
    const int nb = num_buffers();
    for (int b = 0; b < nb; ++b)
      o_ << ind << "tj_i64 " << prefix << b << " = " << (add_to.empty() ? "0" : add_to + std::to_string(b)) << ";\n";
    if (from == to) return;
    o_ << ind << "{\n" << ind << "  tj_i64 rest = " << index << ";\n";
    for (int d = to - 1; d >= from; --d) {
      // the index is below the product of the sizes: the first dim's coordinate is what is left
      if (d == from) o_ << ind << "  tj_i64 c" << d << " = rest;\n";
      else o_ << ind << "  tj_i64 c" << d << " = tj_divmod(rest, sz" << d << ");\n";
      for (int b = 0; b < nb; ++b) o_ << ind << "  " << prefix << b << " += c" << d << " * st" << b << "_" << d << ";\n";
    }
    o_ << ind << "}\n";
  }

  // A pointwise kernel whose buffers are all contiguous (or one value,
  // broadcast) in four-element vectors: q-th vector of each buffer; lane l
  // of every expression is v<e>_<l>.
  void vector_loop() {
    const int num_out = static_cast<int>(k_.outputs.size());
    o_ << "  for (tj_i64 q = (tj_i64)blockIdx.x * blockDim.x + threadIdx.x; q < rows / 4; q += (tj_i64)blockDim.x * gridDim.x) {\n";
    for (size_t i = 0; i < k_.inputs.size(); ++i) {
      if (k_.inputs[i].layout != loop::Layout::full) continue;
      const int b = num_out + static_cast<int>(i);
      const std::string t = "tj_vec4<" + mem_type(k_.inputs[i].dtype) + ">";
      o_ << "    const " << t << " x" << b << " = ((const " << t << "*)p" << b << ")[q];\n";
    }
    // other inputs (a row broadcast, a transposed operand): the four lanes differ only in the last
    // coordinate (the last size is a multiple of 4), so one offset and the last stride place them
    const int rank = static_cast<int>(k_.sizes.size());
    bool strided = false;
    for (const auto& in : k_.inputs) strided = strided || in.layout == loop::Layout::other;
    if (strided) {
      o_ << "    tj_i64 rest = q * 4;\n";
      for (int d = rank - 1; d >= 0; --d)
        o_ << "    const tj_i64 c" << d << " = " << (d == 0 ? "rest" : "tj_divmod(rest, sz" + std::to_string(d) + ")") << ";\n";
    }
    for (size_t i = 0; i < k_.inputs.size(); ++i) {
      if (k_.inputs[i].layout != loop::Layout::other) continue;
      const int b = num_out + static_cast<int>(i);
      o_ << "    const tj_i64 o" << b << " = 0";
      for (int d = 0; d < rank; ++d) o_ << " + c" << d << " * st" << b << "_" << d;
      o_ << ";\n";
    }
    for (int o = 0; o < num_out; ++o) o_ << "    tj_vec4<" << mem_type(k_.outputs[static_cast<size_t>(o)].dtype) << "> y" << o << ";\n";
    for (lane_ = 0; lane_ < 4; ++lane_) row(true);
    lane_ = -1;
    for (int o = 0; o < num_out; ++o)
      o_ << "    ((tj_vec4<" << mem_type(k_.outputs[static_cast<size_t>(o)].dtype) << ">*)p" << o << ")[q] = y" << o << ";\n";
    o_ << "  }\n";
  }

  std::string v(int e) const { return "v" + std::to_string(e) + (lane_ < 0 ? "" : "_" + std::to_string(lane_)); }

  std::string load(const Expr& e, const std::string& offset_prefix) const {
    const int b = static_cast<int>(k_.outputs.size()) + e.input;
    std::string x = "((const " + mem_type(e.dtype) + "*)p" + std::to_string(b) + ")[" + offset_prefix +
                    std::to_string(b) + "]";
    if (lane_ >= 0) {
      const std::string p = "((const " + mem_type(e.dtype) + "*)p" + std::to_string(b) + ")";
      const std::string last = "st" + std::to_string(b) + "_" + std::to_string(k_.sizes.size() - 1);
      switch (k_.inputs[static_cast<size_t>(e.input)].layout) {
        case loop::Layout::full: x = "x" + std::to_string(b) + ".v[" + std::to_string(lane_) + "]"; break;
        case loop::Layout::scalar: x = p + "[0]"; break;
        default: x = p + "[o" + std::to_string(b) + " + " + std::to_string(lane_) + " * " + last + "]"; break;
      }
    }
    return e.dtype == ScalarType::Bool ? "(" + x + " != 0)" : x;
  }

  void store(int output, const std::string& value, const std::string& offset_prefix, const std::string& ind) {
    const auto& out = k_.outputs[static_cast<size_t>(output)];
    std::string x = value;
    if (out.dtype == ScalarType::Bool) x = "(unsigned char)(" + value + ")";
    if (lane_ >= 0) {
      o_ << ind << "y" << output << ".v[" << lane_ << "] = " << x << ";\n";
      return;
    }
    o_ << ind << "((" << mem_type(out.dtype) << "*)p" << output << ")[" << offset_prefix << output << "] = " << x
       << ";\n";
  }

  std::string load_output(int output, const std::string& offset_prefix) const {
    const auto& out = k_.outputs[static_cast<size_t>(output)];
    std::string x = "((" + mem_type(out.dtype) + "*)p" + std::to_string(output) + ")[" + offset_prefix +
                    std::to_string(output) + "]";
    return out.dtype == ScalarType::Bool ? "(" + x + " != 0)" : x;
  }

  std::string compute(const Expr& e) const {
    const ScalarType t = e.dtype;
    const std::string T = *c_type(t);
    switch (e.op) {
      case Op::constant: return literal(e.value, t);
      case Op::inner_count: return "((" + T + ")cols)";
      case Op::cast: return cast(v(e.args[0]), k_.exprs[static_cast<size_t>(e.args[0])].dtype, t);
      default: break;
    }
    // the operands' dtype (loop::verify checked the kernel against the op table)
    const loop::OpInfo& op = loop::info(e.op);
    if (op.kind != loop::OpKind::pointwise) return "";  // loads and reductions: emitted by the loops
    const size_t first = op.condition_first ? 1 : 0;
    const ScalarType computed = e.args.size() > first ? k_.exprs[static_cast<size_t>(e.args[first])].dtype : t;
    const char* pattern = spelling(e.op, computed);
    assert(pattern && "the table spells every pointwise op in every dtype the op table lists");
    std::string out;
    for (const char* c = pattern; *c; ++c) {
      if (*c != '$') {
        out += *c;
        continue;
      }
      const char what = *++c;
      if (what >= '0' && what <= '2') out += v(e.args[static_cast<size_t>(what - '0')]);
      else if (what == 'T') out += T;
      else if (what == 'U') out += computed == ScalarType::Int ? "unsigned" : "tj_u64";
      else if (what == 'f') out += computed == ScalarType::Float ? "f" : "";
    }
    if (e.op == Op::relu && k_.relu_plus_one) out = "(" + out + " + (" + T + ")1)";
    return out;
  }

  // float16/bfloat16 through float32, as the llvm backend converts them
  std::string cast(const std::string& x, ScalarType from, ScalarType to) const {
    if (from == to) return x;
    if (from == ScalarType::Half) return cast("tj_half_to_float(" + x + ")", ScalarType::Float, to);
    if (from == ScalarType::BFloat16) return cast("tj_bf16_to_float(" + x + ")", ScalarType::Float, to);
    if (to == ScalarType::Half) return "tj_float_to_half(" + cast(x, from, ScalarType::Float) + ")";
    if (to == ScalarType::BFloat16) return "tj_float_to_bf16(" + cast(x, from, ScalarType::Float) + ")";
    if (to == ScalarType::Bool) return "(" + x + " != 0)";
    return "((" + *c_type(to) + ")" + x + ")";
  }

  void define(int i, const std::string& value, const std::string& ind) {
    o_ << ind << "const " << *c_type(k_.exprs[static_cast<size_t>(i)].dtype) << " " << v(i) << " = " << value << ";\n";
  }

  // Shared memory of the block reductions: one array per reduction
  // expression (32 warps + the result).
  void declare_shared() {
    for (size_t i = 0; i < k_.exprs.size(); ++i) {
      const Expr& e = k_.exprs[i];
      if (!loop::is_reduction(e.op)) continue;
      const ScalarType arg = k_.exprs[static_cast<size_t>(e.args[0])].dtype;
      const bool arg_reduce = is_arg_reduction(e.op);
      o_ << "  __shared__ " << acc_type(arg_reduce ? arg : e.dtype) << " sh" << i << "[33];\n";
      if (arg_reduce) o_ << "  __shared__ tj_i64 shi" << i << "[33];\n";
    }
  }

  // One row (a pointwise kernel: one element): the outer values in the
  // order the schedule gives, with an inner loop between each step.
  void row(bool pointwise) {
    const std::string ind = "    ";
    const size_t n = k_.exprs.size();
    for (int p = 0;; ++p) {
      for (size_t i = 0; i < n; ++i) {
        const Expr& e = k_.exprs[i];
        if (s_.inner[i] || loop::is_reduction(e.op) || s_.loop[i] != p) continue;
        define(static_cast<int>(i), e.op == Op::load ? load(e, "o") : compute(e), ind);
      }
      for (size_t o = 0; o < k_.outputs.size(); ++o) {
        const auto& out = k_.outputs[o];
        if ((pointwise || !out.full) && s_.store_loop[o] == p) {
          if (!pointwise) o_ << ind << "if (threadIdx.x == 0)\n";
          store(static_cast<int>(o), v(out.expr), "o", pointwise ? ind : ind + "  ");
        }
      }
      if (p == s_.loops) break;
      inner_loop(p);
    }
  }

  void inner_loop(int p) {
    const loop::LoopPlan& plan = s_.plans[static_cast<size_t>(p)];
    const std::string ind = "    ";
    const int rank = static_cast<int>(k_.sizes.size());
    const size_t n = k_.exprs.size();
    std::vector<int> spilled_from(n, -1);
    for (auto [e, o] : plan.spill_loads) spilled_from[static_cast<size_t>(e)] = o;
    // partial values of this thread
    for (int r : plan.reductions) {
      const Expr& e = k_.exprs[static_cast<size_t>(r)];
      const ScalarType arg = k_.exprs[static_cast<size_t>(e.args[0])].dtype;
      const std::string acc = "a" + std::to_string(r);
      if (is_arg_reduction(e.op)) {  // the first element wins ties; the index starts past the row
        o_ << ind << acc_type(arg) << " " << acc << " = " << identity(e.op, arg) << ";\n";
        o_ << ind << "tj_i64 " << acc << "i = cols;\n";
      } else {
        o_ << ind << acc_type(e.dtype) << " " << acc << " = " << identity(e.op, e.dtype) << ";\n";
      }
    }
    // unrolled: a thread's loads of the row are in flight together
    o_ << ind << "#pragma unroll 4\n" << ind << "for (tj_i64 j = threadIdx.x; j < cols; j += blockDim.x) {\n";
    const std::string in = ind + "  ";
    offsets("j", rank - k_.reduced_dims, rank, "i", in, "o");
    for (size_t i = 0; i < n; ++i) {
      if (!plan.needed[i] || !s_.inner[i]) continue;
      const Expr& e = k_.exprs[i];
      if (spilled_from[i] >= 0) define(static_cast<int>(i), load_output(spilled_from[i], "i"), in);
      else define(static_cast<int>(i), e.op == Op::load ? load(e, "i") : compute(e), in);
    }
    for (int r : plan.reductions) {
      const Expr& e = k_.exprs[static_cast<size_t>(r)];
      const std::string acc = "a" + std::to_string(r);
      const std::string x = v(e.args[0]);
      const loop::OpInfo& op = loop::info(e.op);
      if (is_arg_reduction(e.op)) {
        const std::string xa = "(" + acc_type(k_.exprs[static_cast<size_t>(e.args[0])].dtype) + ")" + x;
        o_ << in << "if (tj_arg_first(" << xa << ", j, " << acc << ", " << acc << "i, " << arg_max(e.op) << ")) { "
           << acc << " = " << xa << "; " << acc << "i = j; }\n";
      } else if (op.combine == Combine::add) {
        o_ << in << acc << " += " << x << ";\n";
      } else {
        o_ << in << acc << " = tj_" << combine_spelling(op.combine).name << "_keep_nan(" << acc << ", ("
           << acc_type(e.dtype) << ")" << x << ");\n";
      }
    }
    for (auto [e, o] : plan.spill_stores) store(o, v(e), "i", in);
    for (int o : plan.stores) store(o, v(k_.outputs[static_cast<size_t>(o)].expr), "i", in);
    o_ << ind << "}\n";
    // the row's values, in every thread
    for (int r : plan.reductions) {
      const Expr& e = k_.exprs[static_cast<size_t>(r)];
      const std::string acc = "a" + std::to_string(r);
      const std::string sh = "sh" + std::to_string(r);
      if (is_arg_reduction(e.op)) {
        o_ << ind << "tj_block_arg(" << acc << ", " << acc << "i, " << arg_max(e.op) << ", " << sh << ", shi" << r << ");\n";
        define(r, "(" + *c_type(e.dtype) + ")" + acc + "i", ind);
      } else {
        define(r, "(" + *c_type(e.dtype) + ")tj_block_reduce(" + acc + ", (" + acc_type(e.dtype) + ")" + identity(e.op, e.dtype) +
                      ", tj_" + combine_spelling(loop::info(e.op).combine).name + "(), " + sh + ")", ind);
      }
    }
  }

  const loop::Kernel& k_;
  const loop::Schedule s_;
  const bool vector_;
  int lane_ = -1;  // the vector lane being written; -1 outside the vector loop
  std::ostringstream o_;
};

}  // namespace

const char* spelling(loop::Op op, c10::ScalarType t) {
  for (const CudaSpelling& s : kSpellings) {
    if (s.op != op) continue;
    if (is_float(t)) return s.floats;
    if (is_int(t)) return s.integers;
    if (t == ScalarType::Bool) return s.bools;
    return is_reduced_float(t) ? s.bits : nullptr;
  }
  return nullptr;
}

Expected<std::string> render(const loop::Kernel& kernel, const std::string& name, int vector_width) {
  assert((vector_width == 1 || vectorizable(kernel)) && "vectors need contiguous or broadcast buffers");
  return Renderer(kernel, vector_width).render(name);
}

bool vectorizable(const loop::Kernel& kernel) {
  if (kernel.reduced_dims != 0) return false;
  const bool rows_of_four = !kernel.sizes.empty() && kernel.sizes.back() % 4 == 0;
  for (const auto& in : kernel.inputs)
    if (in.layout != loop::Layout::full && in.layout != loop::Layout::scalar && !rows_of_four) return false;
  for (const auto& out : kernel.outputs)
    if (out.layout != loop::Layout::full) return false;
  return true;
}

LaunchShape launch_shape(const loop::Kernel& kernel, const int64_t* sizes, long long max_blocks, int vector_width) {
  const size_t rank = kernel.sizes.size();
  const size_t outer = rank - static_cast<size_t>(kernel.reduced_dims);
  long long rows = 1;
  for (size_t d = 0; d < outer; ++d) rows *= sizes[d];
  if (!kernel.reduced_dims && vector_width > 1) rows = std::max(rows / vector_width, rows % vector_width);
  LaunchShape shape;
  if (kernel.reduced_dims) shape.threads = kReductionThreads;
  long long blocks = kernel.reduced_dims ? rows : (rows + kBlockThreads - 1) / kBlockThreads;
  shape.blocks = std::max(1LL, std::min(blocks, max_blocks));
  return shape;
}

}  // namespace tj::jit::cuda
