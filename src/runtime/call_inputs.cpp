// What a compiled graph's call needs around the graph itself (see
// call_inputs.h): the CPU generator's state kept for a rerun, the traced
// seeds made before the graph, the inputs' aliasing check, and int and size
// inputs as 0-d tensors. The call itself is compiled_graph.cpp.
#include "runtime/call_inputs.h"

#include <mutex>
#include <unordered_set>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>

#include "runtime/backend_step.h"
#include "runtime/cpp_errors.h"
#include "runtime/output_rebuild.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

// The default CPU generator's state, to put back when a graph that drew
// random numbers fails and its frame is rerun (eager draws them once).
CpuRngState cpu_rng_state() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  auto* cpu = gen.get<at::CPUGeneratorImpl>();
  return CpuRngState{cpu->engine(), cpu->next_float_normal_sample(), cpu->next_double_normal_sample()};
}

void set_cpu_rng_state(const CpuRngState& state) {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  auto* cpu = gen.get<at::CPUGeneratorImpl>();
  cpu->set_engine(state.engine);
  cpu->set_next_float_normal_sample(state.next_float_normal);
  cpu->set_next_double_normal_sample(state.next_double_normal);
}

// The traced code's torch.manual_seed and torch.seed calls that came before
// any random op (tracer::SideEffect::Kind::manual_seed, seed), in program
// order: made before the graph runs. 0, or -1 with a Python error set.
int seed_before_graph(const std::vector<tracer::SideEffectTemplate>& effects, PyObject* const* inputs) {
  for (const auto& e : effects) {
    const bool fresh = e.kind == tracer::SideEffect::Kind::seed;
    if (e.kind != tracer::SideEffect::Kind::manual_seed && !fresh) continue;
    std::vector<PyObject*> memo;
    PyRef seed = rebuild(e.value, {}, inputs, memo);
    PyRef torch = seed ? PyRef::steal(PyImport_ImportModule("torch")) : PyRef();
    if (!torch) return -1;
    PyRef r = PyRef::steal(fresh ? PyObject_CallMethod(torch.get(), "seed", nullptr)
                                 : PyObject_CallMethod(torch.get(), "manual_seed", "O", seed.get()));
    if (!r) return -1;
  }
  return 0;
}

// The tensor inputs share storage as `pairs` says (input_aliasing's answer),
// without its quadratic walk when they shared none at compile time.
bool same_aliasing(PyObject* const* args, int n, const std::vector<std::pair<int, int>>& pairs) {
  if (!pairs.empty()) return input_aliasing(args, n) == pairs;
  std::unordered_set<const void*> storages;
  for (int i = 0; i < n; ++i) {
    const at::Tensor& t = unpack_tensor(args[i]);
    if (!t.has_storage() || !storages.insert(t.storage().unsafeGetStorageImpl()).second) return false;
  }
  return true;
}

PyObject* int_input_tensor(PyObject* value) {
  if (PyFloat_CheckExact(value)) {  // a float traced as a graph input (its DYNAMIC_FLOAT guard)
    const double v = PyFloat_AS_DOUBLE(value);
    PyObject* out = nullptr;
    if (!run_as_torch_binding([&] { out = wrap_tensor(at::scalar_tensor(v, at::kDouble)); })) return nullptr;
    return out;
  }
  if (!tracer::fits_dynamic_int(value)) {
    PyErr_SetString(PyExc_TypeError, "tracejit: a compiled graph's int input is not an int in [-2**31, 2**31)");
    return nullptr;
  }
  const long long v = PyLong_AsLongLong(value);
  PyObject* out = nullptr;
  if (!run_as_torch_binding([&] { out = wrap_tensor(at::scalar_tensor(static_cast<int64_t>(v), at::kLong)); })) return nullptr;
  return out;
}

PyObject* size_input_tensor(int64_t value) {
  PyObject* out = nullptr;
  if (!run_as_torch_binding([&] { out = wrap_tensor(at::scalar_tensor(value, at::kLong)); })) return nullptr;
  return out;
}

}  // namespace tj::runtime
