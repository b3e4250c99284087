// GpuCases: the cases `tests/gpu/gpu_check` runs on a GPU machine
// (scripts/gpu-check; format in tests/gpu/gpu_check.cpp), written from the
// nvrtc backend's own DevicePrograms and eager's results on this CPU:
//  - correctness cases: every fused reduction and pointwise chain the
//    emulated tests cover, with their inputs and eager's outputs;
//  - speed cases at the sizes of issue 13's goals (2^24 elements, softmax
//    over 4096 x 1024): inputs from cuda::fill_pattern, the sums of eager's
//    outputs, eager's CPU time, and the bytes an ideal kernel moves.
// Each small case is first run here on the emulated device and compared
// with what it expects, so a GPU failure is the GPU's, not the file's.
// The directory is $TJ_GPU_CASES_DIR, else a temporary one.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include <ATen/Parallel.h>

#include "emulated_device.h"
#include "jit/lowering.h"
#include "jit/nvrtc_backend.h"
#include "jit/nvrtc_device.h"
#include "llvm_test_util.h"
#include "reduction_cases.h"

namespace tj::jit {
namespace {

using namespace test_util;  // NOLINT: the helpers of llvm_test_util.h

std::string cases_dir() {
  const char* env = std::getenv("TJ_GPU_CASES_DIR");
  std::string dir = env && *env ? env : emu_temp_dir() + "/gpu_cases";
  std::filesystem::create_directories(dir);
  return dir;
}

struct Tolerance {
  double rtol, atol;
};

Tolerance tolerance(const std::vector<at::Tensor>& outputs) {
  Tolerance t{0, 0};
  for (const at::Tensor& o : outputs) {
    const c10::ScalarType d = o.scalar_type();
    const Tolerance x = d == at::kHalf     ? Tolerance{1e-3, 1e-3}
                        : d == at::kBFloat16 ? Tolerance{1e-2, 1e-2}
                        : d == at::kFloat    ? Tolerance{1e-4, 1e-5}
                        : d == at::kDouble   ? Tolerance{1e-11, 1e-12}
                                             : Tolerance{0, 0};
    t = {std::max(t.rtol, x.rtol), std::max(t.atol, x.atol)};
  }
  return t;
}

bool close(double got, double want, Tolerance t) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= t.atol + t.rtol * std::fabs(want);
}

size_t span_bytes(const at::Tensor& t) {
  return at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.element_size());
}

class Writer {
 public:
  explicit Writer(std::string dir) : dir_(std::move(dir)) {}

  // The graph's DevicePlan, or why there is none (the case is not written).
  Expected<DevicePlan> plan(const Body& body, const std::vector<at::Tensor>& inputs) {
    auto built = build(body, inputs);
    if (!built) return Error{"eager rejects the graph"};
    graph_ = built->graph;
    auto program = lower(built->graph, {});
    if (!program) return program.error();
    auto kernels = generate_cuda(*program);
    if (!kernels) return kernels.error();
    return plan_device_program(*program, *kernels, built->metas);
  }

  // A correctness case: inputs and eager's outputs as data; checked on the emulated device.
  void correctness(const std::string& name, const std::string& title, const Body& body,
                   const std::vector<at::Tensor>& inputs) {
    auto p = plan(body, inputs);
    if (!p) return;
    auto eager = graph::interpret_tensors(*graph_, inputs);
    if (!eager.ok()) return;
    std::vector<at::Tensor> outs;  // per program output: the first graph output it is
    for (size_t k = 0; k < p->outputs.size(); ++k)
      if (p->outputs[k].first && static_cast<size_t>(p->outputs[k].second) == outs.size()) outs.push_back((*eager)[k]);
    for (const at::Tensor& o : outs)
      if (span_bytes(o) != static_cast<size_t>(o.numel()) * o.element_size()) return;  // gpu_check compares dense outputs
    std::string in_bytes, out_bytes;
    for (size_t i = 0; i < inputs.size(); ++i) in_bytes.append(static_cast<const char*>(inputs[i].data_ptr()), span_bytes(inputs[i]));
    for (const at::Tensor& o : outs) out_bytes.append(static_cast<const char*>(o.data_ptr()), span_bytes(o));
    const Tolerance tol = tolerance(outs);
    ASSERT_TRUE(emulated_run_matches(p->program, in_bytes, out_bytes, tol)) << name;
    std::ofstream(dir_ + "/" + name + ".program") << cuda::to_text(p->program);
    std::ofstream(dir_ + "/" + name + ".in", std::ios::binary) << in_bytes;
    std::ofstream(dir_ + "/" + name + ".out", std::ios::binary) << out_bytes;
    std::ofstream(dir_ + "/" + name + ".case") << "title " << title << "\ninputs data\nexpected data\nrtol " << tol.rtol
                                               << "\natol " << tol.atol << "\n";
    ++written_;
  }

