// Python numbers that come from `Tensor.item()` and stay in the graph.
//
// With `tracejit.config.capture_scalar_outputs = True` (and always inside
// torch.optim, whose Adam/AdamW read their step count with `.item()` and
// only compute with it; and by default speculatively, issue 42: a trace
// that then stops anywhere is traced again breaking at the first read,
// FrameInputs::speculate_scalar_reads), `t.item()` does not break the
// graph: it is a 0-d
// node holding the number as Python holds it (float64 for floating
// tensors, int64 for integers, bool), a tensor value with a
// NumberPayload whose `obj` is float/int/bool (so type() and isinstance
// see a number). Python arithmetic on it follows Python's rules, in the
// graph: float64 + - * / ** //, % with Python constants or other numbers
// (a Python float is an IEEE double, so the values are the ones CPython
// computes), math.sqrt/exp/log, float()/int(), unary minus; a number
// meeting a real tensor acts as the Python scalar would (a wrapped number:
// it does not promote the tensor). `addcdiv_`/`addcmul_` with `value=` a
// number are the same kernels' arithmetic spelled with a 0-d tensor.
//
// What needs the value itself (a branch, a shape, a key, a format, any
// other Python call) is data-dependent: the graph breaks there. A number
// that leaves the graph (returned, live at a break) is made a Python
// number again after it (`.item()` of the graph output).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/dead_results.h"
#include "tracer/number_facts.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

namespace {

PyObject* number_type_for(c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Bool) return reinterpret_cast<PyObject*>(&PyBool_Type);
  if (c10::isIntegralType(dtype, false)) return reinterpret_cast<PyObject*>(&PyLong_Type);
  return reinterpret_cast<PyObject*>(&PyFloat_Type);
}

ValuePtr as_number(ValuePtr v) {
  if (!v) return v;
  if (!v->number()) v->payload = NumberPayload{};  // one already a number keeps its origin
  v->obj = PyRef::borrow(number_type_for(v->meta().dtype));
  return v;
}

bool is_float_number(const ValuePtr& v) {
  if (is_python_number(v)) return v->obj.get() == reinterpret_cast<PyObject*>(&PyFloat_Type);
  return v->is_constant() && PyFloat_Check(v->obj.get());
}

bool is_int_like(const ValuePtr& v) {
  if (is_python_number(v)) return v->obj.get() != reinterpret_cast<PyObject*>(&PyFloat_Type);
  return v->is_constant() && PyLong_Check(v->obj.get());
}

ValuePtr dtype_value(c10::ScalarType dtype) { return Value::constant_steal(dtype_object(dtype)); }

const DynamicIntOrigin* origin_of(const ValuePtr& v) { return v && v->number() ? v->number()->dynamic_int.get() : nullptr; }

// A bound on |v| for the overflow check of dynamic ints: the origin's, a
// constant's own, unknown (inf) for other numbers.
double magnitude(const ValuePtr& v) {
  if (const auto* o = origin_of(v)) return o->bound;
  if (v->is_constant() && PyLong_Check(v->obj.get())) return std::fabs(PyLong_AsDouble(v->obj.get()));
  if (v->is_constant() && PyFloat_Check(v->obj.get())) return std::fabs(PyFloat_AS_DOUBLE(v->obj.get()));
  return std::numeric_limits<double>::infinity();
}

// An int read from a tensor (or computed from one): its magnitude bound;
// negative for other values. Constants and other numbers: their own
// magnitude, unknown (infinity) for numbers not tracked.
double read_int_magnitude(const ValuePtr& v) { return is_python_number(v) ? v->number()->int_magnitude : -1; }
double int_operand_magnitude(const ValuePtr& v) {
  if (read_int_magnitude(v) >= 0) return read_int_magnitude(v);
  if (v->is_constant() && PyBool_Check(v->obj.get())) return 1;
  if (v->is_constant() && PyLong_Check(v->obj.get())) return std::fabs(PyLong_AsDouble(v->obj.get()));
  return std::numeric_limits<double>::infinity();
}
constexpr double kInt64Range = 0x1p63;

// The magnitude bound of an int read from a tensor of `dtype` (-1 for a float).
double read_magnitude_of(c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Bool) return 1;
  if (!c10::isIntegralType(dtype, false)) return -1;
  if (dtype == c10::ScalarType::Long) return std::numeric_limits<double>::infinity();
  return std::ldexp(1.0, 8 * static_cast<int>(c10::elementSize(dtype)));  // loose for signed types
}
constexpr double kExactInDouble = 0x1p53;  // ints a double holds exactly

ValuePtr with_int_magnitude(ValuePtr r, double m) {
  if (r && r->number()) r->number()->int_magnitude = m;
  return r;
}

