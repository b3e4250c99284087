// A CUDA device as the nvrtc backend and `tests/gpu/gpu_check` drive it:
// the `Device` interface (the CUDA driver, cuda_driver.h, or in tests the
// host emulation), a caching allocator over it, and the `DeviceProgram`: a
// lowered graph whose steps are all fused kernels, with every buffer and
// launch fixed at compile time, run by a `ProgramRunner` that keeps its
// buffers (and unchanged inputs: a module's parameters) resident on the
// device between calls.
//
// Nothing here includes ATen, LLVM or NVRTC: `gpu_check` links these files
// with only NVRTC and the driver (dlopen), and a program made by a test on
// a CPU machine travels to a GPU machine as text (to_text / from_text).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/expected.h"

namespace tj::jit::cuda {

using DevicePtr = unsigned long long;

// What a program needs of a device. Every call is checked: an error names
// the driver call and its error.
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  // "sm_90": what NVRTC should compile for.
  virtual std::string arch() const = 0;
  virtual Expected<DevicePtr> alloc(size_t bytes) = 0;
  virtual void free(DevicePtr ptr) = 0;
  virtual Status copy_to_device(DevicePtr dst, const void* src, size_t bytes) = 0;
  // Waits for the launches before it.
  virtual Status copy_to_host(void* dst, DevicePtr src, size_t bytes) = 0;
  // A kernel handle for `name` in `ptx` (compiled from `source`, which the
  // host emulation runs instead).
  virtual Expected<int> load(const std::string& name, const std::string& source, const std::string& ptx) = 0;
  // kernel<<<blocks, threads>>>(ptrs, sizes, strides): the generated ABI (cuda_codegen.h).
  virtual Status launch(int kernel, long long blocks, int threads, DevicePtr ptrs, DevicePtr sizes,
                        DevicePtr strides) = 0;
  virtual Status synchronize() = 0;
};

// Device memory in blocks rounded up to 512 bytes; a released block is kept
// for the next request of its rounded size, and the cache is emptied and
// the request retried when the device runs out of memory. Thread-safe.
class DeviceAllocator {
 public:
  explicit DeviceAllocator(Device& device) : device_(device) {}
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  Expected<DevicePtr> take(size_t bytes);
  void give_back(DevicePtr ptr, size_t bytes);
  void empty_cache();

  long long device_allocations() const { return device_allocations_; }
  long long reused() const { return reused_; }
  size_t cached_bytes() const { return cached_bytes_; }
  static size_t rounded(size_t bytes) { return bytes == 0 ? 512 : (bytes + 511) / 512 * 512; }

 private:
  void empty_locked();

  Device& device_;
  std::mutex mutex_;
  std::multimap<size_t, DevicePtr> free_;
  size_t cached_bytes_ = 0;
  long long device_allocations_ = 0;
  long long reused_ = 0;
};

// A buffer of a program: an input (copied in), an output (copied back) or
// a temporary (read only inside the program). An input may also be an
// output (a graph that returns its input) by being listed in both.
struct ProgramBuffer {
  enum class Role { input, output, temp } role = Role::temp;
  size_t bytes = 0;
  std::string dtype;  // "float32", ...: for gpu_check's comparisons and the logs
};

struct ProgramKernel {
  std::string name;
  std::string source;  // CUDA C (cuda_codegen.h)
  std::string ptx;     // for the architecture it was compiled for; "" when compiled where it runs
};

struct ProgramLaunch {
  int kernel = 0;
  std::vector<int> buffers;       // outputs, then inputs: the kernel's `ptrs`
  std::vector<int64_t> sizes;     // the kernel's `sizes`
  std::vector<int64_t> strides;   // per buffer, per dim, in elements
  long long blocks = 1;
  int threads = 256;
};

struct DeviceProgram {
  std::vector<ProgramKernel> kernels;
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramLaunch> launches;
  std::vector<int> inputs;   // buffer per program input
  std::vector<int> outputs;  // buffer per program output
};

// A text form that from_text reads back (kernels' sources and PTX inline).
std::string to_text(const DeviceProgram& program);
Expected<DeviceProgram> from_text(const std::string& text);

// A host input of one call: `key` identifies its contents (for a tensor: its
// impl, data pointer and version counter; 0 = unknown): an input whose key
// is the last call's is not copied again.
struct HostInput {
  const void* data = nullptr;
  size_t bytes = 0;
  uint64_t key = 0;
};

// Runs one DeviceProgram on one device; every buffer is allocated by the
// first call and kept until the runner dies (given back to the allocator).
// Not thread-safe: callers serialise calls.
class ProgramRunner {
 public:
  ProgramRunner(Device& device, DeviceAllocator& allocator, DeviceProgram program)
      : device_(device), allocator_(allocator), program_(std::move(program)) {}
  ~ProgramRunner();
  ProgramRunner(const ProgramRunner&) = delete;
  ProgramRunner& operator=(const ProgramRunner&) = delete;

  // Loads the kernels (compiling nothing: each ProgramKernel has its PTX).
  Status load();
  // Copies changed inputs in, launches every kernel, copies outputs back
  // into `outputs` (one pointer per program output, of the buffer's bytes).
  Status run(const std::vector<HostInput>& inputs, const std::vector<void*>& outputs);
  // Only the launches, over what is resident (timings).
  Status launch_all();

  const DeviceProgram& program() const { return program_; }
  long long uploads() const { return uploads_; }
  long long uploads_skipped() const { return uploads_skipped_; }

 private:
  Status prepare();

  Device& device_;
  DeviceAllocator& allocator_;
  DeviceProgram program_;
  std::vector<int> handles_;            // per kernel
  std::vector<DevicePtr> buffers_;      // per buffer
  std::vector<uint64_t> input_keys_;    // per program input: what its buffer holds
  DevicePtr args_ = 0;                  // every launch's ptrs, sizes and strides
  size_t args_bytes_ = 0;
  std::vector<size_t> arg_offsets_;     // per launch, into args_
  long long uploads_ = 0;
  long long uploads_skipped_ = 0;
};

// Host data in the device programs' dtypes (c10's names: "Float", "Half",
// "Long", ...): bytes per element, element `i` as a double (float16 and
// bfloat16 widened), and deterministic data for inputs too large to ship
// (the same on every machine: a hash of the index and `seed`; floats are
// multiples of 1/8 in [-4, 4), exact in every float type).
size_t element_size(const std::string& dtype);
double element(const void* data, size_t i, const std::string& dtype);
void fill_pattern(void* data, size_t count, const std::string& dtype, uint64_t seed);

}  // namespace tj::jit::cuda