  // A speed case: pattern inputs, the sums of eager's outputs, eager's time.
  void speed(const std::string& name, const std::string& title, const Body& body,
             const std::vector<graph::TensorMeta>& metas, double goal) {
    std::vector<at::Tensor> inputs;
    for (size_t i = 0; i < metas.size(); ++i) {
      at::Tensor t = at::empty(metas[i].sizes, at::TensorOptions().dtype(metas[i].dtype));
      cuda::fill_pattern(t.data_ptr(), static_cast<size_t>(t.numel()), c10::toString(t.scalar_type()), 1000 + i);
      inputs.push_back(t);
    }
    auto p = plan(body, inputs);
    ASSERT_TRUE(p.ok()) << name << ": " << p.error().message;
    std::vector<at::Tensor> eager;
    double best_ms = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      auto r = graph::interpret_tensors(*graph_, inputs);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      ASSERT_TRUE(r.ok());
      best_ms = std::min(best_ms, ms);
      eager = *r;
    }
    size_t traffic = 0;
    for (const at::Tensor& t : inputs) traffic += span_bytes(t);
    std::ostringstream sums;
    for (size_t k = 0; k < p->outputs.size(); ++k) {
      ASSERT_TRUE(p->outputs[k].first);
      traffic += span_bytes(eager[k]);
      sums << ' ' << std::setprecision(17) << eager[k].to(at::kDouble).sum().item<double>();
    }
    std::ofstream(dir_ + "/" + name + ".program") << cuda::to_text(p->program);
    std::ofstream(dir_ + "/" + name + ".case") << "title " << title << "\ninputs pattern 1000\nexpected sums"
                                               << sums.str() << "\nrtol 1e-4\natol 1e-3\neager_cpu_ms " << best_ms
                                               << "\ntraffic_bytes " << traffic << "\ngoal " << goal << "\n";
    ++written_;
  }

  int written() const { return written_; }

  // The CUDA C of the graph's kernels, in order.
  Expected<std::string> kernel_sources(const Body& body, const std::vector<at::Tensor>& inputs) {
    auto built = build(body, inputs);
    if (!built) return Error{"eager rejects the graph"};
    auto program = lower(built->graph, {});
    if (!program) return program.error();
    auto kernels = generate_cuda(*program);
    if (!kernels) return kernels.error();
    std::string all;
    for (const auto& k : *kernels) all += k.source + "\n";
    return all;
  }

 private:
  bool emulated_run_matches(const cuda::DeviceProgram& program, const std::string& in, const std::string& out,
                            Tolerance tol) {
    cuda::ProgramRunner runner(device_, allocator_, program);
    if (auto s = runner.load(); !s) return ADD_FAILURE() << s.error().message, false;
    std::vector<cuda::HostInput> inputs;
    size_t at = 0;
    for (int b : program.inputs) {
      const size_t bytes = program.buffers[static_cast<size_t>(b)].bytes;
      inputs.push_back({in.data() + at, bytes, 0});
      at += bytes;
    }
    std::string got(out.size(), '\0');
    std::vector<void*> outputs;
    at = 0;
    for (int b : program.outputs) {
      outputs.push_back(got.data() + at);
      at += program.buffers[static_cast<size_t>(b)].bytes;
    }
    if (auto s = runner.run(inputs, outputs); !s) return ADD_FAILURE() << s.error().message, false;
    at = 0;
    for (int b : program.outputs) {
      const cuda::ProgramBuffer& buf = program.buffers[static_cast<size_t>(b)];
      const size_t size = cuda::element_size(buf.dtype);
      for (size_t k = 0; k < buf.bytes / size; ++k) {
        const double g = cuda::element(got.data() + at, k, buf.dtype), w = cuda::element(out.data() + at, k, buf.dtype);
        if (!close(g, w, tol)) return ADD_FAILURE() << "element " << k << ": got " << g << ", want " << w, false;
      }
      at += buf.bytes;
    }
    return true;
  }

  std::string dir_;
  std::shared_ptr<const Graph> graph_;
  EmulatedDevice device_;
  cuda::DeviceAllocator allocator_{device_};
  int written_ = 0;
};

