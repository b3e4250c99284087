// build/tracejit: a python3.11 that has the tracejit frame hook built in.
//
// Our own options come first (--backend, --compile-all, --log, --version,
// --help); everything from the first other argument on is handed to
// CPython's own command-line handling (Py_RunMain), so `script.py args`,
// `-m mod`, `-c code`, `-` and the interactive prompt behave exactly like
// python3.11: sys.argv, __main__, sys.path[0], exit codes, tracebacks.
// Options reach the tracejit package through their environment variables
// (TRACEJIT_BACKEND, TRACEJIT_LOGS, TRACEJIT_COMPILE_ALL), which also set
// them for child launchers. sys.executable is the launcher itself, so
// `spawn`/`forkserver` children and `subprocess` runs of sys.executable are
// launchers too, with the same options; the tracejit package is found
// relative to the launcher (launcher_paths.h).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/backend.h"
#include "jit/backend_info.h"
#include "runtime/eval_frame.h"
#include "runtime/launcher_paths.h"
#include "runtime/runtime_state.h"
#include "runtime/tracejit_module.h"
#include "support/log.h"
#include "support/py_errors.h"
#include "tracejit_build_config.h"

namespace {

constexpr const char* kUsage =
    "usage: tracejit [tracejit options] [python options] (script.py | -m module | -c code | -) [args...]";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "tracejit: %s\n", message.c_str());
  std::exit(2);
}

// CPython 3.11's one-letter options: those that take a value (the rest of
// the argument or the next one), and those that end the options (-c, -m).
bool python_flag_takes_value(char c) { return c == 'W' || c == 'X'; }
bool python_flag_ends_options(char c) { return c == 'c' || c == 'm'; }
bool is_python_flag(char c) { return std::strchr("bBdEiIOPqRsSuvx", c) != nullptr; }

struct LauncherOptions {
  bool version = false;
  bool help = false;
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

// 1/0/true/false/yes/no/on/off (any case); nullopt for anything else.
std::optional<bool> parse_bool(std::string_view text) {
  std::string low;
  for (char c : text)
    if (c != ' ') low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* t : {"1", "true", "yes", "on"})
    if (low == t) return true;
  for (const char* f : {"0", "false", "no", "off", ""})
    if (low == f) return false;
  return std::nullopt;
}

// A script CPython could not open is reported as python3.11 words it, with
// our name in front (CPython would print the program name we give it).
void check_script(const std::string& script) {
  if (FILE* f = std::fopen(script.c_str(), "rb")) {
    std::fclose(f);
    return;
  }
  int err = errno;
  std::string path = script;
  if (!path.starts_with("/")) {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) path = std::string(cwd) + "/" + path;
  }
  std::fprintf(stderr, "tracejit: can't open file '%s': [Errno %d] %s\n", path.c_str(), err, std::strerror(err));
  std::exit(2);
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
      opts.help = true;
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
    } else if (a == "--check-hash-based-pycs") {
      opts.python_args.emplace_back(a);
      if (i + 1 >= argc) usage_error(std::string(a) + " needs a value");
      opts.python_args.emplace_back(argv[++i]);
    } else if (a == "--") {
      opts.python_args.emplace_back(a);
      ++i;
      goto rest;  // the script and its arguments follow
    } else if (a.starts_with("--")) {
      usage_error("unknown option '" + std::string(a) + "' (try --help)");
    } else if (a.size() > 1 && a[0] == '-') {
      // A cluster of CPython's one-letter options (-uB, -Werror, -X dev, -c code).
      opts.python_args.emplace_back(a);
      for (size_t k = 1; k < a.size(); ++k) {
        char c = a[k];
        if (python_flag_takes_value(c) || python_flag_ends_options(c)) {
          if (k + 1 == a.size()) {
            if (i + 1 >= argc) usage_error(std::string("argument expected for the -") + c + " option");
            opts.python_args.emplace_back(argv[++i]);
          }
          if (python_flag_ends_options(c)) {
            ++i;
            goto rest;  // what follows is the command's or module's argv
          }
          break;
        }
        if (!is_python_flag(c)) usage_error(std::string("unknown option -") + c + " (try --help)");
      }
    } else {
      if (a != "-") check_script(std::string(a));
      break;  // the script (or "-")
    }
  }
