// The CUDA driver API through dlopen; see cuda_driver.h.
//
// The few types and constants used are declared here (the driver's ABI is
// stable; cuda.h is not needed to build). Entry points that CUDA renamed
// with a version suffix are looked up by their versioned names first.
#include "jit/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace tj::jit::cuda {

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUevent = struct CUevent_st*;
using CUstream = struct CUstream_st*;

constexpr int kAttrMultiprocessors = 16;
constexpr int kAttrMajor = 75;
constexpr int kAttrMinor = 76;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSize = 6;

struct Api {
  void* lib = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(DevicePtr*, size_t);
  CUresult (*cuMemFree)(DevicePtr);
  CUresult (*cuMemcpyHtoD)(DevicePtr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, DevicePtr, size_t);
  CUresult (*cuMemcpyDtoD)(DevicePtr, DevicePtr, size_t);
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char**);
};

// The first of `names` the library exports.
template <class F>
bool resolve(void* lib, F& fn, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* p = dlsym(lib, n)) {
      fn = reinterpret_cast<F>(p);
      return true;
    }
  return false;
}

Expected<Api> load_api(const std::string& library) {
  Api api{};
  api.lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api.lib) return Error{"the CUDA driver (" + library + ") could not be loaded: " + dlerror()};
  bool ok = resolve(api.lib, api.cuInit, {"cuInit"}) && resolve(api.lib, api.cuDeviceGetCount, {"cuDeviceGetCount"}) &&
            resolve(api.lib, api.cuDeviceGet, {"cuDeviceGet"}) &&
            resolve(api.lib, api.cuDeviceGetName, {"cuDeviceGetName"}) &&
            resolve(api.lib, api.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}) &&
            resolve(api.lib, api.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}) &&
            resolve(api.lib, api.cuCtxSetCurrent, {"cuCtxSetCurrent"}) &&
            resolve(api.lib, api.cuCtxSynchronize, {"cuCtxSynchronize"}) &&
            resolve(api.lib, api.cuMemAlloc, {"cuMemAlloc_v2"}) && resolve(api.lib, api.cuMemFree, {"cuMemFree_v2"}) &&
            resolve(api.lib, api.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}) &&
            resolve(api.lib, api.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}) &&
            resolve(api.lib, api.cuMemcpyDtoD, {"cuMemcpyDtoD_v2"}) &&
            resolve(api.lib, api.cuModuleLoadDataEx, {"cuModuleLoadDataEx"}) &&
            resolve(api.lib, api.cuModuleGetFunction, {"cuModuleGetFunction"}) &&
            resolve(api.lib, api.cuLaunchKernel, {"cuLaunchKernel"}) &&
            resolve(api.lib, api.cuEventCreate, {"cuEventCreate"}) &&
            resolve(api.lib, api.cuEventRecord, {"cuEventRecord"}) &&
            resolve(api.lib, api.cuEventSynchronize, {"cuEventSynchronize"}) &&
            resolve(api.lib, api.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}) &&
            resolve(api.lib, api.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}) &&
            resolve(api.lib, api.cuGetErrorName, {"cuGetErrorName"});
  if (!ok) return Error{"the CUDA driver (" + library + ") lacks an entry point tracejit needs"};
  return api;
}

class Driver final : public DriverDevice {
 public:
  Driver(Api api, CUcontext context, std::string name, int major, int minor, int sms)
      : api_(api), context_(context), name_(std::move(name)), major_(major), minor_(minor), sms_(sms) {}

  std::string name() const override { return name_; }
  std::string arch() const override { return "sm_" + std::to_string(major_) + std::to_string(minor_); }
  int multiprocessors() const override { return sms_; }