std::string slug(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

TEST(GpuCases, WrittenFromTheBackendsProgramsAndCheckedOnTheEmulatedDevice) {
  at::set_num_threads(1);
  at::manual_seed(7);
  Writer w(cases_dir());
  for (c10::ScalarType t : kDtypes) {
    const std::string d = c10::toString(t);
    w.correctness("chain_" + d, "pointwise chain " + d + " (5, 70)", chain, {values({5, 70}, t), values({5, 70}, t)});
    w.correctness("chain_transposed_" + d, "pointwise chain " + d + ", transposed + broadcast row", chain,
                  {values({70, 5}, t).t(), values({5}, t)});
    w.correctness("chain_vector_strided_" + d, "pointwise chain " + d + ", vectorized: transposed (12, 8) + row",
                  chain, {values({12, 8}, t).t(), values({12}, t)});
    w.correctness("chain_vector_broadcast_" + d, "pointwise chain " + d + ", vectorized: (3, 5, 8) + (3, 1, 8)",
                  chain, {values({3, 5, 8}, t), values({3, 1, 8}, t)});
  }
  for (c10::ScalarType t : {at::kFloat, at::kDouble}) {
    at::Tensor x = values({3000}, t);
    x[3] = NAN;
    x[4] = INFINITY;
    w.correctness(std::string("transcendental_") + c10::toString(t), "sin exp tanh sigmoid rsqrt erf", transcendental,
                  {x, values({3000}, t)});
  }
  for (const Reduction& r : reductions())
    for (c10::ScalarType t : {at::kFloat, at::kLong, at::kHalf, at::kBFloat16})
      if (!r.floats_only || at::isFloatingType(t))
        for (const char* layout : {"3d permuted", "nan rows"}) {
          const std::string name = slug(r.name + "_" + c10::toString(t) + "_" + layout);
          w.correctness(name, r.name + " " + c10::toString(t) + " " + layout, single(r.make), {input(layout, t)});
        }
  // Dynamic shapes (issue 15 item 3): sizes are kernel arguments, so one
  // kernel source serves every size of a layout class (the vectorized
  // pointwise variant differs only by whether the last size is a multiple
  // of 4); on the GPU each size runs that same source, remainders included.
  const int before_dynamic = w.written();
  std::map<std::string, std::string> source_of;  // kernel class -> the source of its first size
  const Body softmax = single(call("aten::_softmax", {int64_t{-1}, false}));
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {7, 13}, {64, 100}, {9, 1027}, {33, 4}, {2, 4099}}) {
    const std::string size = std::to_string(rows) + "x" + std::to_string(cols);
    const std::vector<std::pair<std::string, Body>> bodies{{"chain", chain}, {"softmax", softmax},
                                                           {"layer_norm", single(layer_norm(0, false))}};
    for (const auto& [what, body] : bodies) {
      const std::vector<at::Tensor> in = what == "chain" ? std::vector<at::Tensor>{values({rows, cols}, at::kFloat),
                                                                                    values({cols}, at::kFloat)}
                                                         : std::vector<at::Tensor>{values({rows, cols}, at::kFloat)};
      w.correctness("dynamic_" + what + "_" + size, what + " float32 (" + size + "), the kernel source of every size",
                    body, in);
      auto sources = w.kernel_sources(body, in);
      ASSERT_TRUE(sources.ok()) << sources.error().message;
      const std::string key = what + (what == "chain" && cols % 4 == 0 ? " vectorized" : "");
      auto [first, inserted] = source_of.emplace(key, *sources);
      EXPECT_EQ(first->second, *sources) << key << " at " << size << ": another kernel source than at the first size";
    }
  }
  EXPECT_EQ(w.written(), before_dynamic + 18);
  const int correctness = w.written();
  EXPECT_GT(correctness, 80);

  auto meta = [](std::vector<int64_t> sizes) { return graph::TensorMeta::contiguous(std::move(sizes), at::kFloat); };
  const int64_t n = int64_t{1} << 24;
  w.speed("speed_add_2p24", "x + y, 2^24 float32", [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{call2(g, "aten::add.Tensor", x[0], x[1])};
  }, {meta({n}), meta({n})}, 0.7);
  w.speed("speed_silu_mul_2p24", "x * sigmoid(x) * y, 2^24 float32", [](Graph& g, const std::vector<Node*>& x) {
    Node* s = call2(g, "aten::mul.Tensor", x[0], g.call(op("aten::sigmoid"), {x[0]}));
    return std::vector<Node*>{call2(g, "aten::mul.Tensor", s, x[1])};
  }, {meta({n}), meta({n})}, 0.7);
  w.speed("speed_bias_relu_16384x1024", "relu(x + bias), (16384, 1024) + (1024,) float32",
          [](Graph& g, const std::vector<Node*>& x) {
            return std::vector<Node*>{g.call(op("aten::relu"), {call2(g, "aten::add.Tensor", x[0], x[1])})};
          }, {meta({16384, 1024}), meta({1024})}, 0.7);
  w.speed("speed_softmax_4096x1024", "softmax over the last dim of (4096, 1024) float32",
          single(call("aten::_softmax", {int64_t{-1}, false})), {meta({4096, 1024})}, 0.5);
  w.speed("speed_sum_rows_16384x1024", "sum over the last dim of (16384, 1024) float32",
          single(call("aten::sum.dim_IntList", {ints({-1})})), {meta({16384, 1024})}, 0);
  w.speed("speed_layer_norm_4096x1024", "layer_norm (no weights) over (4096, 1024) float32", single(layer_norm(0, false)),
          {meta({4096, 1024})}, 0);
  EXPECT_EQ(w.written(), correctness + 6);
  std::printf("wrote %d gpu_check cases to %s\n", w.written(), cases_dir().c_str());
}

}  // namespace
}  // namespace tj::jit
