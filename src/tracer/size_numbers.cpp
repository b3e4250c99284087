// Sizes used as numbers (issue 43): a symbolic size that meets a tensor or
// a float (`x.sum() / x.shape[0]`, `x * len(x)`, `float(n)`,
// `1.0 / math.sqrt(n)`, `n ** -0.5`) becomes a graph input instead of a
// constant the guards pin: a 0-d int64 placeholder the compiled graph
// computes at each call from its tensor inputs' sizes (SizeInput, the size
// node as a graph::SizeExpr), flagged a Python number, so the arithmetic
// on it is symbolic_numbers.cpp's (Python's float64 rules, a number meeting
// a tensor as a wrapped scalar). One trace then serves every size.
//
// Where CPython could raise (a division by the size, its square root or
// log, a power of it), the fact that makes it safe is recorded as a size
// fact (`n != 0`, `n >= 0`, `n > 0`) through the number's `size_sign`: the
// size node it has the sign of. What a number cannot do (a branch on it, a
// shape made from a float) is data-dependent for the tracer: the runtime
// then traces the frame again with sizes specialized as before
// (FrameInputs::sizes_as_numbers) and keeps the trace that went further.
// Only sizes that read the graph inputs' own sizes qualify (the runtime
// evaluates them without running anything); a size of an intermediate is
// specialized as before.
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "graph/op_registry.h"
#include "graph/sym_ints.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

bool is_float_constant(const ValuePtr& v) { return v->is_constant() && PyFloat_CheckExact(v->obj.get()); }

bool is_int_constant(const ValuePtr& v) {
  return v->is_constant() && PyLong_CheckExact(v->obj.get());
}

// A number (Tensor.item(), a size) that is not an automatic dynamic int:
// those have their own bounds and retries (refuse_dynamic_ints).
bool plain_number(const ValuePtr& v) { return is_python_number(v) && !v->number()->dynamic_int; }

// A finite nonzero double as m * 2**e, m an odd int (|m| < 2**53).
std::optional<std::pair<int64_t, int>> odd_times_power_of_two(double c) {
  if (!std::isfinite(c) || c == 0) return std::nullopt;
  int e = 0;
  const double f = std::frexp(c, &e);  // c = f * 2**e, 0.5 <= |f| < 1: 53 bits
  auto m = static_cast<int64_t>(std::ldexp(f, 53));
  e -= 53;
  while (m % 2 == 0) {
    m /= 2;
    ++e;
  }
  return std::make_pair(m, e);
}

// The number `lhs <o> rhs` (o * or /, one of them a size, the other a
// float constant c = m * 2**e) as an exact true division a / b of ints
// (sizes or constants), which CPython's float result is the correctly
// rounded value of: n * c is (n * m) / 2**-e (or n * m * 2**e / 1), n / c
// for c = +-2**e is (+-n) / 2**e, c / n is (m * 2**e) / n or m / (n *
// 2**-e). While |a| < 2**53 (a fact size_quotient_call holds) the product
// n * m is exact in doubles, so CPython's n * c is a / b rounded once.
// nullopt for another constant (|m| > 2**20, 2**|e| beyond int64, a / c
// with m != +-1: the rounding of 1 / c would differ).
std::optional<std::pair<ValuePtr, ValuePtr>> float_constant_quotient(TraceContext cx, bc::BinaryOp o, const ValuePtr& lhs,
                                                                     const ValuePtr& rhs) {
  const bool size_left = lhs->is_symint();
  const ValuePtr& size = size_left ? lhs : rhs;
  const ValuePtr& other = size_left ? rhs : lhs;
  if (!size->is_symint() || !is_float_constant(other)) return std::nullopt;
  auto me = odd_times_power_of_two(PyFloat_AS_DOUBLE(other->obj.get()));
  if (!me) return std::nullopt;
  auto [m, e] = *me;
  auto constant = [](int64_t v) { return Value::constant_steal(PyLong_FromLongLong(v)); };
  auto times = [&](const ValuePtr& v, int64_t k) -> ValuePtr {
    bool ok = false;
    ValuePtr r = k == 1 ? v : symint_binary(cx, bc::BinaryOp::multiply, v, constant(k), ok);
    return k == 1 || ok ? r : nullptr;
  };
  if (o == bc::BinaryOp::true_divide && size_left) {  // n / c = n * (1 / c), exact for c = +-2**e only
    if (m != 1 && m != -1) return std::nullopt;
    e = -e;
  }
  if (std::abs(m) > (int64_t{1} << 20) || std::abs(e) > 62) return std::nullopt;
  if (o == bc::BinaryOp::multiply || size_left) {
    ValuePtr a = times(size, m);
    if (a && e >= 0) a = times(a, int64_t{1} << e);
    if (!a) return std::nullopt;
    return std::make_pair(a, constant(e >= 0 ? 1 : int64_t{1} << -e));
  }
  // c / n
  if (e >= 0) {
    if (std::abs(m) >= (int64_t{1} << (53 - std::min(e, 53)))) return std::nullopt;  // |m * 2**e| < 2**53
    return std::make_pair(constant(m * (int64_t{1} << e)), size);
  }
  ValuePtr b = times(size, int64_t{1} << -e);
  if (!b) return std::nullopt;
  return std::make_pair(constant(m), b);
}

}  // namespace

