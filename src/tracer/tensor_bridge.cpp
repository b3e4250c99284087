// PyObject <-> LibTorch values; see tensor_bridge.h.
#include "tracer/tensor_bridge.h"

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>
#include <c10/core/DefaultDtype.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Layout.h>
#include <torch/csrc/MemoryFormat.h>
#include <torch/csrc/Size.h>
#include <torch/csrc/autograd/python_variable.h>

namespace tj::tracer {

bool is_tensor(PyObject* obj) { return THPVariable_Check(obj); }

const at::Tensor& unpack_tensor(PyObject* obj) { return THPVariable_Unpack(obj); }

PyObject* wrap_tensor(const at::Tensor& tensor) { return THPVariable_Wrap(tensor); }

graph::TensorMeta tensor_meta(const at::Tensor& t) { return graph::TensorMeta::of(t); }

std::optional<c10::ScalarType> as_dtype(PyObject* obj) {
  if (!THPDtype_Check(obj)) return std::nullopt;
  return reinterpret_cast<THPDtype*>(obj)->scalar_type;
}

std::optional<c10::Device> as_device(PyObject* obj) {
  if (!THPDevice_Check(obj)) return std::nullopt;
  return reinterpret_cast<THPDevice*>(obj)->device;
}

std::optional<c10::Layout> as_layout(PyObject* obj) {
  if (!THPLayout_Check(obj)) return std::nullopt;
  return reinterpret_cast<THPLayout*>(obj)->layout;
}

std::optional<c10::MemoryFormat> as_memory_format(PyObject* obj) {
  if (!THPMemoryFormat_Check(obj)) return std::nullopt;
  return reinterpret_cast<THPMemoryFormat*>(obj)->memory_format;
}

bool is_size(PyObject* obj) { return THPSize_Check(obj); }

PyObject* dtype_object(c10::ScalarType dtype) {
  PyObject* obj = reinterpret_cast<PyObject*>(torch::getTHPDtype(dtype));
  Py_XINCREF(obj);
  return obj;
}

PyObject* device_object(c10::Device device) { return THPDevice_New(device); }

PyObject* size_object(const std::vector<int64_t>& sizes) {
  return THPSize_NewFromSizes(static_cast<int>(sizes.size()), sizes.data());
}

uint64_t dispatch_key_bits(const at::Tensor& tensor) { return tensor.key_set().raw_repr(); }

bool grad_mode_enabled() { return c10::GradMode::is_enabled(); }

c10::ScalarType default_dtype() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }

}  // namespace tj::tracer

namespace tj::tracer {
const void* storage_identity(const at::Tensor& tensor) {
  if (!tensor.has_storage()) return tensor.unsafeGetTensorImpl();
  return tensor.storage().unsafeGetStorageImpl();
}
}  // namespace tj::tracer