// `r` computed from `a` and `b` by `op`, one of them a dynamic int: it
// depends on their sources, with magnitude at most `bound`; computed from
// one input's expression and a constant, it extends that expression.
ValuePtr with_origin(ValuePtr r, bc::BinaryOp op, const ValuePtr& a, const ValuePtr& b, double bound) {
  if (!r) return r;
  auto o = std::make_shared<DynamicIntOrigin>();
  for (const ValuePtr& v : {a, b})
    if (const auto* from = origin_of(v)) o->sources.insert(o->sources.end(), from->sources.begin(), from->sources.end());
  o->bound = bound;
  o->expr = arith_expr(op, a, b);
  r->number()->dynamic_int = std::move(o);
  return r;
}

// `r` = a one-argument step on the dynamic number `v` (unary minus, a
// call): the same origin, its expression extended.
ValuePtr with_step(ValuePtr r, const ValuePtr& v, NumberStep step, const std::string& text) {
  const DynamicIntOrigin* from = origin_of(v);
  if (!r || !from) return r;
  auto o = std::make_shared<DynamicIntOrigin>(*from);
  o->expr = from->expr ? extend_expr(*from->expr, std::move(step), text) : nullptr;
  r->number()->dynamic_int = std::move(o);
  return r;
}

// A 0-d float64 node of a number or constant (Python's float()).
ValuePtr to_double(InstructionTranslator& t, const ValuePtr& v) {
  if (v->is_constant()) {
    PyObject* f = PyNumber_Float(v->obj.get());
    if (!f) return t.unsupported("float() of a " + v->type_name()), nullptr;  // it clears a TypeError/ValueError, names others
    return call_aten(t, "aten::scalar_tensor", {Value::constant_steal(f)}, {{"dtype", dtype_value(c10::ScalarType::Double)}});
  }
  if (v->meta().dtype == c10::ScalarType::Double) return v;
  return call_aten(t, "aten::_to_copy", {v}, {{"dtype", dtype_value(c10::ScalarType::Double)}});
}

// A float or int constant as a double; nullopt for other values and ints
// beyond a double's range.
std::optional<double> constant_double(const ValuePtr& v) {
  if (!v->is_constant() || !(PyFloat_CheckExact(v->obj.get()) || PyLong_CheckExact(v->obj.get()))) return std::nullopt;
  const double d = PyFloat_AsDouble(v->obj.get());
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();  // an OverflowError for a huge int: no double
    return std::nullopt;
  }
  return d;
}

// The size node `a op b` has the sign of, when one of them is a number
// from sizes (size_numbers.cpp) and the other a positive constant (or, for
// a power, any constant: the base's fact made it positive).
graph::Node* sign_through(bc::BinaryOp op, const ValuePtr& a, const ValuePtr& b) {
  auto sign = [](const ValuePtr& v) { return is_python_number(v) ? v->number()->size_sign : nullptr; };
  auto positive = [](const ValuePtr& v) { return constant_double(v).value_or(0) > 0; };
  if (op == bc::BinaryOp::power) return b->is_constant() ? sign(a) : nullptr;
  if (op == bc::BinaryOp::multiply) return sign(a) && positive(b) ? sign(a) : sign(b) && positive(a) ? sign(b) : nullptr;
  if (op == bc::BinaryOp::true_divide) return sign(a) && positive(b) ? sign(a) : nullptr;
  return nullptr;
}