  Expected<DevicePtr> alloc(size_t bytes) override {
    DevicePtr p = 0;
    if (auto s = check("cuMemAlloc", current() ? api_.cuMemAlloc(&p, bytes) : last_); !s)
      return Error{s.error().message + " (" + std::to_string(bytes) + " bytes)"};
    return p;
  }
  void free(DevicePtr ptr) override {
    if (current()) api_.cuMemFree(ptr);
  }
  Status copy_to_device(DevicePtr dst, const void* src, size_t bytes) override {
    return check("cuMemcpyHtoD", current() ? api_.cuMemcpyHtoD(dst, src, bytes) : last_);
  }
  Status copy_to_host(void* dst, DevicePtr src, size_t bytes) override {
    return check("cuMemcpyDtoH", current() ? api_.cuMemcpyDtoH(dst, src, bytes) : last_);
  }
  Status copy_device_to_device(DevicePtr dst, DevicePtr src, size_t bytes) override {
    return check("cuMemcpyDtoD", current() ? api_.cuMemcpyDtoD(dst, src, bytes) : last_);
  }
  Expected<int> load(const std::string& name, const std::string&, const std::string& ptx) override {
    if (!current()) return check("cuCtxSetCurrent", last_).error();
    CUmodule module = nullptr;
    std::vector<char> log(4096, '\0');
    int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
    void* values[] = {log.data(), reinterpret_cast<void*>(log.size())};
    if (auto s = check("cuModuleLoadDataEx", api_.cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values)); !s)
      return Error{"kernel " + name + ": " + s.error().message + (log[0] ? ": " + std::string(log.data()) : "")};
    CUfunction fn = nullptr;
    if (auto s = check("cuModuleGetFunction", api_.cuModuleGetFunction(&fn, module, name.c_str())); !s)
      return Error{"kernel " + name + ": " + s.error().message};
    std::lock_guard<std::mutex> lock(mutex_);
    functions_.push_back(fn);
    return static_cast<int>(functions_.size() - 1);
  }
  Status launch(int kernel, long long blocks, int threads, DevicePtr ptrs, DevicePtr sizes,
                DevicePtr strides) override {
    CUfunction fn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn = functions_.at(static_cast<size_t>(kernel));
    }
    if (blocks > 0x7fffffffLL) blocks = 0x7fffffffLL;  // grid-stride kernels cover the rest
    void* params[] = {&ptrs, &sizes, &strides};
    return check("cuLaunchKernel", current() ? api_.cuLaunchKernel(fn, static_cast<unsigned>(blocks), 1, 1,
                                                                   static_cast<unsigned>(threads), 1, 1, 0, nullptr,
                                                                   params, nullptr)
                                             : last_);
  }
  Status synchronize() override { return check("cuCtxSynchronize", current() ? api_.cuCtxSynchronize() : last_); }

  Expected<double> time_ms(const std::function<Status()>& work) override {
    if (!current()) return check("cuCtxSetCurrent", last_).error();
    CUevent start = nullptr, stop = nullptr;
    if (auto s = check("cuEventCreate", api_.cuEventCreate(&start, 0)); !s) return s.error();
    if (auto s = check("cuEventCreate", api_.cuEventCreate(&stop, 0)); !s) return s.error();
    Status s = check("cuEventRecord", api_.cuEventRecord(start, nullptr));
    if (s) s = work();
    if (s) s = check("cuEventRecord", api_.cuEventRecord(stop, nullptr));
    if (s) s = check("cuEventSynchronize", api_.cuEventSynchronize(stop));
    float ms = 0;
    if (s) s = check("cuEventElapsedTime", api_.cuEventElapsedTime(&ms, start, stop));
    api_.cuEventDestroy(start);
    api_.cuEventDestroy(stop);
    if (!s) return s.error();
    return static_cast<double>(ms);
  }

 private:
  // The context is current on this thread (a driver context is per thread).
  bool current() {
    last_ = api_.cuCtxSetCurrent(context_);
    return last_ == 0;
  }
  Status check(const char* call, CUresult r) const {
    if (r == 0) return ok_status();
    const char* name = nullptr;
    if (api_.cuGetErrorName(r, &name) != 0 || !name) name = "unknown error";
    return Error{std::string(call) + " failed: " + name + " (" + std::to_string(r) + ")"};
  }

  Api api_;
  CUcontext context_;
  std::string name_;
  int major_, minor_, sms_;
  CUresult last_ = 0;
  std::mutex mutex_;
  std::vector<CUfunction> functions_;
};

}  // namespace

Expected<std::unique_ptr<DriverDevice>> open_driver_device(const std::string& library) {
  auto api = load_api(library);
  if (!api) return api.error();
  const Api& a = *api;
  auto fail = [&](const char* call, CUresult r) {
    const char* name = nullptr;
    if (a.cuGetErrorName(r, &name) != 0 || !name) name = "unknown error";
    return Error{std::string(call) + " failed: " + name + " (" + std::to_string(r) + ")"};
  };
  if (CUresult r = a.cuInit(0)) return fail("cuInit", r);
  int count = 0;
  if (CUresult r = a.cuDeviceGetCount(&count)) return fail("cuDeviceGetCount", r);
  if (count == 0) return Error{"no CUDA device"};
  CUdevice dev = 0;
  if (CUresult r = a.cuDeviceGet(&dev, 0)) return fail("cuDeviceGet", r);
  char name[256] = {0};
  if (CUresult r = a.cuDeviceGetName(name, sizeof name - 1, dev)) return fail("cuDeviceGetName", r);
  int major = 0, minor = 0, sms = 0;
  if (CUresult r = a.cuDeviceGetAttribute(&major, kAttrMajor, dev)) return fail("cuDeviceGetAttribute", r);
  if (CUresult r = a.cuDeviceGetAttribute(&minor, kAttrMinor, dev)) return fail("cuDeviceGetAttribute", r);
  if (CUresult r = a.cuDeviceGetAttribute(&sms, kAttrMultiprocessors, dev)) return fail("cuDeviceGetAttribute", r);
  CUcontext context = nullptr;
  if (CUresult r = a.cuDevicePrimaryCtxRetain(&context, dev)) return fail("cuDevicePrimaryCtxRetain", r);
  return std::unique_ptr<DriverDevice>(new Driver(*api, context, name, major, minor, sms));
}

DriverDevice* process_device(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<DriverDevice> device;
  static std::string reason;
  std::call_once(once, [] {
    const char* lib = std::getenv("TRACEJIT_LIBCUDA");
    auto d = open_driver_device(lib && *lib ? lib : "libcuda.so.1");
    if (d) device = std::move(*d);
    else reason = d.error().message;
  });
  if (!device && why) *why = reason;
  return device.get();
}

}  // namespace tj::jit::cuda
