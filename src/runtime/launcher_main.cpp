// build/tracejit: a python3.11 that has the tracejit frame hook built in.
//
// Our own options come first (--backend, --compile-all, --log, --version,
// --help); everything from the first other argument on is handed to
// CPython's own command-line handling (Py_RunMain), so `script.py args`,
// `-m mod`, `-c code`, `-` and the interactive prompt behave exactly like
// python3.11: sys.argv, __main__, sys.path[0], exit codes, tracebacks.
// Options reach the tracejit package through their environment variables
// (TRACEJIT_BACKEND, TRACEJIT_LOGS, TRACEJIT_COMPILE_ALL), which also set
// defaults for child launchers.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "jit/backend.h"
#include "jit/backend_info.h"
#include "runtime/embedded_python.h"
#include "runtime/eval_frame.h"
#include "runtime/runtime_state.h"
#include "runtime/tracejit_module.h"
#include "support/log.h"
#include "tracejit_build_config.h"

namespace {

constexpr const char* kUsage =
    "usage: tracejit [--backend NAME] [--compile-all] [--log TOPICS] [--version] [python options] "
    "(script.py | -m module | -c code | -) [args...]";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "tracejit: %s\n", message.c_str());
  std::exit(2);
}

// CPython's own one-letter flags that we pass through; those that take a
// value are listed separately.
bool is_python_flag(std::string_view a) {
  static const char* kFlags[] = {"-u", "-B", "-E", "-s", "-S", "-I", "-O", "-OO", "-q", "-i", "-b", "-bb", "-v", "-P", "-R", "-d"};
  for (const char* f : kFlags) {
    if (a == f) return true;
  }
  return false;
}
bool is_python_flag_with_value(std::string_view a) { return a == "-W" || a == "-X"; }

struct LauncherOptions {
  bool version = false;
  bool compile_all = false;
  std::vector<std::string> python_args;  // argv for CPython, program name first
};

std::string join_backends() {
  std::string out;
  for (auto b : tj::runtime::known_backends()) {
    if (!out.empty()) out += ", ";
    out += b;
  }
  return out;
}

LauncherOptions parse_args(int argc, char** argv) {
  LauncherOptions opts;
  opts.python_args.push_back(argv[0]);
  int i = 1;
  auto value_of = [&](std::string_view arg, std::string_view name) -> std::string {
    if (arg.size() > name.size() && arg[name.size()] == '=') return std::string(arg.substr(name.size() + 1));
    if (i + 1 >= argc) usage_error(std::string(name) + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string_view a = argv[i];
    auto is = [&](std::string_view name) { return a == name || (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '='); };
    if (a == "--version" || a == "-V") {
      opts.version = true;
    } else if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      std::exit(0);
    } else if (a == "--compile-all") {
      opts.compile_all = true;
    } else if (is("--backend")) {
      std::string name = value_of(a, "--backend");
      if (!tj::runtime::is_known_backend(name)) usage_error("unknown backend '" + name + "' (known: " + join_backends() + ")");
      setenv("TRACEJIT_BACKEND", name.c_str(), 1);
    } else if (is("--log")) {
      std::string topics = value_of(a, "--log");
      std::string error;
      if (!tj::log::set_topics(topics, &error)) usage_error(error);
      setenv("TRACEJIT_LOGS", topics.c_str(), 1);
    } else if (is_python_flag(a)) {
      opts.python_args.emplace_back(a);
    } else if (is_python_flag_with_value(a)) {
      opts.python_args.emplace_back(a);
      if (i + 1 >= argc) usage_error(std::string(a) + " needs a value");
      opts.python_args.emplace_back(argv[++i]);
    } else if (a == "-c" || a == "-m") {
      if (i + 1 >= argc) usage_error(std::string("argument expected for the ") + std::string(a) + " option");
      break;
    } else if (a.starts_with("-") && a != "-") {
      usage_error("unknown option '" + std::string(a) + "' (try --help)");
    } else {
      break;  // the script (or "-")
    }
  }
  for (; i < argc; ++i) opts.python_args.emplace_back(argv[i]);
  if (const char* env = std::getenv("TRACEJIT_COMPILE_ALL"); env && std::string_view(env) == "1") opts.compile_all = true;
  if (const char* env = std::getenv("TRACEJIT_LOGS"); env) {
    std::string error;
    if (!tj::log::set_topics(env, &error)) usage_error("TRACEJIT_LOGS: " + error);
  }
  if (const char* env = std::getenv("TRACEJIT_BACKEND"); env && !tj::runtime::is_known_backend(env)) {
    usage_error(std::string("TRACEJIT_BACKEND: unknown backend '") + env + "' (known: " + join_backends() + ")");
  }
  return opts;
}

