// Every op of the loop IR's table (loop_ops.h, `loop::all_ops`) through both
// code generators, against ATen: the CUDA C the nvrtc backend generates,
// run on the host (cuda_emu.h), and the machine code the llvm backend
// makes from its LLVM IR.
//
// One parameterized test per (op, code generator), the ops taken from the
// table: an op added to it is a new test case, which fails until
// `aten_pointwise` (or `lanes_of`) says how ATen computes it. Each case is
// one kernel holding a *lane* per dtype the table lets the op be computed
// in (casts: per pair of dtypes): the lane loads its own operands and
// stores its own result, of the dtype the table's result rule gives.
// Operands are all combinations of special values (NaN, infinities,
// signed zeros, denormals, the integer extremes) and ordinary ones;
// pointwise kernels run in both of each generator's forms (CUDA: one
// element per thread and four-lane vectors; LLVM: the flat and the strided
// entry), reductions over rows longer than the emulated block so the block
// reduction combines several warps.
//
// Results match bit for bit, with NaN matching any NaN, except where ATen
// itself is not exact: transcendental functions and float sums (a
// tolerance; infinities, NaNs and zero signs must still agree; the llvm
// backend, which sums float32 in float32 blocks combined in float64, against
// ATen's sum in float64 rounded to the dtype, the CUDA C against ATen's own;
// a sum may also differ by one rounding of its terms' magnitude, see
// sum_rounding), and which
// zero maximum/minimum return for +0 vs -0 (ATen's scalar and vector paths
// differ there).
//
// The table's own coherence is tested below too: the CUDA spelling table
// covers exactly the dtypes each op is computed in, the lowering builds
// nothing the table does not list, and `loop::verify` rejects a kernel
// that breaks the table's rules.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include <ATen/Parallel.h>

#include "emulated_device.h"
#include "jit/fusion_group.h"
#include "llvm_test_util.h"