ValuePtr size_as_number(TraceContext cx, const ValuePtr& size) {
  if (!cx.shared().sizes_as_numbers || !size->is_symint()) return nullptr;
  if (auto it = cx.shared().size_number_of.find(size->node); it != cx.shared().size_number_of.end()) return it->second;
  auto input_of = [&](const graph::Node& n) -> std::optional<int> {
    auto it = cx.shared().placeholder_index.find(const_cast<graph::Node*>(&n));
    if (it == cx.shared().placeholder_index.end()) return std::nullopt;
    return it->second;
  };
  auto expr = graph::size_expr_of(*size->node, input_of);
  if (!expr) return nullptr;  // a size of an intermediate: specialized
  // The placeholder is passed the first input the expression reads (any
  // object would do: the compiled graph replaces it), under a source of its own.
  int first_input = -1;
  for (const auto& step : expr->steps)
    for (const auto* o : {&step.a, &step.b})
      if (first_input < 0 && o->kind == graph::SizeExpr::Operand::Kind::input_size) first_input = o->input;
  if (expr->result.kind == graph::SizeExpr::Operand::Kind::input_size) first_input = expr->result.input;
  if (first_input < 0 || static_cast<size_t>(first_input) >= cx.shared().input_sources.size()) return nullptr;
  auto source = std::make_shared<Source>(*cx.shared().input_sources[static_cast<size_t>(first_input)]);
  graph::TensorMeta meta = graph::TensorMeta::contiguous({}, c10::ScalarType::Long);
  meta.storage_id = cx.shared().graph->new_storage_id();
  graph::Node* node = cx.shared().graph->placeholder("size_number", meta);
  node->meta().loc = cx.current_loc();
  const int index = static_cast<int>(cx.shared().input_sources.size());
  cx.shared().placeholder_index[node] = index;
  cx.shared().input_sources.push_back(source);
  cx.shared().size_inputs.emplace_back(index, size->node);
  ValuePtr v = Value::tensor(node);
  v->obj = PyRef::borrow(reinterpret_cast<PyObject*>(&PyLong_Type));
  NumberPayload payload;
  payload.size_sign = size->node;
  v->payload = std::move(payload);
  cx.shared().size_number_of[size->node] = v;
  return v;
}

bool size_fact_holds(TraceContext cx, SizeNumberUse use, const ValuePtr& v) {
  graph::Node* sign = is_python_number(v) ? v->number()->size_sign : nullptr;
  if (!sign || !sign->meta().sym_value) return false;
  ValuePtr size = Value::symint(sign, *sign->meta().sym_value);
  ValuePtr zero = Value::constant_steal(PyLong_FromLong(0));
  const int op = use == SizeNumberUse::nonzero ? Py_NE : use == SizeNumberUse::nonnegative ? Py_GE : Py_GT;
  bool handled = false;
  ValuePtr answer = symint_compare(cx, op, size, zero, handled);
  return handled && answer->obj.get() == Py_True;
}

