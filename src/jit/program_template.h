// One lowered program for every size (issue 15): the llvm backend's
// program of a graph compiled at three size points, made size-generic.
//
// A dynamic entry's graph is compiled once per size signature: AOT's size
// template (graph/size_template.h) gives the functional graph at the
// new sizes, and the backend runs its passes and lowers it again. The
// programs it lowers differ only in ints: the kernels' iteration sizes,
// the sizes, strides and offsets of the buffers it allocates, and the int
// arguments of extern ops (`view(x, [B*T, C])`). A program template takes
// the programs of three size points and makes those ints functions of the
// program's input sizes, as the AOT template does for the graph's:
//
//   * the graphs the programs were lowered from are generalized
//     (`generalize_sizes`): the template graph reads each int argument that
//     differs from size nodes over the inputs' sizes, and the program's
//     extern steps run on it, its size nodes computed first on each call;
//   * each kernel size and buffer size, stride and offset that differs is
//     fitted as a size form of the same classes (`fit_size_int`);
//   * everything else must be equal at the three points: the steps, the
//     kernels' loop IR (which holds no size: a constant such as a mean's
//     1/N would differ and refuse the template), the slots, the buffers'
//     dim maps and dtypes.
//
// The executor evaluates the forms once per new size signature of its
// inputs (`sizes_for`), so a new size costs no lowering, no passes and no
// compile, and one executable serves every size. Decisions the lowering
// took from sizes and that change no result are the first point's (a
// kernel shared among threads, oneDNN's linear for a large addmm); the flat
// fast path is chosen per call, as for any program.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/size_template.h"
#include "jit/lowering.h"
#include "support/expected.h"

namespace tj::jit {

// An int of the program that depends on the sizes.
struct ProgramInt {
  enum class Where { kernel_size, buffer_size, buffer_stride, buffer_offset } where = Where::kernel_size;
  int index = 0;   // kernel_size: the kernel; buffer_*: the step
  int output = 0;  // buffer_*: the step's output
  int dim = 0;     // kernel_size, buffer_size, buffer_stride: the dim
  graph::aot::SizeInt value;
};

struct ProgramTemplate {
  // The first point's program on the template graph (`sizes.graph`): its
  // extern steps read the graph's size nodes, which run first.
  Program program;
  graph::aot::SizeTemplate sizes;  // over the program's placeholders (all given)
  std::vector<ProgramInt> ints;
};

// The programs of one graph lowered at three or more size points -> their
// template, or why there is none.
Expected<ProgramTemplate> generalize_program(const std::vector<const Program*>& points);

// The kernels' sizes and the kernel steps' output buffers for inputs of
// these metas (sizes the template serves: template_mismatch is "").
struct ProgramSizes {
  std::vector<std::vector<int64_t>> kernel_sizes;             // per kernel
  std::vector<std::vector<graph::TensorMeta>> output_metas;  // per step
};
ProgramSizes program_sizes(const ProgramTemplate& t, const std::vector<graph::TensorMeta>& inputs);

}  // namespace tj::jit
