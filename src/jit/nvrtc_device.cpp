// The nvrtc backend's device plan and executor; see nvrtc_device.h.
#include "jit/nvrtc_device.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>

#include "graph/interpreter.h"
#include "jit/cuda_codegen.h"
#include "jit/llvm_backend.h"
#include "jit/loop_ir.h"
#include "jit/nvrtc_backend.h"
#include "support/log.h"

namespace tj::jit {

namespace {

std::atomic<long long> g_uploads{0}, g_skipped{0}, g_runs{0};

// Blocks a launch may ask for; grid-stride loops cover the rest.
constexpr long long kMaxBlocks = 1 << 20;

size_t nbytes(const graph::TensorMeta& m) {
  return at::detail::computeStorageNbytes(m.sizes, m.strides, c10::elementSize(m.dtype));
}

graph::TensorMeta meta_of(const at::Tensor& t) {
  graph::TensorMeta m;
  m.sizes = t.sizes().vec();
  m.strides = t.strides().vec();
  m.dtype = t.scalar_type();
  return m;
}

// Every buffer of the launch is laid out as the kernel's layouts say: a
// full one contiguous over the kernel's shape, a scalar one a broadcast value.
bool dense_as_compiled(const loop::Kernel& k, const cuda::ProgramLaunch& l) {
  const size_t rank = k.sizes.size(), num_out = k.outputs.size();
  for (size_t b = 0; b < l.buffers.size(); ++b) {
    const loop::Layout layout = b < num_out ? k.outputs[b].layout : k.inputs[b - num_out].layout;
    if (layout == loop::Layout::other) continue;  // read through its strides
    int64_t expected = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t stride = l.strides[b * rank + d];
      if (layout == loop::Layout::scalar ? stride != 0 : k.sizes[d] != 1 && stride != expected) return false;
      expected *= k.sizes[d];
    }
  }
  return true;
}

}  // namespace

