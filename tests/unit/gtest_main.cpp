// GoogleTest main for every unit-test binary: embeds CPython 3.11 (Debian's,
// so `import torch` works) for the duration of the tests.
//
// Each layer's tests are one binary (tests/unit/<layer>/meson.build); its
// meson tests, one per test source as before the merge, pick their
// source's tests with `--tj_source=test_x.cpp` (repeatable): a filter of
// the tests defined in those files (TestInfo::file()), so a test's name,
// its count and its failures stay attributable. It is an error when no
// test is defined there (a test that runs nothing must not pass). Without
// it every test of the binary runs; a `--gtest_filter` given too wins, but
// for a negative one (`-Suite.*`), which is applied to the source's tests.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

// The `--tj_source=` arguments, removed from argv.
std::vector<std::string> take_sources(int& argc, char** argv) {
  std::vector<std::string> out;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("--tj_source=")) {
      out.emplace_back(a.substr(12));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return out;
}

bool in_sources(std::string_view file, const std::vector<std::string>& sources) {
  for (const std::string& s : sources)
    if (file == s || (file.size() > s.size() && file.ends_with(s) && file[file.size() - s.size() - 1] == '/'))
      return true;
  return false;
}

// Restricts the run to the tests defined in `sources`; false when there are none.
bool filter_to_sources(const std::vector<std::string>& sources) {
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  std::string positive;
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const ::testing::TestInfo& info = *suite.GetTestInfo(t);
      if (!in_sources(info.file(), sources)) continue;
      if (!positive.empty()) positive += ':';
      positive += std::string(suite.name()) + "." + info.name();
    }
  }
  if (positive.empty()) return false;
  std::string filter = GTEST_FLAG_GET(filter);
  // A filter given too: a negative one ("-A.*") is applied to ours; one
  // that names tests wins (running one test of the binary by hand).
  if (filter.empty() || filter == "*") {
    GTEST_FLAG_SET(filter, positive);
  } else if (filter.starts_with('-')) {
    GTEST_FLAG_SET(filter, positive + filter);
  }  // else theirs names tests explicitly: it wins
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::vector<std::string> sources = take_sources(argc, argv);
  if (!sources.empty() && !filter_to_sources(sources)) {
    fprintf(stderr, "tracejit tests: no test is defined in %s\n", sources[0].c_str());
    return 1;
  }
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
