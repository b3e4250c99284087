// Loop IR -> CUDA C: the `nvrtc` backend's code generator.
//
// One `extern "C" __global__` kernel per loop-IR kernel, with the strided
// ABI of the llvm backend (loop_ir.h, StridedFn): `ptrs` (outputs, then
// inputs), `sizes` (rank entries) and `strides` (rank entries per pointer,
// in elements), all in device memory. The body is the same schedule the
// LLVM code generator follows (loop::schedule):
//  - a pointwise kernel is a grid-stride loop, one element per thread;
//  - a reduction kernel gives each row (outer point) to a block, grid-
//    stride over the rows: for each inner loop of the row's plan the
//    block's threads stride over the row's inner elements, each folding
//    its own partial value, and a block reduction (warp shuffles, then one
//    value per warp through shared memory) gives every thread the row's
//    value before the next loop. A thread reads back only spills it wrote
//    itself (each thread owns the same elements in every loop).
// Expressions follow the op table (loop_ops.h) as the llvm backend does:
// each pointwise op is a C spelling per dtype class from one table, and the
// prelude's helpers for the table's NaN rules (maximum/minimum, max/min
// reductions keeping NaN) and its reductions' combiners are generated from
// its rows; integers wrap on overflow; float16/bfloat16 are their bits,
// converted through float32 (the lowering computes them in float32).
//
// The source is plain CUDA C++ that NVRTC compiles (nvrtc_compile.h) and that the
// host emulation header of the tests (tests/unit/jit/cuda_emu.h) compiles
// with g++ to run on CPU tensors: it includes nothing and uses only
// `threadIdx`/`blockIdx`/`blockDim`/`gridDim`, `__syncthreads`,
// `__shfl_down_sync`, `__shared__` and the C math functions.
#pragma once

#include <string>

#include "jit/loop_ir.h"
#include "support/expected.h"

namespace tj::jit::cuda {

// Threads per block of pointwise kernels, and of reduction kernels (a block
// per row: fewer threads, more rows in flight, measured best on an H100 with
// the inner loops unrolled by 4; docs/gpu-results.md). The kernels work
// for any multiple of the warp size up to 1024 (the block reduction's
// shared memory holds one value per warp).
constexpr int kBlockThreads = 256;
constexpr int kReductionThreads = 128;

// The CUDA C source of `kernel` as a function named `name`, or an error
// naming what is not generated yet. `vector_width` 4 (only for a
// `vectorizable` kernel): each thread of the main loop moves four
// consecutive elements with one vector load or store per buffer, and the
// last rows % 4 elements follow one per thread. Such a kernel assumes its
// full buffers contiguous, as compiled, and 4-element aligned (device
// buffers are): the nvrtc backend's device plans check the first, the
// allocator gives the second.
Expected<std::string> render(const loop::Kernel& kernel, const std::string& name, int vector_width = 1);

// The C spelling of pointwise op `op` computed in `t` (cuda_codegen.cpp's
// table: $0-$2 the operands, $T the C type, $U the unsigned type of the
// integer's width, $f "f" for float32's math functions), or nullptr where
// the table has none (the op table lists no such dtype; loads, constants,
// casts, inner_count and reductions, which the renderer spells itself).
const char* spelling(loop::Op op, c10::ScalarType t);

// A pointwise kernel whose outputs are contiguous and whose inputs are each
// contiguous in the kernel's shape, one broadcast value, or (when the last
// size is a multiple of 4) laid out in any way: those are read element by
// element at one offset per four lanes.
bool vectorizable(const loop::Kernel& kernel);

// Launch shape for a kernel over these sizes: one block of
// kReductionThreads per row for reductions (at most `max_blocks`), enough
// blocks of kBlockThreads for one element (one vector) per thread for
// pointwise kernels (same cap).
struct LaunchShape {
  long long blocks = 1;
  int threads = kBlockThreads;
};
LaunchShape launch_shape(const loop::Kernel& kernel, const int64_t* sizes, long long max_blocks, int vector_width = 1);

}  // namespace tj::jit::cuda
