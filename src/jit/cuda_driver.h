// The CUDA driver API as a `Device` (cuda_device.h), loaded at run time
// with dlopen("libcuda.so.1") — no link-time dependency on a driver, so
// tracejit builds and runs where there is none. The first device's primary
// context is made current on the calling thread by every call. Every
// driver call is checked; an error names the call and the driver's error.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "jit/cuda_device.h"
#include "support/expected.h"

namespace tj::jit::cuda {

class DriverDevice : public Device {
 public:
  // Event timing for gpu_check: milliseconds between two points on the device.
  virtual Expected<double> time_ms(const std::function<Status()>& work) = 0;
  virtual Status copy_device_to_device(DevicePtr dst, DevicePtr src, size_t bytes) = 0;
  virtual int multiprocessors() const = 0;
};

// The driver's first device, or why there is none ("libcuda.so.1 not
// found", "no CUDA device"). `library` overrides the file dlopen loads.
Expected<std::unique_ptr<DriverDevice>> open_driver_device(const std::string& library = "libcuda.so.1");

// The process's device, opened once (nullptr with `why` when none).
DriverDevice* process_device(std::string* why);

}  // namespace tj::jit::cuda
