// Number facts: see number_facts.h.
#include "tracer/number_facts.h"

#include <cmath>
#include <optional>

#include "support/py_lookup.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

namespace {
bool has_origin(const ValuePtr& v) { return v && v->number() && v->number()->dynamic_int; }
}  // namespace

const NumberExpr* expr_of(const ValuePtr& v) { return has_origin(v) ? v->number()->dynamic_int->expr.get() : nullptr; }

namespace {
// A Python bool/int/float constant (what a number fact's step or
// comparison can take as its other operand).
bool plain_constant_number(const ValuePtr& v) {
  if (!v || !v->is_constant()) return false;
  PyObject* o = v->obj.get();
  return PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o);
}
}  // namespace

namespace {
std::string repr_text(PyObject* o) {
  PyRef r = PyRef::steal(PyObject_Repr(o));
  const char* s = r ? PyUnicode_AsUTF8(r.get()) : nullptr;
  std::string out = s ? s : "?";
  PyErr_Clear();  // a repr for a printed guard: "?" on failure
  return out;
}
}  // namespace

// `e` one step further, printed as `text`; null when the step raises in
// Python now (CPython raises too: no fact is made from it).
std::shared_ptr<const NumberExpr> extend_expr(const NumberExpr& e, NumberStep step, std::string text) {
  PyRef v = apply_number_steps(e.example.get(), {step});
  if (!v) return nullptr;
  auto out = std::make_shared<NumberExpr>(e);
  out->steps.push_back(std::move(step));
  out->example = std::move(v);
  out->text = std::move(text);
  return out;
}

namespace {
std::optional<NumberOp> number_op_of(bc::BinaryOp op) {
  using Op = bc::BinaryOp;
  switch (op) {
    case Op::add: return NumberOp::add;
    case Op::subtract: return NumberOp::subtract;
    case Op::multiply: return NumberOp::multiply;
    case Op::true_divide: return NumberOp::true_divide;
    case Op::floor_divide: return NumberOp::floor_divide;
    case Op::remainder: return NumberOp::remainder;
    case Op::power: return NumberOp::power;
    default: return std::nullopt;
  }
}
}  // namespace

// The expression of `a op b` when one of them is a dynamic number from one
// input and the other a constant; null otherwise (or when CPython raises
// for the values now).
std::shared_ptr<const NumberExpr> arith_expr(bc::BinaryOp op, const ValuePtr& a, const ValuePtr& b) {
  const NumberExpr* ea = expr_of(a);
  const NumberExpr* eb = expr_of(b);
  const std::optional<NumberOp> nop = number_op_of(op);
  const std::string symbol(bc::binary_op_info(op).symbol);
  if (nop && ea && !has_origin(b) && plain_constant_number(b))
    return extend_expr(*ea, NumberStep{*nop, b->obj, false}, "(" + ea->text + " " + symbol + " " + repr_text(b->obj.get()) + ")");
  if (nop && eb && !has_origin(a) && plain_constant_number(a))
    return extend_expr(*eb, NumberStep{*nop, a->obj, true}, "(" + repr_text(a->obj.get()) + " " + symbol + " " + eb->text + ")");
  return nullptr;
}

bool is_finite_number(PyObject* v) {
  if (PyLong_CheckExact(v)) return true;
  return PyFloat_CheckExact(v) && std::isfinite(PyFloat_AS_DOUBLE(v));
}

// A NUMBER_FACT that `e` computes to a finite float or an int (CPython
// raises for the values where it does not).
void guard_finite(InstructionTranslator& t, const NumberExpr& e) {
  static PyObject* is_finite = nullptr;
  if (!is_finite) {
    is_finite = cached_module_attr("math", "isfinite");
    if (!is_finite) return;
  }
  auto fact = std::make_shared<NumberFact>();
  fact->steps = e.steps;
  fact->steps.push_back(NumberStep{NumberOp::call, PyRef::borrow(reinterpret_cast<PyObject*>(&PyFloat_Type)), false});
  fact->steps.push_back(NumberStep{NumberOp::call, PyRef::borrow(is_finite), false});
  fact->compare_op = Py_EQ;
  fact->other = PyRef::borrow(Py_True);
  fact->outcome = true;
  fact->text = "math.isfinite(float(" + e.text + ")) == True";
  Guard g{GuardKind::number_fact, e.source};
  g.number_fact = std::move(fact);
  t.guards().add(std::move(g));
}

// A comparison of a dynamic number computed from one input with a
// constant: its outcome now, and a NUMBER_FACT guard that it stays so
// (TorchDynamo guards the symbolic fact, not the value). Null when it is
// not such a comparison.
ValuePtr compare_as_fact(InstructionTranslator& t, int op, const ValuePtr& lhs, const ValuePtr& rhs) {
  const bool number_right = !expr_of(lhs);
  const ValuePtr& number = number_right ? rhs : lhs;
  const ValuePtr& other = number_right ? lhs : rhs;
  const NumberExpr* e = expr_of(number);
  if (!e || !e->source || has_origin(other) || !plain_constant_number(other) || op < Py_LT || op > Py_GE) return nullptr;
  auto fact = std::make_shared<NumberFact>();
  fact->steps = e->steps;
  fact->compare_op = op;
  fact->other = other->obj;
  fact->number_right = number_right;
  static const char* const kSymbols[] = {"<", "<=", "==", "!=", ">", ">="};
  const std::string o = repr_text(other->obj.get());
  fact->text = number_right ? o + " " + kSymbols[op] + " " + e->text : e->text + " " + kSymbols[op] + " " + o;
  const int outcome = PyObject_RichCompareBool(number_right ? other->obj.get() : e->example.get(),
                                               number_right ? e->example.get() : other->obj.get(), op);
  if (outcome < 0) {
    PyErr_Clear();  // numbers compare without raising; else no fact (the refusal below)
    return nullptr;
  }
  fact->outcome = outcome == 1;
  Guard g{GuardKind::number_fact, e->source};
  g.number_fact = fact;
  t.guards().add(std::move(g));
  return bool_constant(fact->outcome);
}

}  // namespace tj::tracer
