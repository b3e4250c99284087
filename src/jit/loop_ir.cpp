// The loop IR's names and text form; see loop_ir.h.
#include "jit/loop_ir.h"

#include <sstream>

namespace tj::jit::loop {

const char* op_name(Op op) {
  switch (op) {
    case Op::load: return "load";
    case Op::constant: return "constant";
    case Op::cast: return "cast";
    case Op::neg: return "neg";
    case Op::abs: return "abs";
    case Op::relu: return "relu";
    case Op::sigmoid: return "sigmoid";
    case Op::tanh: return "tanh";
    case Op::exp: return "exp";
    case Op::log: return "log";
    case Op::sin: return "sin";
    case Op::cos: return "cos";
    case Op::sqrt: return "sqrt";
    case Op::rsqrt: return "rsqrt";
    case Op::reciprocal: return "reciprocal";
    case Op::erf: return "erf";
    case Op::logical_not: return "logical_not";
    case Op::add: return "add";
    case Op::sub: return "sub";
    case Op::mul: return "mul";
    case Op::div: return "div";
    case Op::pow: return "pow";
    case Op::maximum: return "maximum";
    case Op::minimum: return "minimum";
    case Op::eq: return "eq";
    case Op::ne: return "ne";
    case Op::lt: return "lt";
    case Op::le: return "le";
    case Op::gt: return "gt";
    case Op::ge: return "ge";
    case Op::logical_and: return "logical_and";
    case Op::logical_or: return "logical_or";
    case Op::logical_xor: return "logical_xor";
    case Op::select: return "select";
  }
  return "?";
}

namespace {
const char* kind_name(Input::Kind k) {
  switch (k) {
    case Input::Kind::full: return "full";
    case Input::Kind::scalar: return "scalar";
    case Input::Kind::other: return "strided";
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
  os << " rank=" << k.sizes.size() << (k.contiguous_outputs ? " contiguous_outputs" : "")
     << (k.relu_plus_one ? " relu_plus_one" : "") << "\n";
  for (size_t i = 0; i < k.inputs.size(); ++i)
    os << "  in" << i << ": " << c10::toString(k.inputs[i].dtype) << " " << kind_name(k.inputs[i].kind) << "\n";
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    os << "  v" << i << ": " << c10::toString(e.dtype) << " = " << op_name(e.op);
    if (e.op == Op::load) os << " in" << e.input;
    if (e.op == Op::constant) os << " " << e.value;
    for (int a : e.args) os << " v" << a;
    os << "\n";
  }
  for (size_t i = 0; i < k.outputs.size(); ++i)
    os << "  out" << i << ": " << c10::toString(k.outputs[i].dtype) << " = v" << k.outputs[i].expr << "\n";
  return os.str();
}

}  // namespace tj::jit::loop
