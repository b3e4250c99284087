// ReleasedGil: the GIL released for a scope and taken back however the
// scope ends (an exception included).
//
// LibTorch's autograd engine refuses to run under the GIL, and AOT's capture
// (the pipeline's, the size probes') and `torch.autograd.grad` traced at
// trace time run it; nothing inside such a scope may touch Python. The
// thread must hold the GIL when the scope begins. Header only: the Python
// headers come from the layer that includes it, as for py_ref.h.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace tj {

struct ReleasedGil {
  PyThreadState* state = PyEval_SaveThread();
  ReleasedGil() = default;
  ReleasedGil(const ReleasedGil&) = delete;
  ReleasedGil& operator=(const ReleasedGil&) = delete;
  ~ReleasedGil() { PyEval_RestoreThread(state); }
};

}  // namespace tj