// (result) (number-or-constant) arguments in the order an ATen op with a
// Tensor first argument can take them: `a op b` where `a` may be a constant.
ValuePtr number_arith(InstructionTranslator& t, bc::BinaryOp op, ValuePtr a, ValuePtr b) {
  using Op = bc::BinaryOp;
  const bc::BinaryOpInfo& row = bc::binary_op_info(op);
  if (!row.number_arithmetic) return t.unsupported("this operator on a Python number from Tensor.item()"), nullptr;
  bool floating = is_float_number(a) || is_float_number(b) || op == Op::true_divide;  // / is always a float
  if (!floating && !(is_int_like(a) && is_int_like(b)))
    return t.unsupported("arithmetic on a Python number from Tensor.item() with a " + a->type_name() + " and a " +
                         b->type_name()),
           nullptr;
  // int ** int of a dynamic int: an int or a float depending on the sign
  // of the exponent; a float power is a float.
  if (op == Op::power && !floating && t.refuse_dynamic_ints({a, b}, "**")) return nullptr;
  if (!floating && op == Op::power) return t.unsupported("int ** int of a number from Tensor.item()"), nullptr;
  // Where CPython raises (x / 0, a negative base to a fractional power, an
  // overflowing **) ATen gives inf/nan: only torch.optim's own arithmetic,
  // whose operands cannot raise (bias corrections), and division by a
  // non-zero constant are traced.
  bool constant_divisor = b->is_constant() && PyObject_IsTrue(b->obj.get()) == 1;
  bool may_raise = op == Op::power ||
                   ((op == Op::floor_divide || op == Op::remainder || op == Op::true_divide) && !constant_divisor);
  // Numbers from sizes (size_numbers.cpp): safe where a size fact says so.
  using Use = SizeNumberUse;
  const std::optional<double> exponent = constant_double(b);
  const bool small_constant_exponent = exponent && std::isfinite(*exponent) && std::fabs(*exponent) <= 16;
  if (may_raise && !origin_of(a) && !origin_of(b))
    may_raise = op == Op::power ? !(small_constant_exponent && size_fact_holds(t, Use::positive, a))
                                : !size_fact_holds(t, Use::nonzero, b);
  // A dynamic number from one input with a constant (`0.9 ** epoch`, a
  // LambdaLR's lambda): traced with a NUMBER_FACT that CPython computes a
  // finite number for the inputs' values (it raises for the others, where
  // ATen would give inf or nan); float arithmetic of torch.optim's own
  // code, as for Tensor.item()'s numbers.
  std::shared_ptr<const NumberExpr> finite_expr;
  if (may_raise && (origin_of(a) || origin_of(b)) && !(floating && t.in_optimizer_code())) {
    finite_expr = arith_expr(op, a, b);
    if (!finite_expr || !is_finite_number(finite_expr->example.get())) {
      finite_expr = nullptr;
      t.refuse_dynamic_ints({a, b}, "an operator that may raise");
      return nullptr;
    }
  }
  if (may_raise && !finite_expr && !t.in_optimizer_code())
    return t.unsupported("this operator on a Python number from Tensor.item() may raise in Python "
                         "(ZeroDivisionError, OverflowError, a complex result): data-dependent"),
           nullptr;
  // Dynamic ints: Python's ints are unbounded, the graph's int64 is not.
  double bound = 0;
  const bool dynamic = origin_of(a) || origin_of(b);
  if (dynamic) {
    const double ma = magnitude(a), mb = magnitude(b);
    bound = op == Op::multiply ? ma * mb : op == Op::remainder ? mb : op == Op::floor_divide ? ma : ma + mb;  // * % // + -
    if (!floating && bound > 0x1p62)
      return t.refuse_dynamic_ints({a, b}, "int arithmetic that may leave int64's range"), nullptr;
  }
  // Ints read from tensors: Python's ints grow where int64 wraps; a result
  // that could leave int64's range, or a true division of ints a double
  // does not hold exactly (Python's is correctly rounded), needs the value.
  double read_bound = -1;
  if (!dynamic && (read_int_magnitude(a) >= 0 || read_int_magnitude(b) >= 0)) {
    const double ma = int_operand_magnitude(a), mb = int_operand_magnitude(b);
    const std::optional<double> divisor = constant_double(b);
    const bool small_quotient = op == Op::floor_divide && divisor && std::fabs(*divisor) >= 2;
    read_bound = op == Op::multiply ? ma * mb : op == Op::remainder ? mb : small_quotient ? ma / std::fabs(*divisor) : ma + mb;
    const bool may_overflow = !floating && op != Op::remainder && !small_quotient && read_bound >= kInt64Range;
    const bool inexact_division = op == Op::true_divide && std::max(ma, mb) > kExactInDouble && !is_float_number(a) && !is_float_number(b);
    // (an int with a float: Python converts the int to the nearest double
    // first, as the graph's cast does)
    if (may_overflow || inexact_division)
      return t.unsupported(may_overflow ? "int arithmetic on an int from Tensor.item() that may leave int64's range "
                                          "(Python's ints grow; data-dependent)"
                                        : "float arithmetic on an int from Tensor.item() beyond 2**53 (Python's is exact "
                                          "there; data-dependent)"),
             nullptr;
    if (floating) read_bound = -1;
  }
  const ValuePtr lhs = a, rhs = b;
  // bools compute as ints (True + True is 2)
  auto as_int = [&](ValuePtr v) {
    if (floating || v->is_constant() || v->meta().dtype != c10::ScalarType::Bool) return v;
    return call_aten(t, "aten::_to_copy", {v}, {{"dtype", dtype_value(c10::ScalarType::Long)}});
  };
  if (floating) {  // Python promotes to float: both sides as doubles
    a = to_double(t, a);
    b = a ? to_double(t, b) : nullptr;
    if (!b) return nullptr;
  } else {
    a = as_int(a);
    b = a ? as_int(b) : nullptr;
    if (!b) return nullptr;
    if (a->is_constant()) a = call_aten(t, "aten::scalar_tensor", {a}, {{"dtype", dtype_value(b->is_constant() ? c10::ScalarType::Long : b->meta().dtype)}});
    if (a && b->is_constant() && PyBool_Check(b->obj.get())) b = Value::constant_steal(PyLong_FromLong(b->obj.get() == Py_True));
    if (!a) return nullptr;
  }
  ValuePtr r = as_number(call_aten(t, std::string(row.aten), {a, b}));
  // Python's float % has the divisor's sign, also for a zero result (ATen's
  // remainder gives the dividend's there).
  if (r && floating && op == Op::remainder) r = as_number(call_aten(t, "aten::copysign", {r, b}));
  if (r) r->number()->size_sign = sign_through(op, lhs, rhs);
  if (read_bound >= 0) with_int_magnitude(r, read_bound);
  if (finite_expr) guard_finite(t, *finite_expr);
  return dynamic ? with_origin(r, op, lhs, rhs, floating ? std::numeric_limits<double>::infinity() : bound) : r;
}

