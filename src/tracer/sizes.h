// The sizes family of the tracer, as free functions over a TraceContext
// (trace_context.h): symbolic sizes (symbolic_sizes.cpp), sizes used as
// numbers (size_numbers.cpp) and data-dependent sizes (data_dependent.cpp).
// Where an input has dynamic dims, the sizes read into Python are symints
// (size nodes in the graph); arithmetic and comparisons on them make more
// size nodes and facts (the SIZE_FACTS guard); a size meeting a tensor or a
// float becomes a graph input computed per call; a size that depends on
// tensor data may never be decided by Python. Each function sees the
// values it is given and the context's operations, not the translator.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tracer/binary_ops.h"
#include "tracer/trace_context.h"
#include "tracer/trace_state.h"

namespace tj::tracer {

// Symbolic sizes (symbolic_sizes.cpp). Where an input has dynamic dims,
// the sizes read into Python are symints: size nodes in the graph.
// Size `dim` (>= 0) of a tensor value: a constant, or a symint when it may vary.
ValuePtr tensor_size(TraceContext cx, const ValuePtr& tensor, int64_t dim);
// Duck sizing, when the graph is finished: an input size the graph or a
// fact uses that equals one used before becomes that size's node, and
// their equality a size fact.
void duck_size_inputs(TraceContext cx);
// x.shape / x.size(): a tuple of tensor_size values (a torch.Size constant when none varies).
ValuePtr tensor_shape(TraceContext cx, const ValuePtr& tensor);
ValuePtr tensor_numel(TraceContext cx, const ValuePtr& tensor);
// The product of ints and sizes (torch.Size.numel()); null for other values.
ValuePtr size_product(TraceContext cx, const std::vector<ValuePtr>& sizes);
// + - * // % of ints with a symint among them: a symint; `handled` false
// for anything else (then the symints are for specialize()).
ValuePtr symint_binary(TraceContext cx, bc::BinaryOp op, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled);
// < <= == != > >= of ints with a symint among them: the answer, a fact the guards check.
ValuePtr symint_compare(TraceContext cx, int op, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled);
// `n ** k` (k >= 0) and `c ** n` of an int constant and a symint: a
// sym_pow node, with the facts that keep it within int64 (and n >= 0 for
// an exponent); `n ** m` of two sizes for m >= 0 (a fact) with the fact
// that it stays within int64; `handled` false otherwise (a float, a huge int).
ValuePtr symint_power(TraceContext cx, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled);
// Whether `v <op> c` (v a symint or an int constant), a fact when v is a size.
bool size_holds(TraceContext cx, int op, const ValuePtr& v, int64_t c);
// Calls that keep sizes symbolic: int(n), max/min(a, b) (the comparison
// is the fact), bool(n), operator.add/sub/mul/floordiv/mod/neg/index and
// the comparisons, math.prod of sizes. `handled` false for anything else.
ValuePtr call_on_sizes(TraceContext cx, PyObject* fn, const std::vector<ValuePtr>& args, bool& handled);
// Sizes used as numbers (size_numbers.cpp): a symint over the inputs'
// sizes as a graph input flagged a Python number (null when it reads an
// intermediate's size, or the frame specializes them); whether a size
// fact makes a number from sizes nonzero/nonnegative/positive (recorded);
// BINARY_OP of a size with a tensor, a float, a number, or `/`; float(n),
// math.sqrt(n), math.log(n). `handled` false: specialize as before.
enum class SizeNumberUse { nonzero, nonnegative, positive };
ValuePtr size_as_number(TraceContext cx, const ValuePtr& size);
bool size_fact_holds(TraceContext cx, SizeNumberUse use, const ValuePtr& number);
ValuePtr size_number_binary(TraceContext cx, bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled);
ValuePtr size_number_call(TraceContext cx, PyObject* fn, const std::vector<ValuePtr>& args, bool& handled);
// math.floor/math.ceil/math.trunc/int() of a number that is a true
// division of sizes (NumberPayload::quotient_num): a size again.
ValuePtr size_quotient_call(TraceContext cx, PyObject* fn, const ValuePtr& quotient, bool& handled);
void finish_size_inputs(TraceContext cx, TraceResult& result);
// A size specialized by specialize(): recorded with why (the current
// instruction, or the caller's specialize_why) for logs and explain.
void note_specialized(TraceContext cx, const ValuePtr& size);
// COMPARE_OP on sizes: symint_compare, and == / != of tuples of sizes
// (x.shape == y.shape: item by item, as Python compares); null otherwise.
ValuePtr compare_sizes(TraceContext cx, int op, const ValuePtr& lhs, const ValuePtr& rhs);
// specialize(): the number a symint stands for, as a constant, guarded
// as a fact (the trace then holds only for that size); sequences item by
// item; any other value as it is. size_numbers(): the same, or with
// `guard` false the same numbers without facts (for a size_text, whose
// use guards them later).
ValuePtr size_numbers(TraceContext cx, const ValuePtr& v, bool guard);
inline ValuePtr specialize(TraceContext cx, const ValuePtr& v) { return size_numbers(cx, v, /*guard=*/true); }
// Whether `v` is or holds a size (symint, slice, size_text, a tuple of them).
bool shows_sizes(const ValuePtr& v);
// Sizes passed to an op's dim arguments (`dim`, `start_dim`, `dims`...)
// as numbers: which dim an op works on changes its result's rank, which
// the graph cannot leave open.
void specialize_dim_args(TraceContext cx, const std::string& op, std::vector<ValuePtr>& args,
                         std::vector<std::pair<std::string, ValuePtr>>& kwargs);
// squeeze drops the dims of size 1 it is given (every dim without one):
// whether each of them is 1 is a fact, since the result's rank follows.
void fix_squeezed_dims(TraceContext cx, const graph::Node& node);
// An op returning a list of tensors (split, chunk, unbind): their number
// follows the size of the dim it splits, which is made a fact (or, for
// an op without a `dim`, every size stays exact: note_sizes_read).
void fix_result_count(TraceContext cx, const graph::Node& node);
// The SIZE_FACTS guard for the facts recorded, if any (at the end of a trace).
void add_size_facts_guard(TraceContext cx);
// Data-dependent sizes (data_dependent.cpp, graph/unbacked_sizes.h):
// whether the node of `v` (a tensor or a symint) is computed from a
// data-dependent op; `unbacked_size_read` refuses (unsupported, true) a
// read of `tensor`'s exact sizes (`what`: strides, a view shaped by its
// sizes) when one of its dims depends on data; `refuse_unbacked_fact`
// refuses a fact or a specialization of a data-dependent size (Python
// would branch on a number the graph knows only when it runs);
// `note_unbacked_op` takes a data-dependent op's node into the graph, or
// (capture_dynamic_output_shape_ops off) refuses it: false then.
bool unbacked(TraceContext cx, const ValuePtr& v);
bool unbacked_size_read(TraceContext cx, const ValuePtr& tensor, const std::string& what);
bool refuse_unbacked_fact(TraceContext cx, const ValuePtr& lhs, const ValuePtr& rhs, const char* what);
bool note_unbacked_op(TraceContext cx, const graph::Node& node);
// A 0-d integer tensor (or a number from Tensor.item()) used as an int
// (a slice bound: `x[:lengths[0]]`): a sym_item node, its value known when
// the graph runs; `v` itself for any other value; null with unsupported
// set when capture_dynamic_output_shape_ops is off.
ValuePtr unbacked_int(TraceContext cx, const ValuePtr& v);

}  // namespace tj::tracer
