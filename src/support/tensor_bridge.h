// The one bridge between Python objects and LibTorch values (torch.Tensor,
// torch.dtype, torch.device, torch.layout, torch.memory_format, torch.Size),
// for every layer that holds both (the tracer and the runtime).
// Only tensor_bridge.cpp includes torch/csrc/* (python_variable.h costs ~7 s
// of compile per translation unit); everything else goes through here.
// It knows no layer above support: a tensor's graph::TensorMeta is
// graph::TensorMeta::of(unpack_tensor(obj)).
// Every function needs the GIL and `import torch` done.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

namespace at {
class Tensor;
}

namespace tj {

bool is_tensor(PyObject* obj);
// `obj` must be a tensor (is_tensor). Borrowed: valid while obj lives.
const at::Tensor& unpack_tensor(PyObject* obj);
// New reference.
PyObject* wrap_tensor(const at::Tensor& tensor);

std::optional<c10::ScalarType> as_dtype(PyObject* obj);
std::optional<c10::Device> as_device(PyObject* obj);
std::optional<c10::Layout> as_layout(PyObject* obj);
std::optional<c10::MemoryFormat> as_memory_format(PyObject* obj);
bool is_size(PyObject* obj);  // torch.Size
PyObject* size_type();        // torch.Size itself (borrowed)

// New references to the Python objects (borrowed singletons made new).
PyObject* dtype_object(c10::ScalarType dtype);
PyObject* device_object(c10::Device device);
PyObject* size_object(const std::vector<int64_t>& sizes);

// torch.result_type(number, tensor) for a Python bool/int/float/complex
// and a tensor of this dtype and number of dims (only these take part in
// promotion); nullopt for anything else.
std::optional<c10::ScalarType> result_type(c10::ScalarType tensor_dtype, size_t tensor_dim, PyObject* number);

// The tensor-identity facts a guard compares: dispatch key set bits.
uint64_t dispatch_key_bits(const at::Tensor& tensor);

// Whether autograd's grad mode is on, and the default dtype.
bool grad_mode_enabled();
void set_grad_mode_enabled(bool enabled);
c10::ScalarType default_dtype();

// An identity for the storage a tensor views (equal for tensors sharing
// memory), for storage-alias ids of graph inputs.
const void* storage_identity(const at::Tensor& tensor);
}  // namespace tj
