// A `cuda::Device` on the host for tests: memory is malloc'ed, and a kernel
// "loaded" from a DeviceProgram is its CUDA C compiled with g++ against the
// emulation header cuda_emu.h (one host thread per CUDA thread). Launches
// run at most three blocks of 64 threads: the generated kernels stride over
// the grid, so the whole index space is still covered, with the wrap-around
// exercised. `limit_bytes` makes `alloc` fail like a full device.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "jit/cuda_codegen.h"
#include "jit/cuda_device.h"
#include "jit/llvm_codegen.h"
#include "jit/nvrtc_compile.h"

namespace tj::jit::test_util {

inline const std::string& emu_temp_dir() {
  static const std::string dir = [] {
    char d[] = "/tmp/tracejit_cuda_emu_XXXXXX";
    return std::string(mkdtemp(d));
  }();
  return dir;
}

// Where cuda_emu.h is: the source tree's tests/unit/jit, found through
// TRACEJIT_SOURCE_ROOT (the test environment sets it). Not a compile-time
// path: an absolute path in the flags made every checkout's compile of the
// jit tests a ccache miss.
inline std::string emu_header_dir() {
  const char* root = std::getenv("TRACEJIT_SOURCE_ROOT");
  return std::string(root && *root ? root : ".") + "/tests/unit/jit";
}

// The g++ command of every emulated compile (the precompiled header's too: g++ uses one only with the same flags).
inline const std::string kEmuCompiler = "g++ -std=c++17 -O1 -w -fPIC -pthread";

// cuda_emu.h precompiled once per process into the temp dir, beside the
// kernels' sources, where g++ looks for `cuda_emu.h.gch` before the header
// itself: parsing the header (and the C++ headers it includes) was half of
// each g++ run's ~0.45 CPU-s, now ~0.18. Removed at exit (15 MB). If it
// cannot be made, g++ reads the header as before.
inline void precompile_emu_header() {
  static const bool made = [] {
    static const struct Removed {
      std::string path;
      ~Removed() { std::remove(path.c_str()); }
    } gch{emu_temp_dir() + "/cuda_emu.h.gch"};
    const std::string cmd = kEmuCompiler + " -x c++-header " + emu_header_dir() + "/cuda_emu.h -o " + gch.path +
                            " 2> " + gch.path + ".log";
    return std::system(cmd.c_str()) == 0;
  }();
  (void)made;
}

// `code` (which includes cuda_emu.h) as a shared library; the address of `symbol` in it.
inline Expected<void*> compile_emulated(const std::string& code, const std::string& symbol,
                                        const std::string& shown_source) {
  static int counter = 0;
  precompile_emu_header();
  const std::string base = emu_temp_dir() + "/emu_" + std::to_string(counter++);
  std::ofstream(base + ".cpp") << code;
  const std::string cmd = kEmuCompiler + " -shared -I" + emu_header_dir() + " -o " + base + ".so " + base +
                          ".cpp 2> " + base + ".log";
  if (std::system(cmd.c_str()) != 0)
    return Error{"g++ rejected the emulated kernel (" + base + ".log):\n" + nvrtc::numbered(shown_source)};
  void* so = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!so) return Error{dlerror()};
  void* fn = dlsym(so, symbol.c_str());
  if (!fn) return Error{"no " + symbol + " in " + base + ".so"};
  return fn;
}