ValuePtr size_number_binary(TraceContext cx, bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs,
                                                   bool& handled) {
  using Op = bc::BinaryOp;
  handled = false;
  if (!cx.shared().sizes_as_numbers || op.info->number_arithmetic == false) return nullptr;
  const ValuePtr& other = lhs->is_symint() ? rhs : lhs;
  const bool both = lhs->is_symint() && rhs->is_symint();
  const Op o = op.op();
  const bool add_sub_mul = o == Op::add || o == Op::subtract || o == Op::multiply;
  bool fits = false;
  if (!both && other->is_tensor() && !is_python_number(other)) {
    // A tensor with a size: as with the int it is (a wrapped scalar).
    const c10::ScalarType dtype = other->meta().dtype;
    // ** is not: eager's pow(Tensor, Scalar) takes shortcuts (x*x for 2) a tensor exponent does not.
    fits = (add_sub_mul || o == Op::true_divide || o == Op::floor_divide || o == Op::remainder) &&
           !c10::isComplexType(dtype);
  } else if (!both && plain_number(other)) {
    fits = add_sub_mul || o == Op::true_divide;
  } else if (!both && is_float_constant(other)) {
    fits = add_sub_mul || o == Op::true_divide;
    if (o == Op::power && lhs->is_symint()) {
      // n ** c: Python raises for n == 0 and c < 0, overflows for huge
      // powers: n > 0 (a fact) and a modest exponent.
      const double c = PyFloat_AS_DOUBLE(rhs->obj.get());
      fits = std::isfinite(c) && std::fabs(c) <= 16 && PyLong_AsLongLong(lhs->obj.get()) > 0;
    }
  } else if (o == Op::true_divide && (both || is_int_constant(other))) {
    fits = true;  // n / 2, n / m: a float
  } else if (o == Op::power && lhs->is_symint() && is_int_constant(rhs) && PyLong_AsLongLong(lhs->obj.get()) > 0) {
    // n ** -k: CPython's int power with a negative exponent is float(n) **
    // float(-k) (ZeroDivisionError for n == 0: the fact n > 0 below).
    int overflow = 0;
    const long long k = PyLong_AsLongLongAndOverflow(rhs->obj.get(), &overflow);
    if (overflow || k >= 0 || k < -16) return nullptr;  // k >= 0: symint_power's, or a huge int
    bool ok = false;
    ValuePtr as_float = size_number_binary(cx, op, lhs, Value::constant_steal(PyFloat_FromDouble(static_cast<double>(k))), ok);
    handled = ok;
    return as_float;
  }
  if (!fits) return nullptr;
  // A division by a size that is 0 raises in Python: left to the constants.
  if (o == Op::true_divide && rhs->is_symint() && PyLong_AsLongLong(rhs->obj.get()) == 0) return nullptr;
  ValuePtr a = lhs->is_symint() ? size_as_number(cx, lhs) : lhs;
  ValuePtr b = a && rhs->is_symint() ? size_as_number(cx, rhs) : rhs;
  if (!a || !b) return nullptr;
  handled = true;
  ValuePtr r = cx.number_binary_op(op, a, b);
  // A true division of ints: math.floor/ceil/trunc and int() of it are sizes (size_quotient_call).
  auto plain_int = [](const ValuePtr& v) {
    int overflow = 0;
    return v->is_symint() || (is_int_constant(v) && (PyLong_AsLongLongAndOverflow(v->obj.get(), &overflow), overflow == 0));
  };
  if (r && is_python_number(r) && o == Op::true_divide && plain_int(lhs) && plain_int(rhs)) {
    r->number()->quotient_num = lhs;
    r->number()->quotient_den = rhs;
  } else if (r && is_python_number(r) && !both && (o == Op::multiply || o == Op::true_divide)) {
    // n * 0.5, 1.5 * n, n / 2.0, 100.0 / n: a float constant is m * 2**e
    // exactly, so the product (quotient) is CPython's a / b of two ints.
    if (auto q = float_constant_quotient(cx, o, lhs, rhs)) {
      r->number()->quotient_num = q->first;
      r->number()->quotient_den = q->second;
    }
  }
  return r;
}