rest:
  for (; i < argc; ++i) opts.python_args.emplace_back(argv[i]);
  if (const char* env = std::getenv("TRACEJIT_COMPILE_ALL"); env) {
    auto on = parse_bool(env);
    if (!on) usage_error(std::string("bad TRACEJIT_COMPILE_ALL='") + env + "': expected a boolean (1/0/true/false/yes/no/on/off)");
    opts.compile_all |= *on;
  }
  if (opts.compile_all) setenv("TRACEJIT_COMPILE_ALL", "1", 1);  // children started from sys.executable too
  if (const char* env = std::getenv("TRACEJIT_LOGS"); env) {
    std::string error;
    if (!tj::log::set_topics(env, &error)) usage_error("bad TRACEJIT_LOGS: " + error);
  }
  if (const char* env = std::getenv("TRACEJIT_BACKEND"); env && !tj::runtime::is_known_backend(env)) {
    usage_error(std::string("bad TRACEJIT_BACKEND: unknown backend '") + env + "' (known: " + join_backends() + ")");
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

// --help: tracejit's options, backends, log topics and environment
// variables (the config options' come from tracejit._config).
int print_help() {
  std::printf("%s\n\n", kUsage);
  std::printf(
      "tracejit options (before the script):\n"
      "  --backend NAME   default backend of tracejit.compile (env TRACEJIT_BACKEND)\n"
      "  --compile-all    trace every frame of the user's code (env TRACEJIT_COMPILE_ALL=1)\n"
      "  --log TOPICS     comma list of log topics, or all, logged to stderr (env TRACEJIT_LOGS)\n"
      "  --version, -V    print the versions of tracejit, Python, torch, LLVM and NVRTC\n"
      "  --help, -h       print this help\n"
      "python options (-X dev, -W error, -u, -O, -c, -m, ...) work as with python3.11.\n\n");
  std::printf("backends: %s\n", join_backends().c_str());
  std::printf("log topics: %s\n\n", tj::log::known_topics().c_str());
  std::printf("environment variables:\n");
  PyObject* config = PyImport_ImportModule("tracejit._config");
  PyObject* text = config ? PyObject_CallMethod(config, "describe_environment", nullptr) : nullptr;
  const char* s = text ? PyUnicode_AsUTF8(text) : nullptr;
  if (s) std::printf("%s", s);
  Py_XDECREF(text);
  Py_XDECREF(config);
  PyErr_Clear();  // --version prints what it can
  return 0;
}

// After the interpreter is up and before the user's code runs: the
// package is imported (it checks every TRACEJIT_* value) and, under
// --compile-all, tracing starts. A bad environment value is one line and
// exit status 2.
int prepare_runtime(const LauncherOptions& opts, const std::vector<std::string>& package_dirs) {
  if (tj::runtime::install_package_finder(package_dirs) < 0) return report_python_error("cannot install the tracejit package finder");
  PyObject* tracejit = PyImport_ImportModule("tracejit");
  if (!tracejit && PyErr_ExceptionMatches(PyExc_ModuleNotFoundError)) {
    std::string where;
    for (const auto& d : package_dirs) where += "\n  " + d;
    std::fprintf(stderr, "tracejit: the tracejit Python package is neither next to the launcher nor on sys.path; looked in:%s\n",
                 where.c_str());
  }
  if (!tracejit && PyErr_ExceptionMatches(PyExc_ValueError)) {
    std::string text = tj::FetchedError::fetch().message().value_or("bad environment");  // printed; the launcher exits
    std::fprintf(stderr, "tracejit: %s\n", text.c_str());
    return 2;
  }
  if (!tracejit) return report_python_error("cannot import tracejit");
  if (!opts.compile_all) {
    Py_DECREF(tracejit);
    return 0;
  }
  PyObject* r = PyObject_CallMethod(tracejit, "_enable_compile_all", nullptr);
  Py_DECREF(tracejit);
  if (!r) return report_python_error("cannot enable --compile-all");
  Py_DECREF(r);
  return 0;
}

// Passive OpenMP waiting (issue 41 item 5). ATen's and oneDNN's threads are libgomp's, which reads
// OMP_WAIT_POLICY once, in its constructor, before main. By default a thread done with its share of a
// parallel region spins (GOMP_SPINCOUNT 300000) before it sleeps, which on a loaded 2-core machine takes the
// core from the thread that holds the rest of the work: two-thread calls measured 2.5-20x slower than with
// passive waiting (docs/benchmarks.md). So where the environment chooses no policy, the launcher starts itself
// again with OMP_WAIT_POLICY=passive: from .preinit_array, which runs before any library's constructor
// (LibTorch's op registrations included), so the second start costs only the dynamic loader's relocations.
// Children inherit the variable (no second start for them); OMP_WAIT_POLICY=active keeps spinning, and
// OMP_NUM_THREADS=1 (one thread never waits for another) starts once.
void passive_omp_wait(int /*argc*/, char** argv, char** envp) {
  if (!argv || !argv[0] || !envp) return;
  constexpr char kName[] = "OMP_WAIT_POLICY=", kOne[] = "OMP_NUM_THREADS=1";
  size_t n = 0;
  for (; envp[n]; ++n)
    if (std::strncmp(envp[n], kName, sizeof kName - 1) == 0 || std::strcmp(envp[n], kOne) == 0) return;
  // malloc works this early (libc is initialized before any preinit function); nothing else is used
  auto** env = static_cast<char**>(std::malloc((n + 2) * sizeof(char*)));
  if (!env) return;
  std::memcpy(env, envp, n * sizeof(char*));
  env[n] = const_cast<char*>("OMP_WAIT_POLICY=passive");
  env[n + 1] = nullptr;
  execve("/proc/self/exe", argv, env);
  std::free(env);  // no /proc: go on as started
}

__attribute__((section(".preinit_array"), used)) void (*const g_passive_omp_wait)(int, char**, char**) =
    passive_omp_wait;

}  // namespace