// The kernel's CUDA C compiled for the host (cuda_emu.h) behind the strided
// ABI (at most three blocks of 64 threads: the grid-stride loops wrap).
// `vector_width` 4 renders the four-lane variant (a `vectorizable` kernel).
inline Expected<CompiledKernel> emulate(const loop::Kernel& k, int vector_width = 1) {
  static std::map<std::string, CompiledKernel> cache;      // by kernel
  static std::map<std::string, CompiledKernel> by_source;  // by the C it renders to
  const std::string key = std::to_string(vector_width) + loop::print_kernel(k, false);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  // Kernels that differ only where their CUDA C does not (sizes, which it
  // takes at run time) are one program: one g++ run serves them all. Each
  // .so is loaded RTLD_LOCAL, so every one may name its kernel emu_kernel.
  const std::string name = "emu_kernel";
  auto source = cuda::render(k, name, vector_width);
  if (!source) return source.error();
  const int outer = static_cast<int>(k.sizes.size()) - k.reduced_dims;
  std::ostringstream host;
  host << "#include \"cuda_emu.h\"\n"
       << *source << "\nextern \"C\" void " << name
       << "_host(char* const* p, const long long* sizes, const long long* strides) {\n  long long rows = 1;\n";
  for (int d = 0; d < outer; ++d) host << "  rows *= sizes[" << d << "];\n";
  if (vector_width > 1) host << "  rows = rows / " << vector_width << " + rows % " << vector_width << ";\n";
  host << "  long long blocks = " << (k.reduced_dims ? "rows" : "(rows + 63) / 64")
       << ";\n  if (blocks > 3) blocks = 3;\n  if (blocks < 1) blocks = 1;\n  tj_emu_launch(" << name
       << ", p, sizes, strides, blocks, 64);\n}\n";
  if (auto it = by_source.find(host.str()); it != by_source.end()) return cache.emplace(key, it->second).first->second;
  auto fn = compile_emulated(host.str(), name + "_host", *source);
  if (!fn) return fn.error();
  CompiledKernel out;
  out.strided = reinterpret_cast<loop::StridedFn>(*fn);
  by_source.emplace(host.str(), out);
  cache.emplace(key, out);
  return out;
}

class EmulatedDevice : public cuda::Device {
 public:
  using Launcher = void (*)(char* const*, const long long*, const long long*, long long, int);

  std::string name() const override { return "the host emulation (cuda_emu.h)"; }
  std::string arch() const override { return "sm_80"; }
  Expected<cuda::DevicePtr> alloc(size_t bytes) override {
    if (limit_bytes && in_use_ + bytes > limit_bytes)
      return Error{"cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2)"};
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);  // as cuMemAlloc aligns
    sizes_[p] = bytes;
    in_use_ += bytes;
    ++allocs;
    return reinterpret_cast<cuda::DevicePtr>(p);
  }
  void free(cuda::DevicePtr ptr) override {
    void* p = reinterpret_cast<void*>(ptr);
    in_use_ -= sizes_[p];
    sizes_.erase(p);
    std::free(p);
  }
  Status copy_to_device(cuda::DevicePtr dst, const void* src, size_t bytes) override {
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    bytes_in += static_cast<long long>(bytes);
    return ok_status();
  }
  Status copy_to_host(void* dst, cuda::DevicePtr src, size_t bytes) override {
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return ok_status();
  }
  Expected<int> load(const std::string& name, const std::string& source, const std::string& ptx) override {
    if (ptx.find(".entry " + name) == std::string::npos) return Error{"no .entry " + name + " in the PTX"};
    const std::string code = "#include \"cuda_emu.h\"\n" + source + "\nextern \"C\" void " + name +
                             "_launch(char* const* p, const long long* sizes, const long long* strides, long long "
                             "blocks, int threads) {\n  tj_emu_launch(" + name +
                             ", p, sizes, strides, blocks, threads);\n}\n";
    // By the whole program, for every device of the process: the tests make a
    // device each, and most load the same kernels (one g++ run each).
    static std::map<std::string, Launcher> launchers;
    auto key = launchers.find(code);
    if (key == launchers.end()) {
      auto fn = compile_emulated(code, name + "_launch", source);
      if (!fn) return fn.error();
      key = launchers.emplace(code, reinterpret_cast<Launcher>(*fn)).first;
    }
    kernels_.push_back(key->second);
    return static_cast<int>(kernels_.size() - 1);
  }
  Status launch(int kernel, long long blocks, int threads, cuda::DevicePtr ptrs, cuda::DevicePtr sizes,
                cuda::DevicePtr strides) override {
    if (threads % 32 != 0 || threads > 1024) return Error{"bad block size " + std::to_string(threads)};
    kernels_.at(static_cast<size_t>(kernel))(reinterpret_cast<char* const*>(ptrs),
                                             reinterpret_cast<const long long*>(sizes),
                                             reinterpret_cast<const long long*>(strides), blocks < 3 ? blocks : 3, 64);
    ++launches;
    return ok_status();
  }
  Status synchronize() override { return ok_status(); }

  size_t limit_bytes = 0;  // 0: no limit
  long long allocs = 0, launches = 0, bytes_in = 0;

 private:
  std::map<void*, size_t> sizes_;
  size_t in_use_ = 0;
  std::vector<Launcher> kernels_;
};

}  // namespace tj::jit::test_util