ValuePtr size_number_call(TraceContext cx, PyObject* fn, const std::vector<ValuePtr>& args, bool& handled) {
  handled = false;
  if (args.size() == 1 && is_python_number(args[0]) && args[0]->number()->quotient_num)
    return size_quotient_call(cx, fn, args[0], handled);
  if (args.size() != 1 || !args[0]->is_symint() || !cx.shared().sizes_as_numbers) return nullptr;
  const long long n = PyLong_AsLongLong(args[0]->obj.get());
  const bool is_float = fn == reinterpret_cast<PyObject*>(&PyFloat_Type);
  const bool is_sqrt = fn == cached_module_attr("math", "sqrt");
  const bool is_log = fn == cached_module_attr("math", "log");
  // Where CPython raises (sqrt of a negative, log of 0), the constant does.
  if (!(is_float || (is_sqrt && n >= 0) || (is_log && n > 0))) return nullptr;
  ValuePtr number = size_as_number(cx, args[0]);
  if (!number) return nullptr;
  return cx.number_function(fn, {number}, handled);
}

namespace {

// round(a / b) (a true division of ints, b != 0 held by the division):
// Python rounds the float half to even. While |a| < 2**52 (a fact) and
// |b| < 2**52, that is the exact quotient rounded half to even: a quotient
// that is not a half-integer lies >= 1/(2|b|) from one, more than the
// float's rounding error (<= |a / b| * 2**-53), and a half-integer is
// exact. With b > 0 (b, a negated for b < 0: facts on b's sign), u = (2a +
// b) // 2b rounds half up; at a tie ((2a + b) % 2b == 0) the even one of
// u - 1 and u is u - u % 2. tie is 1 - (t + 2b - 1) // 2b for 0 <= t < 2b.
ValuePtr size_quotient_round(TraceContext cx, ValuePtr a, ValuePtr b, bool& handled) {
  handled = false;
  constexpr int64_t kExact = int64_t{1} << 52;
  if (!size_holds(cx, Py_LT, a, kExact) || !size_holds(cx, Py_GT, a, -kExact)) return nullptr;
  if (!size_holds(cx, Py_LT, b, kExact) || !size_holds(cx, Py_GT, b, -kExact)) return nullptr;
  auto constant = [](int64_t v) { return Value::constant_steal(PyLong_FromLongLong(v)); };
  bool ok = true;
  auto apply = [&](bc::BinaryOp op, const ValuePtr& x, const ValuePtr& y) -> ValuePtr {
    if (!ok || !x || !y) return ok = false, nullptr;
    bool done = false;
    ValuePtr r = symint_binary(cx, op, x, y, done);
    if (!done && !x->is_symint() && !y->is_symint()) {  // two constants (|values| < 2**54): Python's int arithmetic
      PyRef v = PyRef::steal(op == bc::BinaryOp::add           ? PyNumber_Add(x->obj.get(), y->obj.get())
                             : op == bc::BinaryOp::subtract    ? PyNumber_Subtract(x->obj.get(), y->obj.get())
                             : op == bc::BinaryOp::multiply    ? PyNumber_Multiply(x->obj.get(), y->obj.get())
                             : op == bc::BinaryOp::floor_divide ? PyNumber_FloorDivide(x->obj.get(), y->obj.get())
                                                                : PyNumber_Remainder(x->obj.get(), y->obj.get()));
      if (v) return Value::constant(v.get());
      PyErr_Clear();
    }
    ok = done && r;
    return ok ? r : nullptr;
  };
  if (!size_holds(cx, Py_GT, b, 0)) {  // b < 0 (b != 0): a / b is (-a) / (-b)
    a = apply(bc::BinaryOp::subtract, constant(0), a);
    b = apply(bc::BinaryOp::subtract, constant(0), b);
  }
  ValuePtr two_b = apply(bc::BinaryOp::multiply, b, constant(2));
  ValuePtr numerator = apply(bc::BinaryOp::add, apply(bc::BinaryOp::multiply, a, constant(2)), b);
  ValuePtr u = apply(bc::BinaryOp::floor_divide, numerator, two_b);
  ValuePtr t = apply(bc::BinaryOp::remainder, numerator, two_b);
  ValuePtr not_tie = apply(bc::BinaryOp::floor_divide,
                           apply(bc::BinaryOp::subtract, apply(bc::BinaryOp::add, t, two_b), constant(1)), two_b);
  ValuePtr tie = apply(bc::BinaryOp::subtract, constant(1), not_tie);
  ValuePtr r = apply(bc::BinaryOp::subtract, u, apply(bc::BinaryOp::multiply, tie, apply(bc::BinaryOp::remainder, u, constant(2))));
  handled = ok && r;
  return handled ? r : nullptr;
}

}  // namespace

