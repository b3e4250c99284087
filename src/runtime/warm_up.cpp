// The warm-up thread started at import: see warm_up.h.
#include "runtime/warm_up.h"

#include <Python.h>
#include <pthread.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "graph/op_registry.h"
#include "jit/llvm_codegen.h"

namespace tj::runtime {

namespace {

std::mutex g_mutex;
std::condition_variable g_done_cv;
bool g_running = false;

void warm_up_body() {
  try {
    jit::prepare_jit();
    // Any name indexes them all: the first lookup of an op by name otherwise does.
    (void)graph::OpRegistry::instance().overloads("aten::add");
  } catch (...) {
    // An optimization only: the first compile does the same work and reports what fails.
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_running = false;
  g_done_cv.notify_all();
}

void wait_at_exit() { wait_for_warm_up(); }

}  // namespace

void wait_for_warm_up() {
  std::unique_lock<std::mutex> lock(g_mutex);
  g_done_cv.wait(lock, [] { return !g_running; });
}

void start_warm_up() {
  static bool started = false;
  if (started) return;
  started = true;
  const char* env = std::getenv("TRACEJIT_WARM_UP");
  if (env && std::strcmp(env, "0") == 0) return;
  if (pthread_atfork([] { wait_for_warm_up(); }, nullptr, nullptr) != 0 || Py_AtExit(wait_at_exit) != 0) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_running = true;
  }
  try {
    std::thread(warm_up_body).detach();
  } catch (const std::system_error&) {  // no thread to be had: the first compile does it
    std::lock_guard<std::mutex> lock(g_mutex);
    g_running = false;
  }
}

}  // namespace tj::runtime
