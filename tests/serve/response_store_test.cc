#include "computed/serve/response_store.h"

#include <string>

#include "gtest/gtest.h"

namespace warp::computed::serve {
namespace {

TEST(ResponseStoreTest, KeepsTheNewestAndDropsTheOldestPastItsCapacity) {
  ResponseStore store(2);
  store.Put("resp_1", nlohmann::ordered_json::array({"a"}));
  store.Put("resp_2", nlohmann::ordered_json::array({"b"}));
  store.Put("resp_1", nlohmann::ordered_json::array({"a2"}));  // replaced, not added again
  ASSERT_TRUE(store.Get("resp_1").has_value());
  EXPECT_EQ((*store.Get("resp_1"))[0], "a2");
  store.Put("resp_3", nlohmann::ordered_json::array({"c"}));
  EXPECT_FALSE(store.Get("resp_1").has_value()) << "the oldest goes first";
  EXPECT_TRUE(store.Get("resp_2").has_value());
  EXPECT_TRUE(store.Get("resp_3").has_value());
  EXPECT_FALSE(store.Get("resp_9").has_value());
}

}  // namespace
}  // namespace warp::computed::serve
