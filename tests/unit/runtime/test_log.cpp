// Log topics: parsing of --log / TRACEJIT_LOGS specs.
#include <gtest/gtest.h>

#include "support/log.h"

namespace tj::log {
namespace {

TEST(LogTopics, OffByDefaultAndEnabledByName) {
  std::string error;
  ASSERT_TRUE(set_topics("", &error));
  for (int i = 0; i < kTopicCount; ++i) EXPECT_FALSE(enabled(static_cast<Topic>(i)));
  ASSERT_TRUE(set_topics("graph_breaks, recompiles", &error));
  EXPECT_TRUE(enabled(Topic::graph_breaks));
  EXPECT_TRUE(enabled(Topic::recompiles));
  EXPECT_FALSE(enabled(Topic::guards));
}

TEST(LogTopics, AllEnablesEverything) {
  std::string error;
  ASSERT_TRUE(set_topics("all", &error));
  for (int i = 0; i < kTopicCount; ++i) EXPECT_TRUE(enabled(static_cast<Topic>(i)));
  ASSERT_TRUE(set_topics("", &error));
}

TEST(LogTopics, UnknownTopicIsRejectedWithoutChangingState) {
  std::string error;
  ASSERT_TRUE(set_topics("perf", &error));
  EXPECT_FALSE(set_topics("perf,bogus", &error));
  EXPECT_NE(error.find("'bogus'"), std::string::npos);
  EXPECT_NE(error.find("graph_code"), std::string::npos);
  EXPECT_TRUE(enabled(Topic::perf));
  EXPECT_FALSE(enabled(Topic::graph_breaks));
}

TEST(LogTopics, NamesRoundTrip) {
  std::string error;
  for (int i = 0; i < kTopicCount; ++i) {
    auto t = static_cast<Topic>(i);
    ASSERT_TRUE(set_topics(topic_name(t), &error)) << error;
    EXPECT_TRUE(enabled(t));
  }
}

}  // namespace
}  // namespace tj::log