Expected<DevicePlan> plan_device_program(const Program& p, const std::vector<GeneratedKernel>& kernels,
                                         const std::vector<graph::TensorMeta>& inputs) {
  DevicePlan plan;
  cuda::DeviceProgram& dp = plan.program;
  for (const GeneratedKernel& k : kernels) dp.kernels.push_back({k.name, k.source, k.ptx});
  // per slot: its buffer and meta
  std::vector<int> buffer_of(static_cast<size_t>(p.num_slots), -1);
  std::vector<graph::TensorMeta> meta_of_slot(static_cast<size_t>(p.num_slots));
  auto add_buffer = [&](int slot, const graph::TensorMeta& m, cuda::ProgramBuffer::Role role) {
    buffer_of[static_cast<size_t>(slot)] = static_cast<int>(dp.buffers.size());
    meta_of_slot[static_cast<size_t>(slot)] = m;
    dp.buffers.push_back({role, nbytes(m), c10::toString(m.dtype)});
    return static_cast<int>(dp.buffers.size() - 1);
  };
  if (inputs.size() != p.input_slots.size()) return Error{"the graph's placeholders and inputs differ in number"};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].device.is_cpu()) return Error{"input " + std::to_string(i) + " is not a CPU tensor"};
    dp.inputs.push_back(add_buffer(p.input_slots[i], inputs[i], cuda::ProgramBuffer::Role::input));
    plan.input_metas.push_back(inputs[i]);
  }
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::extern_op) {
      const graph::Node& node = *s.node;
      const at::Tensor* t = node.kind() == graph::NodeKind::get_attr ? p.graph->attr(node.target()) : nullptr;
      if (!t) return Error{"the step " + node.name() + " (" + node.target() + ") has no CUDA kernel"};
      const graph::TensorMeta m = meta_of(*t);
      dp.inputs.push_back(add_buffer(s.slot, m, cuda::ProgramBuffer::Role::input));
      plan.input_metas.push_back(m);
      plan.attrs.push_back(node.target());
      continue;
    }
    if (s.fail_at_run_time) return Error{"debug_inject_bug=relu_runtime_error runs on the host"};
    const loop::Kernel& k = p.kernels[static_cast<size_t>(s.kernel)];
    cuda::ProgramLaunch l;
    l.kernel = s.kernel;
    l.sizes = k.sizes;
    for (size_t o = 0; o < s.outputs.size(); ++o)
      l.buffers.push_back(add_buffer(s.outputs[o], s.output_metas[o], cuda::ProgramBuffer::Role::temp));
    for (int in : s.inputs) {
      const int b = buffer_of[static_cast<size_t>(in)];
      if (b < 0) return Error{"a kernel of " + k.name + " reads a value with no device buffer"};
      l.buffers.push_back(b);
    }
    const size_t rank = k.sizes.size();
    for (size_t b = 0; b < l.buffers.size(); ++b) {
      const int slot = b < s.outputs.size() ? s.outputs[b] : s.inputs[b - s.outputs.size()];
      const graph::TensorMeta& m = meta_of_slot[static_cast<size_t>(slot)];
      for (size_t d = 0; d < rank; ++d) {
        const int map = s.dim_maps[b][d];
        l.strides.push_back(map < 0 ? 0 : m.strides[static_cast<size_t>(map)]);
      }
    }
    const int width = kernels[static_cast<size_t>(s.kernel)].vector_width;
    if (width > 1 && !dense_as_compiled(k, l))
      return Error{"the vectorized kernel " + k.name + " would read a buffer that is not contiguous"};
    const cuda::LaunchShape shape = cuda::launch_shape(k, k.sizes.data(), kMaxBlocks, width);
    l.blocks = shape.blocks;
    l.threads = shape.threads;
    dp.launches.push_back(std::move(l));
  }
  const graph::Node* out = p.graph->output_node();
  if (!out) return plan;
  std::vector<const graph::Node*> nodes;
  bool plain = true;
  out->args().at(0).for_each_node([&](graph::Node* n) { nodes.push_back(n); });
  std::function<void(const graph::Arg&)> check = [&](const graph::Arg& a) {
    if (a.is_list()) {
      for (const graph::Arg& item : a.items()) check(item);
    } else if (!a.is_node()) {
      plain = false;
    }
  };
  check(out->args().at(0));
  if (!plain) return Error{"the graph returns a value that is not a tensor"};
  std::unordered_map<int, int> output_of_buffer;
  for (const graph::Node* n : nodes) {
    auto slot = p.slot_of.find(n);
    if (slot == p.slot_of.end()) return Error{"the graph output " + n->name() + " has no value"};
    auto input = std::find(p.input_slots.begin(), p.input_slots.end(), slot->second);
    if (input != p.input_slots.end()) {  // the graph returns its input
      plan.outputs.push_back({false, static_cast<int>(input - p.input_slots.begin())});
      continue;
    }
    const int b = buffer_of[static_cast<size_t>(slot->second)];
    if (b < 0 || dp.buffers[static_cast<size_t>(b)].role == cuda::ProgramBuffer::Role::input)
      return Error{"the graph output " + n->name() + " is not made by a kernel"};
    auto [it, fresh] = output_of_buffer.emplace(b, static_cast<int>(dp.outputs.size()));
    if (fresh) {
      dp.outputs.push_back(b);
      dp.buffers[static_cast<size_t>(b)].role = cuda::ProgramBuffer::Role::output;
      plan.output_metas.push_back(meta_of_slot[static_cast<size_t>(slot->second)]);
    }
    plan.outputs.push_back({true, it->second});
  }
  return plan;
}

namespace {

bool as_planned(const at::Tensor& t, const graph::TensorMeta& m) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == m.dtype && t.sizes() == c10::IntArrayRef(m.sizes) &&
         t.strides() == c10::IntArrayRef(m.strides);
}

