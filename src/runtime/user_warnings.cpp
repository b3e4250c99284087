// tracejit.TracejitWarning and the queue of the lower layers' warnings; see
// user_warnings.h.
#include "runtime/user_warnings.h"

#include <atomic>
#include <deque>
#include <mutex>

#include "runtime/runtime_context.h"
#include "support/warnings.h"

namespace tj::runtime {

namespace {

std::mutex g_mutex;
std::deque<std::string> g_pending;  // guarded by g_mutex
std::atomic<bool> g_any{false};     // g_pending is not empty (read without the lock)

void queue_warning(const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_pending.push_back(message);
  g_any.store(true);
}

}  // namespace

PyObject* tracejit_warning() { return runtime_context().tracejit_warning.get(); }

int register_warnings(PyObject* module) {
  RuntimeContext& context = runtime_context();
  context.tracejit_warning = PyRef::steal(PyErr_NewExceptionWithDoc(
      "tracejit.TracejitWarning",
      "A warning from tracejit (a UserWarning): filters, -W and warnings.catch_warnings apply.", PyExc_UserWarning,
      nullptr));
  if (!context.tracejit_warning) return -1;
  if (PyModule_AddObjectRef(module, "TracejitWarning", tracejit_warning()) < 0) return -1;
  set_warning_sink(&queue_warning);
  return 0;
}

int warn_user(const std::string& message, int stacklevel) {
  PyObject* category = tracejit_warning() ? tracejit_warning() : PyExc_UserWarning;
  return PyErr_WarnEx(category, message.c_str(), stacklevel);
}

int flush_pending_warnings() {
  while (g_any.load()) {
    std::string message;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (g_pending.empty()) break;
      message = std::move(g_pending.front());
      g_pending.pop_front();
      g_any.store(!g_pending.empty());
    }
    if (warn_user("tracejit: " + message) < 0) return -1;
  }
  return 0;
}

}  // namespace tj::runtime