// A number meeting a real tensor: the Python scalar it stands for, cast as
// a wrapped number would be (to the tensor's dtype, or the default float
// dtype for an integer tensor and a float).
ValuePtr number_as_scalar_for(InstructionTranslator& t, const ValuePtr& number, const ValuePtr& tensor,
                               const std::string& what = "") {
  c10::ScalarType td = tensor->meta().dtype;
  c10::ScalarType nd = number->meta().dtype;
  // Half/BFloat16 + - * / read the scalar in float (their math type).
  const bool reduced = td == c10::ScalarType::Half || td == c10::ScalarType::BFloat16;
  if (!origin_of(number) && reduced && what.empty())
    return nd == c10::ScalarType::Float ? number : call_aten(t, "aten::_to_copy", {number}, {{"dtype", dtype_value(c10::ScalarType::Float)}});
  // Other numbers from item()/tolist() and sizes: as eager's wrapped
  // number, read in the common dtype (number_arguments.cpp).
  if (!origin_of(number)) return number_read_as(t, number, scalar_common_dtype({tensor, number}), false, what.empty() ? "a Python operator" : what);
  c10::ScalarType want = td;
  if (!c10::isFloatingType(td) && !c10::isComplexType(td) && c10::isFloatingType(nd)) want = default_dtype();
  if (td == c10::ScalarType::Bool && nd != c10::ScalarType::Bool) want = c10::isFloatingType(nd) ? default_dtype() : nd;
  // Half/BFloat16 kernels read a scalar operand in float (their math type).
  if ((td == c10::ScalarType::Half || td == c10::ScalarType::BFloat16) && c10::isFloatingType(nd)) want = c10::ScalarType::Float;
  if (want == nd) return number;
  return call_aten(t, "aten::_to_copy", {number}, {{"dtype", dtype_value(want)}});
}

PyObject* number_of(PyObject*, PyObject* parts) {
  if (!PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) != 1) {
    PyErr_SetString(PyExc_TypeError, "tracejit: malformed number template");
    return nullptr;
  }
  return PyObject_CallMethod(PyTuple_GET_ITEM(parts, 0), "item", nullptr);
}

PyMethodDef kNumberOfDef = {"_number_of", number_of, METH_O,
                            "tracejit: a Python number computed in a compiled graph, made a number again"};

}  // namespace

bool is_python_number(const ValuePtr& v) { return v && v->number(); }

bool refuse_dynamic_int_arguments(InstructionTranslator& t, const ValuePtr& self, const std::vector<ValuePtr>& args,
                                  const Kwargs& kwargs, const std::string& what) {
  std::vector<ValuePtr> values = args;
  if (self) values.push_back(self);
  for (const auto& kv : kwargs) values.push_back(kv.second);
  return t.refuse_dynamic_ints(values, what);
}

bool InstructionTranslator::refuse_dynamic_ints(const std::vector<ValuePtr>& values, const std::string& what) {
  std::vector<std::string> sources;
  std::function<void(const ValuePtr&)> visit = [&](const ValuePtr& v) {
    if (!v) return;
    if (const auto* o = origin_of(v)) sources.insert(sources.end(), o->sources.begin(), o->sources.end());
    if (v->is_sequence() || v->kind == ValueKind::dict)
      for (const ValuePtr& item : v->items) visit(item);
  };
  for (const ValuePtr& v : values) visit(v);
  if (sources.empty()) return false;
  for (const std::string& s : sources)
    if (std::find(shared_->needed_ints.begin(), shared_->needed_ints.end(), s) == shared_->needed_ints.end())
      shared_->needed_ints.push_back(s);
  unsupported(what + " needs the value of the int " + sources.front() + " (traced as a graph input)");
  return true;
}

PyObject* number_of_function() {
  static PyObject* fn = PyCFunction_New(&kNumberOfDef, nullptr);
  return fn;
}

ValuePtr tensor_item(InstructionTranslator& t, const ValuePtr& self) {
  // A number never read (`clipfrac = t.item()` kept for logging the frame
  // does not do) costs no break: nothing can observe it.
  if (!t.capture_scalar_outputs() && !t.in_optimizer_code() && !result_never_read(t) && !t.speculate_scalar_read())
    return t.unsupported("Tensor.item() needs the tensor's data (data-dependent; set "
                         "tracejit.config.capture_scalar_outputs = True to keep it in the graph)"),
           nullptr;
  const graph::TensorMeta& m = self->meta();
  if (unbacked_size_read(t, self, "Tensor.item()")) return nullptr;
  if (!m.sizes.empty()) t.note_sizes_read("Tensor.item()'s one-element check");  // a 0-d tensor has one, whatever the sizes
  int64_t n = 1;
  for (int64_t s : m.sizes) n *= s;
  if (n != 1) return t.unsupported("Tensor.item() of a tensor with " + std::to_string(n) + " elements (raises)"), nullptr;
  if (c10::isComplexType(m.dtype)) return t.unsupported("Tensor.item() of a complex tensor"), nullptr;
  c10::ScalarType want = m.dtype == c10::ScalarType::Bool         ? c10::ScalarType::Bool
                         : c10::isIntegralType(m.dtype, false) ? c10::ScalarType::Long
                                                                : c10::ScalarType::Double;
  // Detached (a Python number carries no autograd history: eager's
  // `R - value.item()` sends no gradient into `value`), then a copy: the
  // number must not follow later in-place writes of the tensor.
  ValuePtr detached = call_aten(t, "aten::detach", {self});
  ValuePtr flat = !detached || m.sizes.empty()
                      ? detached
                      : call_aten(t, "aten::reshape", {detached, Value::constant_steal(PyTuple_New(0))});
  if (!flat) return nullptr;
  return with_int_magnitude(as_number(call_aten(t, "aten::_to_copy", {flat}, {{"dtype", dtype_value(want)}})),
                            read_magnitude_of(m.dtype));
}