namespace tj::jit {
namespace {

using c10::ScalarType;
using loop::Expr;
using loop::Op;

const std::vector<ScalarType> kAll = {at::kBool, at::kInt, at::kLong, at::kFloat, at::kDouble, at::kHalf, at::kBFloat16};
const std::vector<ScalarType> kCompute = {at::kBool, at::kInt, at::kLong, at::kFloat, at::kDouble};
const std::vector<ScalarType> kNumbers = {at::kInt, at::kLong, at::kFloat, at::kDouble};
const std::vector<ScalarType> kFloats = {at::kFloat, at::kDouble};

// Every op of the table.
std::vector<Op> all_ops() {
  std::vector<Op> ops;
  for (const loop::OpInfo& info : loop::all_ops()) ops.push_back(info.op);
  return ops;
}

// The dtypes the table lets `op` be computed in (float16 and bfloat16 only
// for the ops that move values: the lowering computes them in float32).
std::vector<ScalarType> dtypes_of(Op op) {
  std::vector<ScalarType> out;
  for (ScalarType t : kAll)
    if (loop::computes_in(op, t)) out.push_back(t);
  return out;
}

int arity(Op op) { return loop::info(op).arity; }

// Results ATen computes with a library function or a cascade sum: compared
// within a tolerance.
bool inexact(Op op) {
  return loop::is_costly(op) || op == Op::rsqrt || op == Op::reduce_sum;
}

// Special and ordinary values of a dtype.
at::Tensor specials(ScalarType t) {
  const double inf = INFINITY, nan = NAN;
  switch (t) {
    case ScalarType::Bool: return at::tensor(std::vector<int64_t>{0, 1}).to(at::kBool);
    case ScalarType::Int:
    case ScalarType::Long: {
      const bool i32 = t == ScalarType::Int;
      const int64_t max = i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
      const int64_t min = i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
      return at::tensor(std::vector<int64_t>{0, 1, -1, 2, -3, 7, 100, -100, max, min, max - 1, min + 1}).to(t);
    }
    default: {
      std::vector<double> v = {nan, -nan, inf, -inf, 0.0, -0.0, 1, -1, 0.5, -2.5, 3, 100, -1e-3, 1e-40, 88.75, -104,
                               1e30, 0.1};
      if (t == ScalarType::Double) v.insert(v.end(), {1e300, 710, -745.5, 1e-310});
      if (t == ScalarType::Half || t == ScalarType::BFloat16) v.insert(v.end(), {65504, 70000, 1e-7, 3.3e38});
      return at::tensor(v, at::kDouble).to(t);
    }
  }
}

// Values a cast from `from` to `to` is defined for (C leaves a float
// outside the integer's range undefined, and so does eager).
at::Tensor cast_operands(ScalarType from, ScalarType to) {
  at::Tensor x = specials(from);
  if (at::isFloatingType(from) && at::isIntegralType(to, /*includeBool=*/false)) {
    at::Tensor d = x.to(at::kDouble);
    const double limit = to == ScalarType::Int ? 2e9 : 9e18;
    x = x.index({d.isfinite().logical_and(d.abs() < limit)});
    x = at::cat({x, (at::randn({50}) * 1000).to(from)});
  }
  if (at::isFloatingType(from)) x = at::cat({x, (at::randn({50}) * 10).to(from)});
  return x;
}

// All combinations of the operands' values (each list of one dtype).
std::vector<at::Tensor> combinations(const std::vector<at::Tensor>& lists) {
  if (lists.size() == 1) return lists;
  std::vector<at::Tensor> positions;
  for (const at::Tensor& l : lists) positions.push_back(at::arange(l.numel()));
  std::vector<at::Tensor> grids = at::meshgrid(positions, "ij");
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < lists.size(); ++i) out.push_back(lists[i].index({grids[i].reshape({-1})}).contiguous());
  return out;
}

// One lane of a kernel: its operands and what ATen gives for them.
struct Lane {
  std::string what;
  std::vector<at::Tensor> operands;  // 1-d (pointwise) or 2-d (reductions), one dtype each
  std::function<int(loop::Kernel&, const std::vector<int>& loads)> expr;
  at::Tensor expected;
  // float sums: ATen's sum in float64, rounded to the dtype. The llvm
  // backend sums float32 blocks in float64 (llvm_reduce.h) and is judged
  // against this more exact reference, not against ATen's float32 rounding
  // error (within a rounding of the terms' magnitude, sum_rounding).
  at::Tensor exact = {};
};

at::Tensor fma_reference(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  if (!at::isFloatingType(a.scalar_type())) return at::addcmul(c, a, b);
  // one rounding: C's fma, element by element (ATen has no fused op of its own)
  at::Tensor ad = a.to(at::kDouble).contiguous(), bd = b.to(at::kDouble).contiguous(),
             cd = c.to(at::kDouble).contiguous();
  at::Tensor out = at::empty_like(a);
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = ad.data_ptr<double>()[i], y = bd.data_ptr<double>()[i], z = cd.data_ptr<double>()[i];
    if (a.scalar_type() == at::kFloat) {
      out.data_ptr<float>()[i] = std::fma(static_cast<float>(x), static_cast<float>(y), static_cast<float>(z));
    } else {
      out.data_ptr<double>()[i] = std::fma(x, y, z);
    }
  }
  return out;
}

