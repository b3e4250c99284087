// The loop IR: what one fusion group becomes before LLVM.
//
// A `Kernel` is one loop nest over an iteration space (`sizes`). Its last
// `reduced_dims` dimensions are the inner (reduction) dimensions, the others
// the outer ones; a pointwise group has no inner dimensions. Its body is a
// list of scalar expressions in SSA order: each `Expr` reads earlier
// expressions by index, a kernel input (`load`), or a constant, and has the
// dtype it is computed in. A `reduce_*` expression folds its argument over
// the inner dimensions into one value per outer point ("row").
//
// The order of loops is not written down: it follows from the expressions.
// An expression is *inner* when it varies along the inner dimensions (it
// loads an input that does, or reads an inner expression); every other one
// is *outer*, computed once per row. A reduction can run in the first inner
// loop after the outer values its argument reads are known, so softmax
// (max, then a sum of exp(x - max), then exp(x - max) / sum) needs three
// inner loops over each row and layer_norm two: see `schedule`. Inner
// expressions are recomputed in each loop that needs them (loads from a row
// that is still in cache are cheaper than a buffer).
//
// Outputs name the expression they store and whether they have the full
// shape (stored inside an inner loop) or one value per row; the caller
// allocates them with eager's strides. Inputs are read with the strides the
// tensors have at run time, mapped onto the kernel's dimensions (broadcast
// dimensions get stride 0), so views need no copies.
//
// The text form (`print_kernel`) is what the `output_code` log shows and,
// without the kernel's name, the key of the kernel cache: two groups that
// print the same compile to the same machine code.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/ScalarType.h>

#include "jit/loop_ops.h"
#include "support/expected.h"

namespace tj::jit::loop {

// The ops and their semantics: loop_ops.h.

struct Expr {
  Op op = Op::constant;
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int> args;  // indices of earlier expressions
  int input = -1;         // load: which kernel input
  double value = 0;       // constant (integers and bools are exact below 2^53)
};

// Where the flat fast path finds element (row r, inner index j) of a
// buffer: `full` at r * cols + j (a contiguous tensor of the kernel's
// shape; r alone without inner dimensions), `row` at r (one value per row),
// `col` at j (a row broadcast over the outer dimensions), `scalar` at 0.
// `other` buffers need the strided path.
enum class Layout { full, row, col, scalar, other };

struct Input {
  c10::ScalarType dtype = c10::ScalarType::Float;
  Layout layout = Layout::other;  // as compiled for; checked at run time
  bool inner = false;             // varies along the inner dimensions
};

struct Output {
  int expr = -1;
  c10::ScalarType dtype = c10::ScalarType::Float;
  bool full = true;  // the kernel's shape (false: one value per row)
  Layout layout = Layout::other;
  // Written into the buffer of this kernel input, which it reads element
  // for element at the same place (an optimizer's state updated in place):
  // the store goes through the input's pointer, so no two pointers alias.
  int in_place_of = -1;
};

struct Kernel {
  std::string name;  // for logs only
  std::vector<int64_t> sizes;
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  std::vector<Expr> exprs;
  int reduced_dims = 0;  // the last `reduced_dims` of `sizes` are inner
  // The dimensions are in the tensors' order and every output's layout is
  // flat (full/row): a flat variant is generated besides the strided one.
  bool contiguous_outputs = false;
  // debug_inject_bug=relu_accuracy_error: relu adds 1 (tests the repro tools).
  bool relu_plus_one = false;

  int add(Expr e) {
    exprs.push_back(std::move(e));
    return static_cast<int>(exprs.size()) - 1;
  }
};

// When each expression can be computed (see the file comment): `inner[e]`,
// and `loop[e]`, for an inner expression the first inner loop it can run in,
// for an outer one the number of loops that must finish before it (a
// reduction: the one it runs in, plus one). `loops`: how many inner loops
// a row needs (0 for a pointwise kernel). `store_loop[o]`: where output o is
// stored (a full one: in that loop; one per row: once that many loops ran).
//
// `plans[p]` says what inner loop p does: the reductions it folds, the full
// outputs it stores, the inner expressions it computes (`needed`), and the
// *spills*: a costly inner expression (a transcendental function) that an
// earlier loop computed is not computed again in a later loop that stores
// an output of its dtype: the earlier loop writes it into that output's
// buffer and the later one reads it back (softmax's exp(x - max), stored
// by the loop that sums it, then scaled in place, as ATen's kernel does).
struct LoopPlan {
  std::vector<int> reductions;
  std::vector<int> stores;
  std::vector<bool> needed;
  std::vector<std::pair<int, int>> spill_stores;  // (expr, output)
  std::vector<std::pair<int, int>> spill_loads;   // (expr, output)
};
struct Schedule {
  std::vector<bool> inner;
  std::vector<int> loop;
  std::vector<int> store_loop;
  int loops = 0;
  std::vector<LoopPlan> plans;
};
Schedule schedule(const Kernel& kernel);

// Checks `kernel` against the op table (loop_ops.h): every expression
// reads earlier ones, as many as its op takes, of the dtype the op is
// computed in, and has the result dtype the table's rule gives; loads and
// outputs name existing inputs and expressions. The code generators run it
// first: a kernel it rejects is a compiler bug, never compiled.
Status verify(const Kernel& kernel);

// Merges identical expressions (the same op, dtype, operands, input or
// constant): emitters load an input once per use and layer_norm and
// softmax over the same rows compute the same reductions.
void deduplicate(Kernel& kernel);

// Readable text: rank, dtypes, one line per expression. `with_name` false
// gives the canonical form used as the cache key.
std::string print_kernel(const Kernel& kernel, bool with_name = true);

// The machine ABI of a compiled kernel. `ptrs`: outputs then inputs.
// Strided: `sizes` has rank entries, `strides` rank entries per pointer in
// the same order, in elements. Flat: `rows` outer points of `cols` inner
// elements each (a pointwise kernel: `rows` elements, `cols` 1), every
// buffer at the place its `Layout` says.
using StridedFn = void (*)(char* const* ptrs, const int64_t* sizes, const int64_t* strides);
using FlatFn = void (*)(char* const* ptrs, int64_t rows, int64_t cols);

// Whether calls can take the flat entry when their inputs are laid out as
// compiled for (contiguous outputs, no input of Layout::other).
bool has_flat_entry(const Kernel& kernel);

// Whether expression `i` is `x - max(x)` over the reduced dims (softmax's
// shift): then it is <= 0 or NaN.
bool is_shifted_by_own_max(const Kernel& kernel, int i);

}  // namespace tj::jit::loop