int report_python_error(const char* what) {
  std::fprintf(stderr, "tracejit: %s\n", what);
  if (PyErr_Occurred()) PyErr_Print();
  return 1;
}

int print_version() {
  std::printf("tracejit %s\n", TRACEJIT_VERSION);
  std::string py = Py_GetVersion();
  std::printf("Python %s\n", py.substr(0, py.find(' ')).c_str());
  PyObject* torch = PyImport_ImportModule("torch");
  if (!torch) return report_python_error("cannot import torch");
  PyObject* version = PyObject_GetAttrString(torch, "__version__");
  const char* v = version ? PyUnicode_AsUTF8(version) : nullptr;
  std::printf("torch %s\n", v ? v : "?");
  Py_XDECREF(version);
  Py_DECREF(torch);
  std::printf("%s\n", tj::jit::llvm_version_line().c_str());
  std::printf("%s\n", tj::jit::nvrtc_version_line().c_str());
  for (const char* name : {"llvm", "nvrtc"})
    if (const tj::jit::Backend* b = tj::jit::find_backend(name)) std::printf("%s backend: %s\n", name, b->description.c_str());
  return 0;
}

// After the interpreter is up and before the user's code runs.
int prepare_runtime(const LauncherOptions& opts) {
  if (tj::runtime::install_embedded_importer() < 0) return report_python_error("cannot install the tracejit importer");
  if (!opts.compile_all) return 0;
  PyObject* tracejit = PyImport_ImportModule("tracejit");
  if (!tracejit) return report_python_error("cannot import tracejit");
  PyObject* r = PyObject_CallMethod(tracejit, "_enable_compile_all", nullptr);
  Py_DECREF(tracejit);
  if (!r) return report_python_error("cannot enable --compile-all");
  Py_DECREF(r);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  LauncherOptions opts = parse_args(argc, argv);
  if (PyImport_AppendInittab("_tracejit", PyInit__tracejit) < 0) {
    std::fprintf(stderr, "tracejit: cannot register the _tracejit module\n");
    return 1;
  }

  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  // Path configuration as for Debian's interpreter, so that its stdlib and
  // dist-packages (torch) are found wherever the launcher lives.
  PyStatus status = PyConfig_SetString(&config, &config.program_name, L"/usr/bin/python3.11");
  if (!PyStatus_Exception(status)) {
    std::vector<char*> args;
    for (auto& a : opts.python_args) args.push_back(a.data());
    if (opts.version) args.resize(1);
    status = PyConfig_SetBytesArgv(&config, static_cast<Py_ssize_t>(args.size()), args.data());
  }
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    if (PyStatus_IsExit(status)) return status.exitcode;
    Py_ExitStatusException(status);
  }

  if (opts.version) {
    int rc = print_version();
    Py_FinalizeEx();
    return rc;
  }
  if (prepare_runtime(opts) != 0) {
    Py_FinalizeEx();
    return 1;
  }
  int rc = Py_RunMain();  // runs the script / module / command / REPL and finalizes
  return rc;
}
