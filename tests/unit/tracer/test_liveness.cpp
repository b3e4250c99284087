// live_locals(): which fast locals are live on entry to each instruction
// (what a graph break passes to its resume function).
#include <gtest/gtest.h>

#include "py_test_util.h"
#include "tracer/bytecode.h"
#include "tracer/liveness.h"

namespace tj::tracer {
namespace {

using bc::testing::as_code;
using bc::testing::function_code;

struct Decoded {
  PyRef code;
  bc::DecodedCode decoded;
  std::vector<std::vector<bool>> live;
};

Decoded analyse(const std::string& source) {
  Decoded d;
  d.code = function_code(source, "f");
  auto decoded = bc::decode(as_code(d.code));
  EXPECT_TRUE(decoded.ok());
  d.decoded = std::move(decoded.value());
  d.live = live_locals(d.decoded.instructions, as_code(d.code)->co_nlocalsplus);
  return d;
}

int index_of(const Decoded& d, std::string_view name, int nth = 0) {
  for (size_t i = 0; i < d.decoded.instructions.size(); ++i)
    if (d.decoded.instructions[i]->name() == name && nth-- == 0) return static_cast<int>(i);
  return -1;
}

TEST(Liveness, ReadLaterIsLiveOverwrittenIsNot) {
  // slots: a=0, b=1, c=2
  Decoded d = analyse(
      "def f(a, b):\n"
      "    c = a + 1\n"
      "    print(c)\n"
      "    b = 2\n"
      "    return c + b\n");
  int call = index_of(d, "CALL");  // print(c)
  ASSERT_GE(call, 0);
  const auto& after = d.live[static_cast<size_t>(call + 1)];
  EXPECT_FALSE(after[0]) << "a is not read again";
  EXPECT_FALSE(after[1]) << "b is written before it is read";
  EXPECT_TRUE(after[2]) << "c is read by the return";
}

TEST(Liveness, LoopsKeepTheirVariablesLive) {
  // slots: x=0, n=1, i=2
  Decoded d = analyse(
      "def f(x, n):\n"
      "    for i in range(n):\n"
      "        x = x + i\n"
      "        print(i)\n"
      "    return x\n");
  int call = index_of(d, "CALL", 1);  // print(i) (the first CALL is range(n))
  ASSERT_GE(call, 0);
  const auto& after = d.live[static_cast<size_t>(call + 1)];
  EXPECT_TRUE(after[0]) << "x is read in the next iteration and by the return";
  EXPECT_FALSE(after[1]) << "n is only read before the loop";
  EXPECT_FALSE(after[2]) << "i is written by the next FOR_ITER before it is read";
}

TEST(Liveness, ExceptionHandlersReadTheirLocals) {
  // slots: x=0, y=1
  Decoded d = analyse(
      "def f(x):\n"
      "    y = 1\n"
      "    try:\n"
      "        print(x)\n"
      "    except Exception:\n"
      "        return y\n"
      "    return 0\n");
  int call = index_of(d, "CALL");
  ASSERT_GE(call, 0);
  EXPECT_TRUE(d.live[static_cast<size_t>(call)][1]) << "y is read by the handler the call may jump to";
}

TEST(Liveness, LocalsOrVarsReadEveryLocal) {
  EXPECT_TRUE(may_read_all_locals(as_code(function_code("def f(x):\n    y = x\n    return locals()\n", "f"))));
  EXPECT_TRUE(may_read_all_locals(as_code(function_code("def f(x):\n    return sorted(vars())\n", "f"))));
  EXPECT_FALSE(may_read_all_locals(as_code(function_code("def f(x):\n    y = x\n    return y\n", "f"))));
}

TEST(Liveness, ZeroArgumentSuperReadsTheFirstLocal) {
  auto method = [](const std::string& body) {
    return function_code("class B:\n    def m(self):\n        return 1\n"
                         "class C(B):\n    def m(self, x):\n" + body + "f = C.m\n", "f");
  };
  EXPECT_TRUE(super_reads_first_local(as_code(method("        return super().m()\n"))));
  EXPECT_TRUE(super_reads_first_local(as_code(method("        return __class__\n")))) << "the __class__ cell";
  EXPECT_FALSE(super_reads_first_local(as_code(method("        return B.m(self)\n")))) << "no super, no __class__";
  EXPECT_FALSE(super_reads_first_local(as_code(function_code("def f(x):\n    return super\n", "f"))));
  EXPECT_FALSE(super_reads_first_local(as_code(
      function_code("class C:\n    def m(*args):\n        return super().m()\nf = C.m\n", "f"))))
      << "no positional parameter: super() raises in eager too";
}

}  // namespace
}  // namespace tj::tracer