// ATen's result of pointwise `op` on `x` (operands of dtype t).
at::Tensor aten_pointwise(Op op, const std::vector<at::Tensor>& x) {
  switch (op) {
    case Op::neg: return at::neg(x[0]);
    case Op::abs: return at::abs(x[0]);
    case Op::relu: return at::relu(x[0]);
    case Op::sigmoid: return at::sigmoid(x[0]);
    case Op::tanh: return at::tanh(x[0]);
    case Op::exp: return at::exp(x[0]);
    case Op::log: return at::log(x[0]);
    case Op::sin: return at::sin(x[0]);
    case Op::cos: return at::cos(x[0]);
    case Op::sqrt: return at::sqrt(x[0]);
    case Op::rsqrt: return at::rsqrt(x[0]);
    case Op::reciprocal: return at::reciprocal(x[0]);
    case Op::erf: return at::erf(x[0]);
    case Op::logical_not: return at::logical_not(x[0]);
    case Op::add: return at::add(x[0], x[1]);
    case Op::sub: return at::sub(x[0], x[1]);
    case Op::mul: return at::mul(x[0], x[1]);
    case Op::div: return at::div(x[0], x[1]);
    case Op::pow: return at::pow(x[0], x[1]);
    case Op::maximum: return at::maximum(x[0], x[1]);
    case Op::minimum: return at::minimum(x[0], x[1]);
    case Op::eq: return at::eq(x[0], x[1]);
    case Op::ne: return at::ne(x[0], x[1]);
    case Op::lt: return at::lt(x[0], x[1]);
    case Op::le: return at::le(x[0], x[1]);
    case Op::gt: return at::gt(x[0], x[1]);
    case Op::ge: return at::ge(x[0], x[1]);
    case Op::logical_and: return at::logical_and(x[0], x[1]);
    case Op::logical_or: return at::logical_or(x[0], x[1]);
    case Op::logical_xor: return at::logical_xor(x[0], x[1]);
    case Op::select: return at::where(x[0], x[1], x[2]);
    case Op::fma: return fma_reference(x[0], x[1], x[2]);
    default: return at::Tensor();
  }
}

// Rows for the reductions: special values spread over rows longer than a
// block of the emulation (64 threads), a row of NaN-free ordinary values,
// a row all -inf, a row with both infinities.
at::Tensor reduction_rows(ScalarType t) {
  const int64_t cols = 150;
  at::Tensor s = specials(t);
  at::Tensor spread = s.index({at::arange(5 * cols) % s.numel()}).reshape({5, cols});
  at::Tensor ordinary = at::isFloatingType(t) ? (at::randn({3, cols}) * 3).to(t) : at::randint(-50, 50, {3, cols}).to(t);
  std::vector<at::Tensor> rows = {spread, ordinary, spread.flip({1})};
  if (!at::isFloatingType(t)) rows.push_back(at::randint(-50, 50, {2, cols}).to(t));  // as many rows as floats
  if (at::isFloatingType(t)) {
    rows.push_back(at::full({1, cols}, -INFINITY, t));
    at::Tensor both = (at::randn({1, cols}) * 3).to(t);
    both[0][7] = INFINITY;
    both[0][100] = -INFINITY;
    rows.push_back(both);
  }
  // integer sums of the extremes wrap in both; keep one ordinary row free of them
  return at::cat(rows).contiguous();
}

// The lane of pointwise `op` computed in `t`: every combination of special values.
Lane pointwise_lane(Op op, ScalarType t) {
  std::vector<at::Tensor> lists;
  for (int i = 0; i < arity(op); ++i) lists.push_back(specials(loop::info(op).condition_first && i == 0 ? at::kBool : t));
  std::vector<at::Tensor> x = combinations(lists);
  if (op == Op::fma && at::isFloatingType(t)) {
    // ordinary values too, where one rounding differs from two
    for (at::Tensor& xi : x) xi = at::cat({xi, (at::randn({400}) * 3).to(t)});
  }
  const ScalarType result = loop::result_dtype(op, t);
  return {std::string(loop::op_name(op)) + " " + c10::toString(t), x,
          [op, result](loop::Kernel& k, const std::vector<int>& l) { return k.add(Expr{op, result, l}); },
          aten_pointwise(op, x)};
}

