// The loop IR's schedule, verifier and text form; see loop_ir.h (the ops
// themselves: loop_ops.cpp).
#include "jit/loop_ir.h"

#include <algorithm>
#include <string>
#include <cstring>
#include <map>
#include <tuple>
#include <sstream>

namespace tj::jit::loop {

bool has_flat_entry(const Kernel& kernel) {
  if (!kernel.contiguous_outputs) return false;
  for (const Input& in : kernel.inputs)
    if (in.layout == Layout::other) return false;
  return true;
}

bool is_shifted_by_own_max(const Kernel& kernel, int i) {
  const Expr& sub = kernel.exprs[i];
  if (sub.op != Op::sub) return false;
  const Expr& max = kernel.exprs[sub.args[1]];
  return max.op == Op::reduce_max && max.args[0] == sub.args[0];
}

Status verify(const Kernel& k) {
  auto fail = [&](size_t i, const std::string& why) -> Status {
    return Error{"loop kernel " + k.name + ": v" + std::to_string(i) + " = " + op_name(k.exprs[i].op) + ": " + why,
                 ErrorKind::internal};
  };
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    if (static_cast<size_t>(e.op) > static_cast<size_t>(kLastOp)) return fail(i, "not an op");
    const OpInfo& op = info(e.op);
    if (static_cast<int>(e.args.size()) != op.arity)
      return fail(i, std::to_string(e.args.size()) + " operands, the op takes " + std::to_string(op.arity));
    for (int a : e.args)
      if (a < 0 || static_cast<size_t>(a) >= i) return fail(i, "reads v" + std::to_string(a) + ", not an earlier value");
    if (e.op == Op::load && (e.input < 0 || static_cast<size_t>(e.input) >= k.inputs.size() ||
                             k.inputs[static_cast<size_t>(e.input)].dtype != e.dtype))
      return fail(i, "loads no input of its dtype");
    if (op.result == ResultRule::given) {
      if (!dtype_bit(e.dtype)) return fail(i, std::string("no ") + c10::toString(e.dtype) + " in the loop IR");
      continue;
    }
    const size_t first = op.condition_first ? 1 : 0;
    const c10::ScalarType t = e.args.size() > first ? k.exprs[static_cast<size_t>(e.args[first])].dtype : e.dtype;
    if (!computes_in(e.op, t)) return fail(i, std::string("not computed in ") + c10::toString(t));
    for (size_t a = 0; a < e.args.size(); ++a) {
      const c10::ScalarType want = op.condition_first && a == 0 ? c10::ScalarType::Bool : t;
      if (k.exprs[static_cast<size_t>(e.args[a])].dtype != want)
        return fail(i, "operand " + std::to_string(a) + " is not " + c10::toString(want));
    }
    if (e.dtype != result_dtype(e.op, t))
      return fail(i, std::string("its result is ") + c10::toString(result_dtype(e.op, t)) + ", not " +
                         c10::toString(e.dtype));
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const Output& out = k.outputs[o];
    if (out.expr < 0 || static_cast<size_t>(out.expr) >= k.exprs.size() ||
        k.exprs[static_cast<size_t>(out.expr)].dtype != out.dtype ||
        (out.in_place_of >= 0 && static_cast<size_t>(out.in_place_of) >= k.inputs.size()))
      return Error{"loop kernel " + k.name + ": out" + std::to_string(o) + " stores no value of its dtype",
                   ErrorKind::internal};
  }
  return ok_status();
}

namespace {

// Marks the inner expressions `roots` need in a loop, stopping at `given` ones.
std::vector<bool> cone(const Kernel& k, const Schedule& s, const std::vector<int>& roots,
                       const std::vector<bool>& given) {
  std::vector<bool> needed(k.exprs.size(), false);
  for (int r : roots) needed[r] = true;
  for (size_t i = k.exprs.size(); i-- > 0;)
    if (needed[i] && s.inner[i] && !given[i])
      for (int a : k.exprs[i].args) needed[a] = true;
  return needed;
}

void plan_loops(const Kernel& k, Schedule& s) {
  const size_t n = k.exprs.size();
  s.plans.assign(s.loops, LoopPlan{});
  std::vector<std::vector<int>> roots(s.loops);
  for (size_t i = 0; i < n; ++i)
    if (is_reduction(k.exprs[i].op)) {
      s.plans[s.loop[i] - 1].reductions.push_back(static_cast<int>(i));
      roots[s.loop[i] - 1].push_back(k.exprs[i].args[0]);
    }
  if (k.reduced_dims > 0)
    for (size_t o = 0; o < k.outputs.size(); ++o)
      if (k.outputs[o].full) {
        s.plans[s.store_loop[o]].stores.push_back(static_cast<int>(o));
        roots[s.store_loop[o]].push_back(k.outputs[o].expr);
      }
  for (int p = 0; p < s.loops; ++p) {
    LoopPlan& plan = s.plans[p];
    std::vector<bool> given(n, false);
    plan.needed = cone(k, s, roots[p], given);
    for (int o : plan.stores) {
      // the latest costly expression of this output an earlier loop computes
      std::vector<bool> mine = cone(k, s, {k.outputs[o].expr}, given);
      for (int e = static_cast<int>(n) - 1; e >= 0; --e) {
        if (!mine[e] || !s.inner[e] || !is_costly(k.exprs[e].op) || k.exprs[e].dtype != k.outputs[o].dtype)
          continue;
        int earlier = -1;
        for (int q = p - 1; q >= 0 && earlier < 0; --q)
          if (s.plans[q].needed[e]) earlier = q;
        if (earlier < 0) continue;
        s.plans[earlier].spill_stores.emplace_back(e, o);
        plan.spill_loads.emplace_back(e, o);
        given[e] = true;
        break;
      }
    }
    if (!plan.spill_loads.empty()) plan.needed = cone(k, s, roots[p], given);
  }
}

}  // namespace

