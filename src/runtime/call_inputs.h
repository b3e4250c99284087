// What a compiled graph's call needs around the graph itself: the default
// CPU generator's state (kept when a graph that draws random numbers may be
// rerun as its frame's bytecode), the traced torch.manual_seed/torch.seed
// calls made before the graph, the check that tensor inputs alias as at
// compile time, and int and size inputs passed as 0-d tensors.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/MT19937RNGEngine.h>
#include <c10/util/Optional.h>

#include "tracer/trace_api.h"

namespace tj::runtime {

// The default CPU generator's state, and putting it back. Taken on every
// call of a graph that draws random numbers: the engine is copied as it is
// (a few KiB, no allocation), not through get_state()'s byte tensor.
struct CpuRngState {
  at::mt19937 engine;
  c10::optional<float> next_float_normal;
  c10::optional<double> next_double_normal;
};
CpuRngState cpu_rng_state();
void set_cpu_rng_state(const CpuRngState& state);

// The traced code's torch.manual_seed and torch.seed calls that came before
// any random op (tracer::SideEffect::Kind::manual_seed, seed), in program
// order: made before the graph runs. 0, or -1 with a Python error set.
int seed_before_graph(const std::vector<tracer::SideEffectTemplate>& effects, PyObject* const* inputs);

// The tensor inputs share storage as `pairs` says (input_aliasing's answer),
// without its quadratic walk when they shared none at compile time.
bool same_aliasing(PyObject* const* args, int n, const std::vector<std::pair<int, int>>& pairs);

// New reference: the 0-d int64 tensor an int input of a graph is passed as
// (`value` an int that fits tracer::fits_dynamic_int); null with a Python
// error set otherwise.
PyObject* int_input_tensor(PyObject* value);

// New reference: the 0-d int64 tensor a size input is passed as; null with
// a Python error set.
PyObject* size_input_tensor(int64_t value);

}  // namespace tj::runtime
