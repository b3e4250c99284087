// The per-code-object cache in co_extra: creation, epochs (reset), modes.
#include <gtest/gtest.h>

#include "runtime/code_cache.h"

namespace tj::runtime {
namespace {

PyCodeObject* compile_code(const char* source) {
  PyObject* code = Py_CompileString(source, "<test>", Py_file_input);
  EXPECT_NE(code, nullptr);
  return reinterpret_cast<PyCodeObject*>(code);
}

class CodeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(tj_hook_install(nullptr, free_code_state), 0); }
  void TearDown() override { tj_hook_uninstall(); }
};

TEST_F(CodeCacheTest, StateIsCreatedOnceAndStoredInCoExtra) {
  PyCodeObject* code = compile_code("x = 1");
  CodeState* a = code_state(code);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->mode, CodeMode::unknown);
  EXPECT_EQ(code_state(code), a);
  void* extra = nullptr;
  ASSERT_EQ(_PyCode_GetExtra(reinterpret_cast<PyObject*>(code), tj_code_extra_index(), &extra), 0);
  EXPECT_EQ(extra, a);
  Py_DECREF(code);  // frees the state through free_code_state (checked by ASan runs)
}

TEST_F(CodeCacheTest, ResetClearsEntriesAndSkipButNotNever) {
  PyCodeObject* skipped = compile_code("y = 2");
  PyCodeObject* never = compile_code("z = 3");
  CodeState* s = code_state(skipped);
  s->mode = CodeMode::skip;
  s->skip_reason = "no tensors";
  s->entries.push_back(CacheEntry{PyRef::borrow(Py_None), nullptr});
  mark_never_traced(never);

  bump_cache_epoch();
  CodeState* after = code_state(skipped);
  EXPECT_EQ(after, s);
  EXPECT_EQ(after->mode, CodeMode::unknown);
  EXPECT_TRUE(after->entries.empty());
  EXPECT_TRUE(after->skip_reason.empty());
  EXPECT_EQ(code_state(never)->mode, CodeMode::never);
  Py_DECREF(skipped);
  Py_DECREF(never);
}

TEST_F(CodeCacheTest, ActiveOptionsAreThreadStateThenDefault) {
  int marker = 0;
  int other = 0;
  EXPECT_EQ(tj_active_options(), nullptr);
  tj_set_default_options(&marker);
  EXPECT_EQ(tj_active_options(), &marker);
  tj_ActiveState prev = tj_set_active(nullptr);  // disable: nothing active, despite the default
  EXPECT_EQ(tj_active_options(), nullptr);
  tj_ActiveState prev2 = tj_set_active(&other);
  EXPECT_EQ(tj_active_options(), &other);
  tj_restore_active(prev2);
  tj_restore_active(prev);
  EXPECT_EQ(tj_active_options(), &marker);
  tj_set_default_options(nullptr);
}

}  // namespace
}  // namespace tj::runtime
