// PyRef: an owning smart pointer for one strong reference to a PyObject.
//
// Every layer that keeps Python objects inside C++ structures uses it: the
// tracer (constants and names in `bc::Instruction`), the runtime (cache
// entries, compiled graphs). A PyRef owns exactly one reference, copies
// with Py_XINCREF and releases with Py_XDECREF. All of these need the GIL:
// every structure holding a PyRef must be created, copied and destroyed
// with the GIL held (the tracer and the runtime run inside the frame hook
// or a call from Python, where it is). Header only: the Python headers come
// from the layer that includes it (support itself does not use Python).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <utility>

namespace tj {

class PyRef {
 public:
  PyRef() = default;
  // Takes over a new reference (may be null).
  static PyRef steal(PyObject* obj) { return PyRef(obj); }
  // Adds a reference to a borrowed one (may be null).
  static PyRef borrow(PyObject* obj) {
    Py_XINCREF(obj);
    return PyRef(obj);
  }

  PyRef(const PyRef& other) : obj_(other.obj_) { Py_XINCREF(obj_); }
  PyRef(PyRef&& other) noexcept : obj_(std::exchange(other.obj_, nullptr)) {}
  PyRef& operator=(const PyRef& other) {
    if (this != &other) {
      Py_XINCREF(other.obj_);
      Py_XSETREF(obj_, other.obj_);
    }
    return *this;
  }
  PyRef& operator=(PyRef&& other) noexcept {
    if (this != &other) Py_XSETREF(obj_, std::exchange(other.obj_, nullptr));
    return *this;
  }
  ~PyRef() { Py_XDECREF(obj_); }

  // Borrowed: valid while this PyRef holds it.
  PyObject* get() const { return obj_; }
  // Gives up ownership: the caller receives the (new) reference.
  PyObject* release() { return std::exchange(obj_, nullptr); }
  explicit operator bool() const { return obj_ != nullptr; }

 private:
  explicit PyRef(PyObject* obj) : obj_(obj) {}
  PyObject* obj_ = nullptr;
};

}  // namespace tj