int main(int argc, char** argv) {
  LauncherOptions opts = parse_args(argc, argv);
  if (PyImport_AppendInittab("_tracejit", PyInit__tracejit) < 0) {
    std::fprintf(stderr, "tracejit: cannot register the _tracejit module\n");
    return 1;
  }

  std::vector<char*> args;
  for (auto& a : opts.python_args) args.push_back(a.data());
  if (opts.version || opts.help) args.resize(1);
  // Pre-initialization reads the options that must be known before any
  // string is decoded (-X utf8, -X dev, -E, -I); without the arguments
  // here, the first PyConfig_SetString would pre-initialize without them.
  PyPreConfig preconfig;
  PyPreConfig_InitPythonConfig(&preconfig);
  PyStatus status = Py_PreInitializeFromBytesArgs(&preconfig, static_cast<Py_ssize_t>(args.size()), args.data());
  if (PyStatus_Exception(status)) {
    if (PyStatus_IsExit(status)) return status.exitcode;
    Py_ExitStatusException(status);
  }
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  // Path configuration as for Debian's interpreter, so that its stdlib and
  // dist-packages (torch) are found wherever the launcher lives; the
  // executable is the launcher, so sys.executable starts it again and a
  // launcher in a venv's bin/ finds the venv's pyvenv.cfg (sys.prefix, its
  // site-packages), as the venv's python would.
  const std::string self = tj::runtime::launcher_path(argv[0]);
  const std::vector<std::string> package_dirs = tj::runtime::package_search_dirs(self);
  status = PyConfig_SetString(&config, &config.program_name, L"/usr/bin/python3.11");
  if (!PyStatus_Exception(status) && !self.empty())
    status = PyConfig_SetBytesString(&config, &config.executable, self.c_str());
  if (!PyStatus_Exception(status))
    status = PyConfig_SetBytesArgv(&config, static_cast<Py_ssize_t>(args.size()), args.data());
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    if (PyStatus_IsExit(status)) return status.exitcode;
    Py_ExitStatusException(status);
  }

  if (opts.version || opts.help) {
    if (opts.help && tj::runtime::install_package_finder(package_dirs) < 0) PyErr_Clear();  // help prints without it
    int rc = opts.help ? print_help() : print_version();
    Py_FinalizeEx();
    return rc;
  }
  if (int rc = prepare_runtime(opts, package_dirs); rc != 0) {
    Py_FinalizeEx();
    return rc;
  }
  int rc = Py_RunMain();  // runs the script / module / command / REPL and finalizes
  return rc;
}