// Tensor.tolist() under capture_scalar_outputs: one copy as float64 /
// int64 / bool (eager's Python numbers), then one traced number per
// element, nested as the tensor's dims (an actor-critic's rewards walked in
// Python). Past kMaxTolistNumbers elements it breaks instead: each number
// is a node, and such loops unroll.
constexpr int64_t kMaxTolistNumbers = 1024;

ValuePtr tensor_tolist(InstructionTranslator& t, const ValuePtr& self) {
  const graph::TensorMeta& m = self->meta();
  if (m.sizes.empty()) return tensor_item(t, self);
  if (!t.capture_scalar_outputs() && !t.in_optimizer_code() && !t.speculate_scalar_read())
    return t.unsupported("Tensor.tolist() needs the tensor's data (data-dependent; set "
                         "tracejit.config.capture_scalar_outputs = True to keep it in the graph)"),
           nullptr;
  if (unbacked_size_read(t, self, "Tensor.tolist()")) return nullptr;
  // The list's shape is the tensor's: its own sizes are pinned (facts),
  // the other tensors' stay dynamic.
  for (int64_t d = 0; d < static_cast<int64_t>(m.sizes.size()); ++d)
    if (ValuePtr size = tensor_size(t, self, d); !size || !specialize(t, size)) {
      if (!t.failed()) t.note_sizes_read("Tensor.tolist() (one number per element)");
      break;
    }
  if (t.failed()) return nullptr;
  int64_t n = 1;
  for (int64_t s : m.sizes) n *= s;
  if (n > kMaxTolistNumbers)
    return t.unsupported("Tensor.tolist() of a tensor with " + std::to_string(n) + " elements (more than " +
                         std::to_string(kMaxTolistNumbers) + " numbers to trace one by one)"),
           nullptr;
  if (c10::isComplexType(m.dtype)) return t.unsupported("Tensor.tolist() of a complex tensor"), nullptr;
  c10::ScalarType want = m.dtype == c10::ScalarType::Bool         ? c10::ScalarType::Bool
                         : c10::isIntegralType(m.dtype, false) ? c10::ScalarType::Long
                                                                : c10::ScalarType::Double;
  // Detached (Python numbers carry no autograd history), then a copy: the
  // numbers must not follow later in-place writes of the tensor.
  ValuePtr detached = call_aten(t, "aten::detach", {self});
  ValuePtr copy = detached ? call_aten(t, "aten::_to_copy", {detached}, {{"dtype", dtype_value(want)}}) : nullptr;
  if (!copy) return nullptr;
  std::function<ValuePtr(const ValuePtr&)> nest = [&](const ValuePtr& v) -> ValuePtr {
    const std::vector<int64_t> sizes = v->meta().sizes;
    if (sizes.empty()) return with_int_magnitude(as_number(v), read_magnitude_of(m.dtype));
    std::vector<ValuePtr> items;
    for (int64_t i = 0; i < sizes[0]; ++i) {
      ValuePtr row = call_aten(t, "aten::select", {v, int_constant(0), int_constant(i)});
      ValuePtr item = row ? nest(row) : nullptr;
      if (!item) return nullptr;
      items.push_back(std::move(item));
    }
    return Value::sequence(ValueKind::list, std::move(items));
  };
  return nest(copy);
}

