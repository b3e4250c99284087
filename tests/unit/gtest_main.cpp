// GoogleTest main for every unit-test binary: embeds CPython 3.11 (Debian's,
// so `import torch` works) for the duration of the tests.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  config.install_signal_handlers = 0;
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    fprintf(stderr, "tracejit tests: cannot start Python: %s\n", status.err_msg ? status.err_msg : "?");
    return 2;
  }
  int rc = RUN_ALL_TESTS();
  Py_FinalizeEx();
  return rc;
}
