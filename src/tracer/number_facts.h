// Number facts (issue 42 item 3): a dynamic number (an int or float traced
// as a graph input, symbolic_numbers.cpp) computed from one input by steps
// with constants keeps its expression (NumberExpr, guards.h); a comparison
// of it with a constant is answered now and guarded by a NUMBER_FACT on
// the outcome, and an operator CPython may raise on is guarded to give a
// finite number. The runtime re-evaluates the steps with CPython's own
// number operations (guards.cpp apply_number_steps).
#pragma once

#include <memory>
#include <string>

#include "tracer/translator.h"

namespace tj::tracer {

// The expression of a dynamic number from one input, or null.
const NumberExpr* expr_of(const ValuePtr& v);
// `e` one step further, printed as `text`; null when the step raises in
// Python now (CPython raises too: no fact is made from it).
std::shared_ptr<const NumberExpr> extend_expr(const NumberExpr& e, NumberStep step, std::string text);
// The expression of `a op b` when one of them is a dynamic number from one
// input and the other a constant; null otherwise (or when CPython raises
// for the values now).
std::shared_ptr<const NumberExpr> arith_expr(bc::BinaryOp op, const ValuePtr& a, const ValuePtr& b);
// An int, or a float that is finite.
bool is_finite_number(PyObject* v);
// A NUMBER_FACT that `e` computes to a finite float or an int.
void guard_finite(InstructionTranslator& t, const NumberExpr& e);
// `lhs op rhs` (Py_LT..Py_GE) of such a number and a constant: a bool
// constant, its outcome guarded; null when it is not such a comparison.
ValuePtr compare_as_fact(InstructionTranslator& t, int op, const ValuePtr& lhs, const ValuePtr& rhs);

}  // namespace tj::tracer