ValuePtr number_binary_op(InstructionTranslator& t, bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs) {
  using Op = bc::BinaryOp;
  using R = bc::TensorReflected;
  const bc::BinaryOpInfo& row = *op.info;
  bool lnum = is_python_number(lhs), rnum = is_python_number(rhs);
  bool ltensor = lhs->is_tensor() && !lnum, rtensor = rhs->is_tensor() && !rnum;
  if (ltensor || rtensor) {
    // A dynamic int meets a float32/float64 tensor in + - * as eager's
    // wrapped scalar does (the int rounded to the tensor's dtype); any
    // other operator or dtype needs its value.
    const c10::ScalarType dtype = (ltensor ? lhs : rhs)->meta().dtype;
    // A dynamic float (a float passed to a resumed frame) divides one too.
    const bool float_number = is_float_number(ltensor ? rhs : lhs);
    const bool same_as_eager = (op.op() == Op::add || op.op() == Op::multiply || op.op() == Op::subtract ||
                                (float_number && op.op() == Op::true_divide && ltensor)) &&
                               (dtype == c10::ScalarType::Float || dtype == c10::ScalarType::Double);
    if (!same_as_eager && t.refuse_dynamic_ints({lhs, rhs}, "this tensor operator with the int")) return nullptr;
    // A real tensor with a number: as with the Python scalar it stands for.
    const ValuePtr& tensor = ltensor ? lhs : rhs;
    // + - * / read the scalar as the arithmetic kernels do; pow
    // special-cases exponents (2, 0.5, -1, ...) whose values differ from a
    // tensor exponent's: a float power needs the number.
    const bool arithmetic = op.op() == Op::add || op.op() == Op::subtract || op.op() == Op::multiply || op.op() == Op::true_divide;
    const std::string what = arithmetic ? "" : "the operator " + std::string(row.symbol);
    if (op.op() == Op::power && !origin_of(ltensor ? rhs : lhs) &&
        c10::isFloatingType(scalar_common_dtype({lhs, rhs})))
      return t.unsupported("a Python number from Tensor.item() in a float power of a tensor (eager special-cases "
                           "exponents such as 2 and 0.5; data-dependent)"),
             nullptr;
    // An int or bool tensor to an int power: eager's pow(Tensor, Scalar)
    // raises for a negative exponent, a tensor exponent does not.
    if (op.op() == Op::power && !c10::isFloatingType(scalar_common_dtype({lhs, rhs})))
      return t.unsupported("a Python number from Tensor.item() in an int power of a tensor (eager raises for a "
                           "negative exponent; data-dependent)"),
             nullptr;
    ValuePtr scalar = number_as_scalar_for(t, ltensor ? rhs : lhs, tensor, what);
    if (!scalar) return nullptr;
    if (ltensor) return tensor_binary_op(t, op, lhs, scalar);
    // Tensor.__r<op>__ of + - * / (the scalar is a 0-d tensor here, so
    // tensor_binary_op would take it for the tensor operand).
    if (row.number_arithmetic) {
      switch (row.tensor_reflected) {
        case R::swapped: return call_aten(t, std::string(row.aten), {rhs, scalar});
        case R::rsub: return call_aten(t, "aten::rsub", {rhs, scalar});
        case R::reciprocal_mul: {
          ValuePtr r = call_aten(t, "aten::reciprocal", {rhs});
          return r ? call_aten(t, "aten::mul", {r, scalar}) : nullptr;
        }
        default: break;
      }
    }
    return t.unsupported("a Python number from Tensor.item() on the left of this tensor operator"), nullptr;
  }
  if (!(lnum || lhs->is_constant()) || !(rnum || rhs->is_constant()))
    return t.unsupported("arithmetic on a Python number from Tensor.item() with a " + lhs->type_name() + " and a " +
                         rhs->type_name()),
           nullptr;
  return number_arith(t, op.op(), lhs, rhs);
}


ValuePtr number_compare(InstructionTranslator& t, int op, const ValuePtr& lhs, const ValuePtr& rhs) {
  if (ValuePtr fact = compare_as_fact(t, op, lhs, rhs)) return fact;
  if (t.refuse_dynamic_ints({lhs, rhs}, "a comparison")) return nullptr;
  const bool ltensor = lhs->is_tensor() && !is_python_number(lhs), rtensor = rhs->is_tensor() && !is_python_number(rhs);
  if (ltensor || rtensor) {  // the number read in the common dtype, as eager's wrapped number
    const ValuePtr& number = ltensor ? rhs : lhs;
    ValuePtr scalar = is_python_number(number) && !origin_of(number)
                          ? number_read_as(t, number, scalar_common_dtype({lhs, rhs}), false, "a comparison")
                          : number;
    if (!scalar) return nullptr;
    return ltensor ? tensor_compare(t, op, lhs, scalar) : tensor_compare(t, op, scalar, rhs);
  }
  // Ints compare as ints (Python's comparison is exact; doubles are not
  // beyond 2**53); an int beyond 2**53 with a float needs its value.
  if (is_int_like(lhs) && is_int_like(rhs)) {
    auto as_long = [&](const ValuePtr& v) {
      if (v->is_constant()) {
        PyRef i = PyRef::steal(PyNumber_Long(v->obj.get()));
        if (!i) return t.unsupported("a comparison of an int from Tensor.item() with a huge int"), ValuePtr();
        return call_aten(t, "aten::scalar_tensor", {Value::constant(i.get())}, {{"dtype", dtype_value(c10::ScalarType::Long)}});
      }
      if (v->meta().dtype == c10::ScalarType::Long) return v;
      return call_aten(t, "aten::_to_copy", {v}, {{"dtype", dtype_value(c10::ScalarType::Long)}});
    };
    ValuePtr a = as_long(lhs);
    ValuePtr b = a ? as_long(rhs) : nullptr;
    return b ? as_number(tensor_compare(t, op, a, b)) : nullptr;
  }
  if (read_int_magnitude(lhs) > kExactInDouble || read_int_magnitude(rhs) > kExactInDouble)
    return t.unsupported("a comparison of an int from Tensor.item() beyond 2**53 with a float (data-dependent)"), nullptr;
  ValuePtr a = to_double(t, lhs);
  ValuePtr b = a ? to_double(t, rhs) : nullptr;
  if (!b) return nullptr;
  return as_number(tensor_compare(t, op, a, b));
}