ValuePtr size_quotient_call(TraceContext cx, PyObject* fn, const ValuePtr& quotient, bool& handled) {
  handled = false;
  const bool down = fn == cached_module_attr("math", "floor"), up = fn == cached_module_attr("math", "ceil");
  const bool toward_zero = fn == reinterpret_cast<PyObject*>(&PyLong_Type) || fn == cached_module_attr("math", "trunc");
  const ValuePtr a = quotient->number()->quotient_num, b = quotient->number()->quotient_den;
  if (fn == cached_module_attr("builtins", "round")) return size_quotient_round(cx, a, b, handled);
  if (!down && !up && !toward_zero) return nullptr;
  // floor(a / b) is a // b while |a| < 2**53: CPython's a / b is correctly
  // rounded, and a quotient that is not an integer lies >= 1/|b| from the
  // next one, more than its rounding error (<= |a / b| * 2**-53). The
  // division itself already holds the fact b != 0.
  constexpr int64_t kExact = int64_t{1} << 53;
  if (!size_holds(cx, Py_LT, a, kExact) || !size_holds(cx, Py_GT, a, -kExact)) return nullptr;
  // trunc is floor where a and b have the same sign (or a is 0), else ceil: facts on their signs.
  const bool floor = down || (toward_zero && size_holds(cx, Py_GE, a, 0) == size_holds(cx, Py_GT, b, 0));
  auto negated = [&](const ValuePtr& v) -> ValuePtr {
    if (!v->is_symint()) return Value::constant_steal(PyLong_FromLongLong(-PyLong_AsLongLong(v->obj.get())));  // |v| < 2**53
    bool ok = false;
    ValuePtr r = symint_binary(cx, bc::BinaryOp::subtract, Value::constant_steal(PyLong_FromLong(0)), v, ok);
    return ok ? r : nullptr;
  };
  bool ok = false;
  if (floor) {
    ValuePtr r = symint_binary(cx, bc::BinaryOp::floor_divide, a, b, ok);
    handled = ok && r;
    return handled ? r : nullptr;
  }
  ValuePtr minus_a = negated(a);  // ceil(a / b) is -((-a) // b)
  ValuePtr q = minus_a ? symint_binary(cx, bc::BinaryOp::floor_divide, minus_a, b, ok) : nullptr;
  ValuePtr r = ok && q ? negated(q) : nullptr;
  handled = r != nullptr;
  return r;
}

ValuePtr full_of_number(InstructionTranslator& t, const ValuePtr& like, const std::vector<ValuePtr>& args,
                        const Kwargs& kwargs, bool& handled) {
  handled = false;
  if (args.size() != 2 || !is_python_number(args[1]) || args[1]->number()->dynamic_int) return nullptr;
  const ValuePtr& number = args[1];
  // The dtype: given, else the tensor's (new_full), else the number's kind (full).
  c10::ScalarType dtype = like ? like->meta().dtype
                          : number->obj.get() == reinterpret_cast<PyObject*>(&PyBool_Type) ? c10::ScalarType::Bool
                          : number->obj.get() == reinterpret_cast<PyObject*>(&PyLong_Type) ? c10::ScalarType::Long
                                                                                             : default_dtype();
  for (const auto& [k, v] : kwargs) {
    PyObject* o = v->is_constant() ? v->obj.get() : nullptr;
    if (!o) return nullptr;
    if (k == "dtype") {
      if (auto d = as_dtype(o)) dtype = *d;
      else if (o != Py_None) return nullptr;
    } else if (k == "device") {
      auto dev = o == Py_None ? std::nullopt : as_device(o);
      const bool cpu = (o == Py_None && !(like && !like->meta().device.is_cpu())) || (dev && dev->is_cpu()) ||
                       (PyUnicode_Check(o) && std::string(PyUnicode_AsUTF8(o)) == "cpu");
      if (!cpu) return nullptr;
    } else if (!((k == "requires_grad" || k == "pin_memory") && (o == Py_False || o == Py_None)) &&
               !(k == "layout" && o == Py_None)) {
      return nullptr;
    }
  }
  if (like && !like->meta().device.is_cpu()) return nullptr;
  handled = true;
  // As ATen's full: the fill value cast to the dtype (c10's checked
  // conversion: 300 in int8 or 1e300 in float32 raises), in every element.
  // A number computed from sizes is far within float32's range.
  const bool from_sizes = number->number()->size_sign || number->number()->quotient_num;
  if (!number_read_as(t, number, dtype, /*checked=*/!from_sizes, like ? "Tensor.new_full" : "torch.full"))
    return nullptr;
  ValuePtr value = call_aten(t, "aten::_to_copy", {number}, {{"dtype", Value::constant_steal(dtype_object(dtype))}});
  ValuePtr filled = value ? call_aten(t, "aten::expand", {value, args[0]}) : nullptr;
  return filled ? call_aten(t, "aten::clone", {filled},
                            {{"memory_format", Value::constant(cached_module_attr("torch", "contiguous_format"))}})
                : nullptr;
}

