// PyObject <-> LibTorch values; see tensor_bridge.h.
#include "support/tensor_bridge.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>
#include <c10/core/GradMode.h>
#include <c10/core/DefaultDtype.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Layout.h>
#include <torch/csrc/MemoryFormat.h>
#include <torch/csrc/Size.h>
#include <torch/csrc/autograd/python_variable.h>

namespace tj {

bool is_tensor(PyObject* obj) { return THPVariable_Check(obj); }

const at::Tensor& unpack_tensor(PyObject* obj) { return THPVariable_Unpack(obj); }

PyObject* wrap_tensor(const at::Tensor& tensor) { return THPVariable_Wrap(tensor); }

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
PyObject* size_type() { return reinterpret_cast<PyObject*>(&THPSizeType); }

PyObject* dtype_object(c10::ScalarType dtype) {
  PyObject* obj = reinterpret_cast<PyObject*>(torch::getTHPDtype(dtype));
  Py_XINCREF(obj);
  return obj;
}

PyObject* device_object(c10::Device device) { return THPDevice_New(device); }

PyObject* size_object(const std::vector<int64_t>& sizes) {
  return THPSize_NewFromSizes(static_cast<int>(sizes.size()), sizes.data());
}

std::optional<c10::ScalarType> result_type(c10::ScalarType tensor_dtype, size_t tensor_dim, PyObject* number) {
  c10::Scalar s;
  if (PyBool_Check(number)) {
    s = c10::Scalar(number == Py_True);
  } else if (PyLong_Check(number)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (overflow) return std::nullopt;
    s = c10::Scalar(static_cast<int64_t>(v));
  } else if (PyFloat_Check(number)) {
    s = c10::Scalar(PyFloat_AS_DOUBLE(number));
  } else if (PyComplex_Check(number)) {
    s = c10::Scalar(c10::complex<double>(PyComplex_RealAsDouble(number), PyComplex_ImagAsDouble(number)));
  } else {
    return std::nullopt;
  }
  // Only the dtype and whether the tensor is 0-d take part in promotion.
  at::Tensor t = at::empty(std::vector<int64_t>(tensor_dim, 0), at::TensorOptions().dtype(tensor_dtype).device(c10::kMeta));
  return at::result_type(t, s);
}

uint64_t dispatch_key_bits(const at::Tensor& tensor) { return tensor.key_set().raw_repr(); }

bool grad_mode_enabled() { return c10::GradMode::is_enabled(); }
void set_grad_mode_enabled(bool enabled) { c10::GradMode::set_enabled(enabled); }

c10::ScalarType default_dtype() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }

const void* storage_identity(const at::Tensor& tensor) {
  if (!tensor.has_storage()) return tensor.unsafeGetTensorImpl();
  return tensor.storage().unsafeGetStorageImpl();
}
}  // namespace tj