ValuePtr number_unary(InstructionTranslator& t, bc::Opcode op, const ValuePtr& v) {
  if (op == bc::Opcode::UNARY_NEGATIVE) {
    if (read_int_magnitude(v) >= kInt64Range)  // -(-2**63) is 2**63 in Python
      return t.unsupported("unary minus of an int from Tensor.item() that may leave int64's range (data-dependent)"), nullptr;
    if (v->meta().dtype == c10::ScalarType::Bool) return number_arith(t, bc::BinaryOp::subtract, Value::constant_steal(PyLong_FromLong(0)), v);
    ValuePtr r = with_int_magnitude(as_number(call_aten(t, "aten::neg", {v})), read_int_magnitude(v));
    if (const NumberExpr* e = expr_of(v)) return with_step(r, v, NumberStep{NumberOp::negate, PyRef(), false}, "(-" + e->text + ")");
    if (r) r->number()->dynamic_int = v->number()->dynamic_int;
    return r;
  }
  if (op == bc::Opcode::UNARY_POSITIVE) return v;
  return t.unsupported(std::string(bc::info(op).name) + " on a Python number from Tensor.item()"), nullptr;
}

ValuePtr number_function(InstructionTranslator& t, PyObject* fn, const std::vector<ValuePtr>& args, bool& handled) {
  handled = false;
  if (args.size() != 1 || !is_python_number(args[0])) return nullptr;
  const ValuePtr& v = args[0];
  // A Python function (a LambdaLR's lambda) is inlined with the number.
  if (PyFunction_Check(fn)) return nullptr;
  handled = true;
  // float()/int() of a dynamic number: the same origin, one call further.
  auto keep_origin = [&](ValuePtr r) {
    if (r && r != v && expr_of(v))
      return with_step(r, v, NumberStep{NumberOp::call, PyRef::borrow(fn), false},
                       std::string(reinterpret_cast<PyTypeObject*>(fn)->tp_name) + "(" + expr_of(v)->text + ")");
    if (r) r->number()->dynamic_int = v->number()->dynamic_int;
    return r;
  };
  if (fn == reinterpret_cast<PyObject*>(&PyFloat_Type)) {
    ValuePtr r = keep_origin(as_number(to_double(t, v)));
    if (r && r != v) r->number()->size_sign = v->number()->size_sign;
    return r;
  }
  if (fn == reinterpret_cast<PyObject*>(&PyLong_Type)) {  // int() of an int; of a float it may raise (nan, inf)
    if (is_float_number(v)) return t.unsupported("int() of a float from Tensor.item() (data-dependent)"), nullptr;
    return with_int_magnitude(keep_origin(as_number(call_aten(t, "aten::_to_copy", {v}, {{"dtype", dtype_value(c10::ScalarType::Long)}}))),
                              read_int_magnitude(v));
  }
  static const char* kMath[] = {"sqrt", "exp", "log", "sin", "cos", "tanh"};
  const char* math_name = nullptr;
  for (const char* name : kMath)
    if (fn == cached_module_attr("math", name)) math_name = name;
  // torch.optim's math on a dynamic number from one input (OneCycleLR's
  // math.cos of the step's fraction): ATen's double kernel on one element
  // is the C library's function, as CPython's math module.
  const bool dynamic_math = math_name && expr_of(v) && t.in_optimizer_code();
  if (!dynamic_math && t.refuse_dynamic_ints({v}, "this function")) return nullptr;
  for (const char* name : kMath) {
    if (fn != cached_module_attr("math", name)) continue;
    // math.sqrt(-1) raises ValueError where ATen gives nan: torch.optim's
    // only, and numbers from sizes where a size fact says it holds.
    using Use = SizeNumberUse;
    const bool is_sqrt = std::strcmp(name, "sqrt") == 0, is_log = std::strcmp(name, "log") == 0;
    const bool size_safe = (is_sqrt && size_fact_holds(t, Use::nonnegative, v)) || (is_log && size_fact_holds(t, Use::positive, v));
    if (!t.in_optimizer_code() && !size_safe)
      return t.unsupported(std::string("math.") + name + "() of a number from Tensor.item() may raise (data-dependent)"),
             nullptr;
    ValuePtr d = to_double(t, v);
    ValuePtr r = d ? as_number(call_aten(t, std::string("aten::") + name, {d})) : nullptr;
    if (r && is_sqrt) r->number()->size_sign = v->number()->size_sign;  // sqrt(n) is 0 exactly when n is
    if (dynamic_math)
      r = with_step(r, v, NumberStep{NumberOp::call, PyRef::borrow(fn), false},
                    std::string("math.") + name + "(" + expr_of(v)->text + ")");
    return r;
  }
  if (fn == cached_module_attr("builtins", "abs")) {
    if (read_int_magnitude(v) >= kInt64Range)
      return t.unsupported("abs() of an int from Tensor.item() that may leave int64's range (data-dependent)"), nullptr;
    return with_int_magnitude(as_number(call_aten(t, "aten::abs", {v})), read_int_magnitude(v));
  }
  handled = false;
  return nullptr;
}