// The lanes of the test of `op`.
std::vector<Lane> lanes_of(Op op) {
  std::vector<Lane> lanes;
  const std::string name = loop::op_name(op);
  for (ScalarType t : dtypes_of(op)) {
    const std::string dt = c10::toString(t);
    switch (op) {
      case Op::load:
        lanes.push_back({name + " " + dt, {specials(t)}, [](loop::Kernel&, const std::vector<int>& l) { return l[0]; },
                         specials(t)});
        break;
      case Op::constant:
        for (double value : {0.0, -0.0, 1.0, -7.0, 0.1, 1e30, 9007199254740992.0, -9007199254740992.0,
                             static_cast<double>(INFINITY), -static_cast<double>(INFINITY), static_cast<double>(NAN)}) {
          if (!at::isFloatingType(t) && !std::isfinite(value)) continue;
          double v = value;
          if (t == ScalarType::Bool) v = value != 0;
          if (t == ScalarType::Int && std::abs(v) > 2e9) continue;
          if (t == ScalarType::Long && std::abs(v) > 9007199254740992.0) continue;  // exact below 2^53 (loop_ir.h)
          if (at::isIntegralType(t, false)) v = std::trunc(v);
          if (t == ScalarType::Half) v = static_cast<float>(c10::Half(static_cast<float>(v)));  // as GroupBuilder::constant
          if (t == ScalarType::BFloat16) v = static_cast<float>(c10::BFloat16(static_cast<float>(v)));
          lanes.push_back({name + " " + dt + " " + std::to_string(value), {},
                           [t, v](loop::Kernel& k, const std::vector<int>&) { return k.add(Expr{Op::constant, t, {}, -1, v}); },
                           at::full({1}, v, at::TensorOptions().dtype(t))});
        }
        break;
      case Op::cast:
        for (ScalarType to : kAll) {
          if (to == t) continue;
          at::Tensor x = cast_operands(t, to);
          lanes.push_back({name + " " + dt + " to " + c10::toString(to), {x},
                           [to](loop::Kernel& k, const std::vector<int>& l) { return k.add(Expr{Op::cast, to, {l[0]}}); },
                           x.to(to)});
        }
        break;
      default: {
        if (!loop::is_reduction(op) && op != Op::inner_count) {
          lanes.push_back(pointwise_lane(op, t));
          break;
        }
        at::Tensor x = reduction_rows(t);
        at::Tensor want;
        const ScalarType result = loop::result_dtype(op, t);
        switch (op) {
          case Op::inner_count: want = at::full({x.size(0)}, static_cast<double>(x.size(1)), at::TensorOptions().dtype(t)); break;
          case Op::reduce_sum: want = at::sum(x, {1}, false, t); break;
          case Op::reduce_max: want = at::amax(x, {1}); break;
          case Op::reduce_min: want = at::amin(x, {1}); break;
          case Op::reduce_argmax: want = at::argmax(x, 1); break;
          case Op::reduce_argmin: want = at::argmin(x, 1); break;
          default: break;  // a reduction of the table this test does not know: it fails below
        }
        lanes.push_back({name + " " + dt, {x},
                         [op, result](loop::Kernel& k, const std::vector<int>& l) {
                           if (op == Op::inner_count) return k.add(Expr{op, result, {}});
                           return k.add(Expr{op, result, {l[0]}});
                         },
                         want});
        if (op == Op::reduce_sum && at::isFloatingType(t)) lanes.back().exact = at::sum(x.to(at::kDouble), {1}).to(t);
        break;
      }
    }
  }
  // ops this test has no ATen reference for: no lane, and the test fails
  std::erase_if(lanes, [](const Lane& lane) { return !lane.expected.defined(); });
  return lanes;
}

bool same_bits(double a, double b) { return std::signbit(a) == std::signbit(b) && a == b; }

// A float sum's rounding error is bounded by its terms' magnitude, not its
// result's: one rounding of the row's sum of |x| in the dtype (the llvm
// backend adds float32 rows in float32 blocks of 2048 elements across the
// vector's lanes, the blocks in float64, so its error depends on the
// host's vector width: 8 lanes (AVX2) round more often than 16). 0 for
// every other op.
double sum_rounding(Op op, const Lane& lane, ScalarType t, int64_t row) {
  if (op != Op::reduce_sum || lane.operands.size() != 1 || lane.operands[0].dim() != 2) return 0;
  const double magnitude = lane.operands[0][row].to(at::kDouble).abs().sum().item<double>();
  const double eps = t == ScalarType::Double ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  return std::isfinite(magnitude) ? eps * magnitude : 0;
}

