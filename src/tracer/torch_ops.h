// Tensor operations during tracing: torch functions, Tensor methods and
// attributes, torch.nn.functional, Python operators and indexing on
// tensors, each mapped to ATen overloads through graph::OpRegistry and
// recorded as graph nodes with their fake metadata (meta inference).
//
// The default rule is a table row, not code: `torch.X(...)` and `t.X(...)`
// become `aten::X` with the same arguments (`input` named `self`), the
// overload chosen from the argument kinds. The exceptions (varargs shapes,
// dtype conversions, F.* functions whose ATen names or arguments differ,
// constant-valued methods like size()/dim()) are small tables in
// torch_ops.cpp, tensor_methods.cpp and torch_functional.cpp.
//
// Every function returns the result Value, or null after calling
// `t.unsupported(...)` with the reason.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tracer/translator.h"

namespace tj::tracer {

using Kwargs = std::vector<std::pair<std::string, ValuePtr>>;

// Records aten::<name> (e.g. "aten::add") applied to these values.
ValuePtr call_aten(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr> args, Kwargs kwargs = {});

// Whether `fn` is a torch callable this module can call (torch.X builtins,
// torch._C._nn.X, Tensor method descriptors, traceable torch.nn.functional
// functions).
bool is_torch_callable(PyObject* fn);
ValuePtr call_torch_callable(InstructionTranslator& t, PyObject* fn, std::vector<ValuePtr> args, Kwargs kwargs);
// torch functions written in Python that the tracer models directly
// (torch.is_tensor, torch.einsum); null without unsupported() when `fn` is
// not one of them.
ValuePtr call_torch_python_function(InstructionTranslator& t, PyObject* fn, std::vector<ValuePtr>& args, Kwargs& kwargs);

// Whether eager's CPU autocast changes the arguments of `op` (it has an
// AutocastCPU kernel).
bool autocast_applies(const graph::OpInfo& op);

// A view op whose result autograd tracks as a view of its argument (not
// `detach` or the sparse accessors) (grad_writes.cpp).
bool is_differentiable_view(const graph::OpInfo& op);
// The op's tensor arguments as eager's CPU autocast would pass them on
// (`aten::_to_copy` casts added to the graph) when the trace runs under
// autocast; false with the failure set (translate_autocast.cpp).
bool autocast_casts(InstructionTranslator& t, const graph::OpInfo& op, std::vector<ValuePtr>& args, Kwargs& kwargs);

ValuePtr call_tensor_method(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                            std::vector<ValuePtr> args, Kwargs kwargs);
ValuePtr tensor_attribute(InstructionTranslator& t, const ValuePtr& self, const std::string& name);

// BINARY_OP with at least one tensor operand: the row's ATen op (in place
// for `tensor op= x`), or Tensor's reflected method with a number on the left.
ValuePtr tensor_binary_op(InstructionTranslator& t, bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs);
// COMPARE_OP with at least one tensor operand; `op` is Py_LT..Py_GE.
ValuePtr tensor_compare(InstructionTranslator& t, int op, const ValuePtr& lhs, const ValuePtr& rhs);
// UNARY_NEGATIVE / UNARY_POSITIVE / UNARY_INVERT on a tensor.
ValuePtr tensor_unary(InstructionTranslator& t, bc::Opcode op, const ValuePtr& operand);

// Python numbers from Tensor.item() (symbolic_numbers.cpp): item() itself,
// operators and compares with constants, numbers and tensors, unary minus,
// float()/int()/abs()/math.sqrt... (`handled` false when `fn` is none of
// them or no argument is a number), and addcdiv_/addcmul_ whose `value=`
// is a number.
ValuePtr tensor_item(InstructionTranslator& t, const ValuePtr& self);
// Tensor.tolist(): nested lists of traced numbers (capture_scalar_outputs).
ValuePtr tensor_tolist(InstructionTranslator& t, const ValuePtr& self);
// torch.tensor(x) of a Python scalar constant or number: a 0-d tensor of
// the dtype torch.tensor infers (null without failure for other data).
ValuePtr tensor_of_scalar(InstructionTranslator& t, const ValuePtr& data, const Kwargs& kwargs);
// torch.tensor(data) of nested lists/tuples of Python scalar constants or
// numbers (at most 256): each element a 0-d tensor, stacked and reshaped
// (null without failure for other data: ragged, empty, non-numbers).
// A device named by a string constant ("cpu") as a torch.device constant
// (null when `v` is no string or names no device).
ValuePtr device_of_string(const ValuePtr& v);
ValuePtr tensor_of_data(InstructionTranslator& t, const ValuePtr& data, const Kwargs& kwargs);
// An int traced as a graph input (automatic dynamic ints) is a 0-d tensor:
// as a torch function's or method's argument (torch.full((2,), n), t.pow(n),
// a size) it would be one, not the int: refused, the int made a constant.
bool refuse_dynamic_int_arguments(InstructionTranslator& t, const ValuePtr& self, const std::vector<ValuePtr>& args,
                                  const Kwargs& kwargs, const std::string& what);
// torch.broadcast_tensors (torch_broadcast.cpp): `handled` false when the
// ATen op should run (dynamic dims, shapes that do not broadcast).
ValuePtr broadcast_tensors(InstructionTranslator& t, const std::vector<ValuePtr>& args, const Kwargs& kwargs,
                           bool& handled);
// A number from Tensor.item()/.tolist() as an operand of a tensor op,
// read as eager reads the Python scalar (number_arguments.cpp):
// `scalar_common_dtype` is TensorIterator's common dtype of these operands
// (numbers and Python constants as wrapped numbers); `number_read_as` the
// number cast to the dtype the op reads it in, or null with a break where
// that cast would not give eager's value or exception (`checked`: eager
// converts with an overflow check); `numbers_as_operands` converts every
// number among a user call's arguments (false with a break for an op whose
// reading of a scalar is not modelled).
c10::ScalarType scalar_common_dtype(const std::vector<ValuePtr>& operands);
ValuePtr number_read_as(InstructionTranslator& t, const ValuePtr& number, c10::ScalarType dtype, bool checked,
                        const std::string& what);
bool numbers_as_operands(InstructionTranslator& t, const std::string& aten_name, std::vector<ValuePtr>& args,
                         Kwargs& kwargs);
// call_aten for a torch function or Tensor method the user's code called:
// its number arguments go through numbers_as_operands first.
ValuePtr call_aten_from_user(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr> args,
                             Kwargs kwargs);
ValuePtr number_binary_op(InstructionTranslator& t, bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs);
ValuePtr number_compare(InstructionTranslator& t, int op, const ValuePtr& lhs, const ValuePtr& rhs);
ValuePtr number_unary(InstructionTranslator& t, bc::Opcode op, const ValuePtr& v);
ValuePtr number_function(InstructionTranslator& t, PyObject* fn, const std::vector<ValuePtr>& args, bool& handled);
// torch.full(size, n) and x.new_full(size, n) with a Python number `n`
// from the graph (size_numbers.cpp): the number cast to the dtype and
// expanded; `like` is new_full's tensor, else null. `handled` false for
// other calls and keywords.
ValuePtr full_of_number(InstructionTranslator& t, const ValuePtr& like, const std::vector<ValuePtr>& args,
                        const Kwargs& kwargs, bool& handled);
// x.add_/add/sub_/sub(y, alpha=n), x.mul_/mul/div_/div/add_/add/sub_/sub(n)
// of a floating tensor with a Python number `n` from the graph (an lr or
// a beta read from an optimizer's param group, traced as a graph input):
// n cast to x's dtype as the Scalar argument is, `x + n * y` spelled
// addcmul(x, y, n), the kernel's single rounding (ATen's add takes alpha
// only as a Scalar). `handled` false for other calls.
ValuePtr pointwise_with_number(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                               const std::vector<ValuePtr>& args, const Kwargs& kwargs, bool& handled);
ValuePtr addc_with_number_value(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                                std::vector<ValuePtr>& args, Kwargs& kwargs, bool& handled);

ValuePtr tensor_getitem(InstructionTranslator& t, const ValuePtr& self, const ValuePtr& index);
bool tensor_setitem(InstructionTranslator& t, const ValuePtr& self, const ValuePtr& index, const ValuePtr& value);

// narrow(self, dim, start, length) with 0-d integer tensors as start or
// length: their values when the graph runs (sym_item), not the Tensor
// overload, whose meta kernel reads the value.
void narrow_bounds(InstructionTranslator& t, std::vector<ValuePtr>& args, Kwargs& kwargs);
// A factory's sizes (torch.zeros(n, 2), x.new_full((n,), v)) that are ints
// from Tensor.item()/.tolist() (capture_scalar_outputs): sym_item nodes, the
// values known when the graph runs.
void factory_size_numbers(InstructionTranslator& t, const std::string& name, std::vector<ValuePtr>& args,
                          Kwargs& kwargs);
// torch.unique / torch.unique_consecutive (Python functions in
// torch.functional) as their ATen ops, when capture_dynamic_output_shape_ops
// keeps data-dependent sizes in the graph (data_dependent.cpp); `handled`
// false: not such a call (or flags that are not constants).
// torch.nonzero(x, as_tuple=True) (and Tensor.nonzero): aten::nonzero_numpy's
// tuple; as_tuple=False: aten::nonzero. `handled` false for other keywords.
ValuePtr nonzero_as_tuple(InstructionTranslator& t, const std::vector<ValuePtr>& args, const Kwargs& kwargs,
                          bool& handled);
ValuePtr call_unique(InstructionTranslator& t, const std::string& name, const std::vector<ValuePtr>& args,
                     const Kwargs& kwargs, bool& handled);

}  // namespace tj::tracer