void note_specialized(TraceContext cx, const ValuePtr& size) {
  for (const auto& [fact, why] : cx.shared().specializations)
    if (fact < cx.shared().size_facts.size() && cx.shared().size_facts[fact].first == size->node) return;  // once per size node
  auto input_of = [&](const graph::Node& n) -> std::optional<int> {
    auto it = cx.shared().placeholder_index.find(const_cast<graph::Node*>(&n));
    if (it == cx.shared().placeholder_index.end()) return std::nullopt;
    return it->second;
  };
  std::string what = "a size of an intermediate tensor";
  if (auto expr = graph::size_expr_of(*size->node, input_of))
    what = graph::print_size_expr(*expr, [&](int i) {
      return static_cast<size_t>(i) < cx.shared().input_sources.size() ? cx.shared().input_sources[static_cast<size_t>(i)]->to_string() : "?";
    });
  std::string why = cx.shared().specialize_why;
  if (why.empty() && cx.current_instruction()) {
    switch (cx.current_instruction()->code()) {
      case bc::Opcode::RETURN_VALUE: why = "returned as an int"; break;
      case bc::Opcode::BINARY_SUBSCR:
      case bc::Opcode::STORE_SUBSCR: why = "used as an index or key"; break;
      case bc::Opcode::FORMAT_VALUE:
      case bc::Opcode::BUILD_STRING: why = "formatted into a string"; break;
      case bc::Opcode::COMPARE_OP:
      case bc::Opcode::IS_OP:
      case bc::Opcode::CONTAINS_OP: why = "compared with something other than an int"; break;
      case bc::Opcode::BINARY_OP: {
        auto op = bc::decode_binary_op(cx.current_instruction()->arg);
        why = "operator " + (op ? std::string(op->symbol()) : std::string("?")) + " with an operand a size does not stay symbolic with";
        break;
      }
      default: why = "used as a Python int by " + std::string(bc::info(cx.current_instruction()->code()).name); break;
    }
  }
  const graph::SourceLoc loc = cx.current_loc();
  cx.shared().specializations.emplace_back(
      cx.shared().size_facts.size() - 1,
      Unsupported{what + " == " + std::to_string(PyLong_AsLongLong(size->obj.get())) + " specialized because " + why,
                  loc.file, loc.line});
}

void finish_size_inputs(TraceContext cx, TraceResult& result) {
  auto input_of = [&](const graph::Node& n) -> std::optional<int> {
    auto it = cx.shared().placeholder_index.find(const_cast<graph::Node*>(&n));
    if (it == cx.shared().placeholder_index.end()) return std::nullopt;
    return it->second;
  };
  for (const auto& [index, node] : cx.shared().size_inputs) {
    SizeInput in;
    in.index = index;
    auto expr = graph::size_expr_of(*node, input_of);
    assert(expr.ok() && "a size input reads graph inputs' sizes (checked when it was made; duck sizing keeps it)");
    if (!expr) continue;
    in.expr = std::move(*expr);
    in.value = node->meta().sym_value.value_or(0);
    in.text = graph::print_size_expr(in.expr, [&](int i) {
      return static_cast<size_t>(i) < cx.shared().input_sources.size() ? cx.shared().input_sources[static_cast<size_t>(i)]->to_string()
                                                                   : "?";
    });
    if (const auto& loc = node->meta().loc) in.where = loc->file + ":" + std::to_string(loc->line);
    result.size_inputs.push_back(std::move(in));
  }
}

}  // namespace tj::tracer