// Compares lane results element by element (module comment).
void expect_matches(Op op, const Lane& lane, const at::Tensor& got, const char* generator, bool exact) {
  const at::Tensor& want = exact && lane.exact.defined() ? lane.exact : lane.expected;
  ASSERT_EQ(want.scalar_type(), got.scalar_type()) << lane.what;
  if (!at::isFloatingType(want.scalar_type())) {
    EXPECT_TRUE(at::equal(want, got)) << lane.what << "\noperands:\n" << lane.operands << "\naten:\n" << want
                                      << "\n" << generator << ":\n" << got;
    return;
  }
  at::Tensor w = want.to(at::kDouble).contiguous().reshape({-1}), g = got.to(at::kDouble).contiguous().reshape({-1});
  const bool f64 = want.scalar_type() == at::kDouble;
  const double tol = f64 ? 1e-12 : 2e-6;
  // below the smallest normal number, relative precision is lost in both
  const double tiny = f64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  int bad = 0;
  for (int64_t i = 0; i < w.numel() && bad < 5; ++i) {
    const double a = w.data_ptr<double>()[i], b = g.data_ptr<double>()[i];
    bool ok;
    if (std::isnan(a) || std::isnan(b)) ok = std::isnan(a) && std::isnan(b);
    else if (std::isinf(a) || std::isinf(b) || (a == 0 && b == 0)) ok = same_bits(a, b);
    else if (inexact(op)) ok = std::abs(a - b) <= tol * std::max({std::abs(a), std::abs(b), op == Op::reduce_sum ? 1.0 : 0.0}) + tiny ||
                              std::abs(a - b) <= sum_rounding(op, lane, want.scalar_type(), i);
    else ok = same_bits(a, b);
    if (!ok && (op == Op::maximum || op == Op::minimum) && a == 0 && b == 0) ok = true;  // which zero: see above
    if (!ok) {
      ++bad;
      std::string operands;
      for (const at::Tensor& x : lane.operands)
        if (x.dim() == 1) operands += " " + std::to_string(x.to(at::kDouble)[i].item<double>());
      ADD_FAILURE() << lane.what << " element " << i << ": aten " << a << ", " << generator << " " << b
                    << (operands.empty() ? "" : ", operands" + operands);
    }
  }
}

enum class Generator { cuda, llvm };

const char* generator_name(Generator g) { return g == Generator::cuda ? "cuda" : "llvm"; }

class LoopOp : public ::testing::TestWithParam<std::tuple<Op, Generator>> {
 protected:
  void SetUp() override { at::set_num_threads(1); }  // one emulated launch at a time
};

// `k`'s strided entry from the code generator, in each of its forms (the
// CUDA renderer's one element per thread and, for a `vectorizable`
// kernel, its four-lane vectors; LLVM's strided entry), and LLVM's flat
// entry: (what, function) pairs, or a failure.
struct Form {
  std::string what;
  loop::StridedFn strided = nullptr;
  loop::FlatFn flat = nullptr;
};
std::vector<Form> forms_of(const loop::Kernel& k, Generator g) {
  std::vector<Form> forms;
  if (g == Generator::cuda) {
    for (int width : {1, 4}) {
      if (width == 4 && !cuda::vectorizable(k)) continue;
      auto compiled = test_util::emulate(k, width);
      EXPECT_TRUE(compiled.ok()) << compiled.error().message;
      if (compiled.ok())
        forms.push_back({width == 4 ? "four-lane vector form" : "one element per thread", compiled->strided, nullptr});
    }
    return forms;
  }
  auto compiled = compile_kernel(k);
  EXPECT_TRUE(compiled.ok()) << compiled.error().message;
  if (!compiled.ok()) return forms;
  if (compiled->flat) forms.push_back({"flat entry", nullptr, compiled->flat});
  auto strided = compiled->strided_entry();
  EXPECT_TRUE(strided.ok()) << strided.error().message;
  if (strided.ok()) forms.push_back({"strided entry", *strided, nullptr});
  return forms;
}

