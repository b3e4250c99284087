// merge_collective_states: what every rank decides from every rank's state.
#include <gtest/gtest.h>

#include "runtime/compiler_collective.h"

namespace tj::runtime {
namespace {

CollectiveState sizes(std::map<std::string, std::vector<int64_t>> s) {
  CollectiveState state;
  state.sizes = std::move(s);
  return state;
}

TEST(CompilerCollective, DimsWhoseSizesDifferBecomeDynamic) {
  auto d = merge_collective_states({sizes({{"L['x']", {4, 8}}, {"L['y']", {3}}}),
                                    sizes({{"L['x']", {6, 8}}, {"L['y']", {3}}}),
                                    sizes({{"L['x']", {4, 8}}, {"L['y']", {3}}})});
  ASSERT_EQ(d.dynamic.size(), 1u);
  EXPECT_EQ(d.dynamic["L['x']"], (std::vector<bool>{true, false}));
  EXPECT_EQ(d.break_at, -1);
  EXPECT_EQ(d.unchanged_rank, -1);
}

TEST(CompilerCollective, ADimOneRankMadeDynamicIsDynamicOnEvery) {
  CollectiveState a = sizes({{"L['x']", {4, 8}}}), b = sizes({{"L['x']", {4, 8}}});
  b.dynamic["L['x']"] = {false, true};
  auto d = merge_collective_states({a, b});
  EXPECT_EQ(d.dynamic["L['x']"], (std::vector<bool>{false, true}));
}

TEST(CompilerCollective, EqualSizesOtherRanksAndMissingSourcesMakeNothingDynamic) {
  auto d = merge_collective_states({sizes({{"L['x']", {4, 8}}, {"L['z']", {2}}}),
                                    sizes({{"L['x']", {4, 8, 1}}}),
                                    sizes({{"L['x']", {4, 8}}})});
  EXPECT_TRUE(d.dynamic.empty());
}

TEST(CompilerCollective, TheEarliestBreakOfAnyRankIsEveryRanks) {
  CollectiveState a, b, c;
  b.break_at = 12;
  b.break_reason = "print() (a side effect)";
  c.break_at = 7;
  c.break_reason = "a data-dependent branch";
  auto d = merge_collective_states({a, b, c});
  EXPECT_EQ(d.break_at, 7);
  EXPECT_EQ(d.break_rank, 2);
  EXPECT_EQ(d.break_reason, "a data-dependent branch");
  EXPECT_EQ(merge_collective_states({a, a}).break_at, -1);
}

TEST(CompilerCollective, AnyRankGivingUpMakesEveryRankRunTheFrameUncompiled) {
  CollectiveState a, b;
  b.unchanged_reason = "unsupported opcode";
  auto d = merge_collective_states({a, b});
  EXPECT_EQ(d.unchanged_rank, 1);
  EXPECT_EQ(d.unchanged_reason, "unsupported opcode");
  EXPECT_EQ(merge_collective_states({a}).unchanged_rank, -1);
}

TEST(CompilerCollective, StatesOfDifferentFramesDecideNothingButTheMismatch) {
  CollectiveState a = sizes({{"L['x']", {4}}}), b = sizes({{"L['x']", {6}}});
  a.code = "m.py:1:f";
  b.code = "m.py:9:g";
  b.break_at = 3;
  auto d = merge_collective_states({a, b});
  EXPECT_EQ(d.mismatch, "rank 0: m.py:1:f, rank 1: m.py:9:g");
  EXPECT_TRUE(d.dynamic.empty());
  EXPECT_EQ(d.break_at, -1);
  b.code = a.code;
  EXPECT_TRUE(merge_collective_states({a, b}).mismatch.empty());
}

TEST(CompilerCollective, TraceOutcomesAgreeOnlyWhenEveryRankEndedAlike) {
  CollectiveState a, b;
  a.code = b.code = "m.py:1:f";
  a.break_at = b.break_at = 5;
  EXPECT_EQ(compare_trace_outcomes({a, b}), "");
  b.break_at = -1;  // rank 1 never reached the break
  EXPECT_EQ(compare_trace_outcomes({a, b}), "rank 0: breaks at instruction 5, rank 1: no break");
  b.break_at = 5;
  b.unchanged_reason = "unsupported opcode";
  EXPECT_EQ(compare_trace_outcomes({a, b}), "rank 0: breaks at instruction 5, rank 1: gives up");
  b.unchanged_reason.clear();
  b.code = "m.py:9:g";
  EXPECT_EQ(compare_trace_outcomes({a, b}), "different frames (rank 0: m.py:1:f, rank 1: m.py:9:g)");
}

}  // namespace
}  // namespace tj::runtime