// The device copy of an input is current while the tensor that filled it is
// alive (the weak reference keeps its impl's address from being reused), at
// the same data pointer and version.
struct Residency {
  c10::weak_intrusive_ptr<c10::TensorImpl> impl{c10::intrusive_ptr<c10::TensorImpl>()};
  const void* data = nullptr;
  uint32_t version = 0;
  uint64_t key = 0;
};

std::atomic<uint64_t> g_next_key{1};

uint64_t key_for(Residency& r, const at::Tensor& t) {
  const uint32_t version = t.unsafeGetTensorImpl()->version_counter().current_version();
  auto held = r.impl.lock();
  if (r.key && held.get() == t.unsafeGetTensorImpl() && r.data == t.data_ptr() && r.version == version) return r.key;
  r.impl = c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr());
  r.data = t.data_ptr();
  r.version = version;
  r.key = g_next_key++;
  return r.key;
}

struct DeviceExecutable {
  std::shared_ptr<const graph::Graph> graph;
  DevicePlan plan;
  std::unique_ptr<cuda::ProgramRunner> runner;
  std::mutex mutex;
  std::vector<Residency> residency;
};

std::vector<at::Tensor> run_on_device(DeviceExecutable& exe, c10::ArrayRef<at::Tensor> args) {
  const DevicePlan& plan = exe.plan;
  std::vector<at::Tensor> inputs(args.begin(), args.end());
  for (const std::string& name : plan.attrs) {
    const at::Tensor* t = exe.graph->attr(name);
    if (!t) throw std::runtime_error("nvrtc backend: no attribute '" + name + "'");
    inputs.push_back(*t);
  }
  bool planned = inputs.size() == plan.input_metas.size();
  for (size_t i = 0; planned && i < inputs.size(); ++i) planned = as_planned(inputs[i], plan.input_metas[i]);
  if (!planned) {
    note_inputs_differ_fallback();
    TJ_LOG(perf, "nvrtc backend: inputs differ from the compiled ones (sizes, strides or dtype); running the graph op by op");
    return graph::interpret_or_throw(*exe.graph, args);
  }
  std::vector<at::Tensor> outs;
  for (const graph::TensorMeta& m : plan.output_metas)
    outs.push_back(at::empty_strided(m.sizes, m.strides, at::TensorOptions().dtype(m.dtype)));
  {
    std::lock_guard<std::mutex> lock(exe.mutex);
    std::vector<cuda::HostInput> host(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      host[i] = {inputs[i].data_ptr(), nbytes(plan.input_metas[i]), key_for(exe.residency[i], inputs[i])};
    std::vector<void*> out_ptrs;
    for (at::Tensor& t : outs) out_ptrs.push_back(t.data_ptr());
    const long long uploads = exe.runner->uploads(), skipped = exe.runner->uploads_skipped();
    auto s = exe.runner->run(host, out_ptrs);
    g_uploads += exe.runner->uploads() - uploads;
    g_skipped += exe.runner->uploads_skipped() - skipped;
    ++g_runs;
    if (!s) throw std::runtime_error("nvrtc backend: " + s.error().message);
  }
  std::vector<at::Tensor> result;
  for (auto [from_program, i] : plan.outputs)
    result.push_back(from_program ? outs[static_cast<size_t>(i)] : args[static_cast<size_t>(i)]);
  return result;
}

}  // namespace

Expected<CompiledFn> device_compiled_fn(std::shared_ptr<const graph::Graph> graph, DevicePlan plan,
                                        cuda::Device& device, cuda::DeviceAllocator& allocator) {
  auto exe = std::make_shared<DeviceExecutable>();
  exe->graph = std::move(graph);
  exe->residency.resize(plan.input_metas.size());
  exe->runner = std::make_unique<cuda::ProgramRunner>(device, allocator, plan.program);
  exe->plan = std::move(plan);
  if (auto s = exe->runner->load(); !s) return s.error();
  return CompiledFn([exe](c10::ArrayRef<at::Tensor> args) { return run_on_device(*exe, args); });
}

DeviceCounters device_counters() { return {g_uploads.load(), g_skipped.load(), g_runs.load()}; }

}  // namespace tj::jit