// One kernel with every lane: pointwise (sizes {n}, each lane's operands
// repeated to the longest lane's length, rounded up to a multiple of 4) or
// a reduction over rows (sizes {rows, cols}, one value per row).
TEST_P(LoopOp, MatchesAtenInEveryDtypeAndOnSpecialValues) {
  const auto [op, generator] = GetParam();
  at::manual_seed(static_cast<int>(op));
  std::vector<Lane> lanes = lanes_of(op);
  ASSERT_FALSE(lanes.empty()) << loop::op_name(op) << " has no ATen reference in this test: add it to aten_pointwise or lanes_of";
  const bool reduction = loop::is_reduction(op) || op == Op::inner_count;
  loop::Kernel k;
  k.name = std::string("op_") + loop::op_name(op);
  if (reduction) {
    k.sizes = {lanes[0].operands[0].size(0), lanes[0].operands[0].size(1)};
    for (const Lane& lane : lanes) ASSERT_EQ(lane.operands[0].sizes(), lanes[0].operands[0].sizes());
    k.reduced_dims = 1;
  } else {
    int64_t n = 1;
    for (const Lane& lane : lanes)
      for (const at::Tensor& x : lane.operands) n = std::max(n, x.numel());
    n = (n + 3) / 4 * 4;
    k.sizes = {n};
    for (Lane& lane : lanes)
      for (at::Tensor& x : lane.operands) x = x.index({at::arange(n) % x.numel()}).contiguous();
    for (Lane& lane : lanes)
      if (!lane.operands.empty()) lane.expected = lane.expected.index({at::arange(n) % lane.expected.numel()});
      else lane.expected = lane.expected.expand({n}).contiguous();
  }
  // every buffer flat (full inputs, full or one-per-row outputs): LLVM makes its flat entry too
  k.contiguous_outputs = true;
  std::vector<at::Tensor> inputs;
  for (const Lane& lane : lanes) {
    std::vector<int> loads;
    for (const at::Tensor& x : lane.operands) {
      loop::Input in;
      in.dtype = x.scalar_type();
      in.layout = loop::Layout::full;
      in.inner = reduction;
      Expr e;
      e.op = Op::load;
      e.dtype = in.dtype;
      e.input = static_cast<int>(k.inputs.size());
      k.inputs.push_back(in);
      inputs.push_back(x);
      loads.push_back(k.add(e));
    }
    loop::Output out;
    out.expr = lane.expr(k, loads);
    out.dtype = k.exprs[static_cast<size_t>(out.expr)].dtype;
    out.full = !reduction;
    out.layout = reduction ? loop::Layout::row : loop::Layout::full;
    k.outputs.push_back(out);
  }
  ASSERT_TRUE(loop::verify(k).ok()) << loop::verify(k).error().message;
  const int rank = static_cast<int>(k.sizes.size());
  const std::vector<Form> forms = forms_of(k, generator);
  ASSERT_FALSE(forms.empty());
  for (const Form& form : forms) {
    std::vector<at::Tensor> outputs;
    std::vector<char*> ptrs;
    std::vector<int64_t> strides;
    for (const auto& o : k.outputs) {
      outputs.push_back(at::empty({k.sizes[0]}, at::TensorOptions().dtype(o.dtype)));
      ptrs.push_back(static_cast<char*>(outputs.back().data_ptr()));
      strides.push_back(1);
      if (rank == 2) strides.push_back(0);
    }
    for (const at::Tensor& x : inputs) {
      ptrs.push_back(static_cast<char*>(x.data_ptr()));
      for (int d = 0; d < rank; ++d) strides.push_back(x.stride(d));
    }
    if (form.flat) {
      form.flat(ptrs.data(), k.sizes[0], rank == 2 ? k.sizes[1] : 1);
    } else {
      form.strided(ptrs.data(), k.sizes.data(), strides.data());
    }
    for (size_t i = 0; i < lanes.size(); ++i) {
      SCOPED_TRACE(std::string(generator_name(generator)) + ", " + form.what);
      expect_matches(op, lanes[i], outputs[i], generator_name(generator), generator == Generator::llvm);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOp, LoopOp,
                         ::testing::Combine(::testing::ValuesIn(all_ops()), ::testing::Values(Generator::cuda, Generator::llvm)),
                         [](const ::testing::TestParamInfo<std::tuple<Op, Generator>>& info) {
                           return std::string(loop::op_name(std::get<0>(info.param))) + "_" +
                                  generator_name(std::get<1>(info.param));
                         });

// The table names every op once, and `op_name` reads it.
TEST(LoopOpTable, EveryOpHasOneRowAndAName) {
  std::set<std::string> names;
  for (const loop::OpInfo& info : loop::all_ops()) {
    EXPECT_EQ(&loop::info(info.op), &info);
    EXPECT_STREQ(loop::op_name(info.op), info.name);
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(info.arity == 0, info.kind == loop::OpKind::leaf) << info.name;
    EXPECT_EQ(info.identity != loop::Identity::none, info.kind == loop::OpKind::reduction) << info.name;
  }
  EXPECT_EQ(loop::all_ops().size(), static_cast<size_t>(loop::kLastOp) + 1);
}

// The CUDA renderer's spelling table covers each pointwise op in exactly
// the dtypes the op table lists, and spells integer arithmetic that wraps
// through the unsigned type ($U).
TEST(LoopOpTable, TheCudaSpellingsFollowTheOpTable) {
  for (const loop::OpInfo& info : loop::all_ops()) {
    if (info.kind != loop::OpKind::pointwise || info.op == Op::cast) continue;
    for (ScalarType t : kAll) {
      const char* spelling = cuda::spelling(info.op, t);
      EXPECT_EQ(spelling != nullptr, loop::computes_in(info.op, t)) << info.name << " " << c10::toString(t);
      if (spelling && (t == at::kInt || t == at::kLong)) {
        EXPECT_EQ(std::string(spelling).find("$U") != std::string::npos, info.integers_wrap) << info.name;
      }
    }
  }
}

// The lowering builds an expression only in a dtype the table lists for
// its op, with the table's result dtype (else the node goes to ATen).
TEST(LoopOpTable, TheLoweringBuildsOnlyWhatTheTableLists) {
  GroupBuilder b({4});
  const int l = b.constant(3, at::kLong), f = b.constant(2, at::kFloat), h = b.constant(1, at::kHalf);
  EXPECT_EQ(b.op(Op::div, at::kLong, {l, l}), -1);                // div: floats only
  EXPECT_EQ(b.op(Op::exp, at::kLong, {l}), -1);                   // exp: floats only
  EXPECT_EQ(b.op(Op::sub, at::kBool, {b.constant(1, at::kBool), b.constant(0, at::kBool)}), -1);
  EXPECT_EQ(b.op(Op::lt, at::kFloat, {f, f}), -1);                // a comparison gives bool
  EXPECT_EQ(b.op(Op::add, at::kFloat, {f, l}), -1);               // operands of one dtype
  EXPECT_GE(b.op(Op::lt, at::kBool, {f, f}), 0);
  EXPECT_GE(b.op(Op::reduce_argmax, at::kLong, {f}), 0);
  const int sum = b.op(Op::add, at::kHalf, {h, h});               // half computes in float32
  ASSERT_GE(sum, 0);
  EXPECT_EQ(b.kernel().exprs[static_cast<size_t>(sum)].dtype, at::kFloat);
  EXPECT_TRUE(loop::verify(b.kernel()).ok()) << loop::verify(b.kernel()).error().message;
}

// A kernel that breaks the table's rules is refused by both code generators.
TEST(LoopOpTable, KernelsAgainstTheTableAreRefused) {
  loop::Kernel k;
  k.name = "bad";
  k.sizes = {4};
  k.inputs.push_back({at::kLong, loop::Layout::full, false});
  const int x = k.add(Expr{Op::load, at::kLong, {}, 0});
  const int e = k.add(Expr{Op::exp, at::kLong, {x}});
  k.outputs.push_back({e, at::kLong, true, loop::Layout::full});
  auto checked = loop::verify(k);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().message, "loop kernel bad: v1 = exp: not computed in Long");
  auto rendered = cuda::render(k, "bad");
  ASSERT_FALSE(rendered.ok());
  EXPECT_EQ(rendered.error().message, checked.error().message);
  auto compiled = compile_kernel(k);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.error().message, checked.error().message);
  k.exprs[static_cast<size_t>(e)] = Expr{Op::add, at::kLong, {x}};
  EXPECT_EQ(loop::verify(k).error().message, "loop kernel bad: v1 = add: 1 operands, the op takes 2");
}

}  // namespace
}  // namespace tj::jit