ValuePtr pointwise_with_number(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                               const std::vector<ValuePtr>& args, const Kwargs& kwargs, bool& handled) {
  handled = false;
  enum class Op { none, add, sub, mul, div };
  static const std::unordered_map<std::string_view, Op> kOps = {
      {"add", Op::add}, {"add_", Op::add}, {"sub", Op::sub}, {"sub_", Op::sub},
      {"mul", Op::mul}, {"mul_", Op::mul}, {"div", Op::div}, {"div_", Op::div}};
  auto found = kOps.find(name);
  const Op which = found == kOps.end() ? Op::none : found->second;
  const bool add = which == Op::add, sub = which == Op::sub, mul = which == Op::mul, div = which == Op::div;
  if (!(add || sub || mul || div) || args.size() != 1 || !self->is_tensor() || is_python_number(self)) return nullptr;
  const c10::ScalarType dtype = self->meta().dtype;
  if (dtype != c10::ScalarType::Float && dtype != c10::ScalarType::Double) return nullptr;
  ValuePtr alpha;
  for (const auto& [k, v] : kwargs) {
    if (k != "alpha") return nullptr;
    alpha = v;
  }
  const bool inplace = name.back() == '_';
  const ValuePtr& other = args[0];
  if (is_python_number(other) && !alpha) {
    // x op n: n as the Scalar it stands for (int numbers in + - * only, as
    // number_binary_op; / of an int needs Python's true division of it).
    if (div && !is_float_number(other)) return nullptr;
    handled = true;
    ValuePtr scalar = number_as_scalar_for(t, other, self);
    return scalar ? call_aten(t, "aten::" + name, {self, scalar}) : nullptr;
  }
  if (!(add || sub) || !is_python_number(alpha) || !other->is_tensor() || is_python_number(other)) return nullptr;
  handled = true;
  // alpha is converted with eager's overflow check
  ValuePtr scalar = origin_of(alpha) ? number_as_scalar_for(t, alpha, self)
                                     : number_read_as(t, alpha, dtype, true, "Tensor." + name + "'s alpha");
  if (scalar && sub) scalar = call_aten(t, "aten::neg", {scalar});
  return scalar ? call_aten(t, inplace ? "aten::addcmul_" : "aten::addcmul", {self, other, scalar}) : nullptr;
}

ValuePtr addc_with_number_value(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                                std::vector<ValuePtr>& args, Kwargs& kwargs, bool& handled) {
  handled = false;
  // addcdiv/addcmul and their in-place forms; true: addcdiv.
  static const std::unordered_map<std::string_view, bool> kAddc = {
      {"addcdiv", true}, {"addcdiv_", true}, {"addcmul", false}, {"addcmul_", false}};
  auto found = kAddc.find(name);
  if (found == kAddc.end()) return nullptr;
  const bool addcdiv = found->second;
  ValuePtr value;
  if (args.size() == 3) value = args[2];
  for (const auto& [k, v] : kwargs)
    if (k == "value") value = v;
  if (!is_python_number(value) || args.size() < 2 || !args[0]->is_tensor() || !args[1]->is_tensor()) return nullptr;
  handled = true;
  if (!is_float_number(value) && t.refuse_dynamic_ints({value}, "Tensor." + name + "'s value")) return nullptr;
  if (kwargs.size() > (args.size() == 3 ? 0u : 1u)) return t.unsupported("Tensor." + name + " with these keywords"), nullptr;
  // self + value * t1 (/ or *) t2, in the kernel's order, with the value
  // cast to self's dtype as the Scalar argument is.
  ValuePtr scalar = origin_of(value) ? number_as_scalar_for(t, value, self)
                                     : number_read_as(t, value, self->meta().dtype, true, "Tensor." + name + "'s value");
  ValuePtr scaled = scalar ? call_aten(t, "aten::mul", {args[0], scalar}) : nullptr;
  ValuePtr term = scaled ? call_aten(t, addcdiv ? "aten::div" : "aten::mul", {scaled, args[1]}) : nullptr;
  if (!term) return nullptr;
  return call_aten(t, name.back() == '_' ? "aten::add_" : "aten::add", {self, term});
}

bool InstructionTranslator::build_number_output(const ValuePtr& v, OutputTemplate& out, std::vector<graph::Arg>& outputs,
                                                std::unordered_map<graph::Node*, int>& output_index) {
  out.kind = OutputTemplate::Kind::tuple;
  out.constant = PyRef::borrow(number_of_function());
  out.items.emplace_back();
  auto plain = std::make_shared<Value>(*v);
  plain->payload = std::monostate{};  // the tensor itself
  return build_output(plain, out.items.back(), outputs, output_index);
}

}  // namespace tj::tracer