Schedule schedule(const Kernel& k) {
  Schedule s;
  const size_t n = k.exprs.size();
  s.inner.assign(n, false);
  s.loop.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Expr& e = k.exprs[i];
    if (e.op == Op::load) {
      s.inner[i] = k.inputs[e.input].inner;
      continue;
    }
    int ready = 0;
    bool inner = false;
    for (int a : e.args) {
      ready = std::max(ready, s.loop[a]);
      inner = inner || s.inner[a];
    }
    if (is_reduction(e.op)) {
      s.loop[i] = ready + 1;
      s.loops = std::max(s.loops, ready + 1);
    } else {
      s.loop[i] = ready;
      s.inner[i] = inner;
    }
  }
  for (const Output& o : k.outputs) {
    int loop = s.loop[o.expr];
    if (o.full && k.reduced_dims > 0) s.loops = std::max(s.loops, loop + 1);
    s.store_loop.push_back(loop);
  }
  plan_loops(k, s);
  return s;
}

void deduplicate(Kernel& k) {
  // constants by their bits: NaN must be one key (and not equal to every other)
  std::map<std::tuple<Op, c10::ScalarType, std::vector<int>, int, uint64_t>, int> seen;
  std::vector<int> now(k.exprs.size());
  std::vector<Expr> kept;
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    Expr e = k.exprs[i];
    for (int& a : e.args) a = now[a];
    uint64_t bits;
    std::memcpy(&bits, &e.value, sizeof bits);
    auto key = std::make_tuple(e.op, e.dtype, e.args, e.input, bits);
    auto [it, fresh] = seen.try_emplace(key, static_cast<int>(kept.size()));
    if (fresh) kept.push_back(std::move(e));
    now[i] = it->second;
  }
  k.exprs = std::move(kept);
  for (Output& o : k.outputs) o.expr = now[o.expr];
}

namespace {
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::full: return "full";
    case Layout::row: return "row";
    case Layout::col: return "col";
    case Layout::scalar: return "scalar";
    case Layout::other: return "strided";
  }
  return "?";
}
}  // namespace

std::string print_kernel(const Kernel& k, bool with_name) {
  std::ostringstream os;
  os.precision(17);
  os << "kernel";
  if (with_name) os << " " << k.name;
  // the machine code reads sizes at run time: the canonical form keeps only the rank
  if (with_name) {
    os << " sizes=[";
    for (size_t i = 0; i < k.sizes.size(); ++i) os << (i ? ", " : "") << k.sizes[i];
    os << "]";
  }
  os << " rank=" << k.sizes.size();
  if (k.reduced_dims) os << " reduced_dims=" << k.reduced_dims;
  os << (k.contiguous_outputs ? " contiguous_outputs" : "")
     << (k.relu_plus_one ? " relu_plus_one" : "") << "\n";
  for (size_t i = 0; i < k.inputs.size(); ++i)
    os << "  in" << i << ": " << c10::toString(k.inputs[i].dtype) << " " << layout_name(k.inputs[i].layout)
       << (k.reduced_dims && k.inputs[i].inner ? " inner" : "") << "\n";
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    os << "  v" << i << ": " << c10::toString(e.dtype) << " = " << op_name(e.op);
    if (e.op == Op::load) os << " in" << e.input;
    if (e.op == Op::constant) os << " " << e.value;
    for (int a : e.args) os << " v" << a;
    os << "\n";
  }
  for (size_t i = 0; i < k.outputs.size(); ++i)
    os << "  out" << i << ": " << c10::toString(k.outputs[i].dtype) << " " << layout_name(k.outputs[i].layout)
       << (k.reduced_dims && !k.outputs[i].full ? " per-row" : "")
       << (k.outputs[i].in_place_of >= 0 ? " into in" + std::to_string(k.outputs[i].in_place_of) : "") << " = v"
       << k.outputs[i].expr << "\n";
  return os.str();
}

}  // namespace tj::jit::loop
