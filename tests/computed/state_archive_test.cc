#include "computed/engine/state_archive.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace warp::computed {
namespace {

struct Fields {
  uint32_t count = 0;
  bool flag = false;
  std::vector<float> fixed = std::vector<float>(2);
  std::vector<float> sized;
  std::vector<int32_t> ids;
  std::optional<uint32_t> checkpoint;

  void Archive(StateArchive& archive) {
    archive.Count(count, 4, "entries");
    archive.Bool(flag);
    archive.Floats(fixed);
    archive.FloatVector(sized);
    archive.IdVector(ids);
    archive.Optional(checkpoint, [&](uint32_t& at) { archive.U32(at); });
  }
};

std::string Written(Fields fields) {
  std::string out;
  StateArchive writer = StateArchive::Writer(&out);
  fields.Archive(writer);
  return out;
}

absl::Status Read(std::string_view bytes, Fields& fields) {
  StateArchive reader = StateArchive::Reader(bytes);
  fields.Archive(reader);
  return reader.Finish();
}

TEST(StateArchiveTest, WhatIsWrittenReadsBack) {
  const Fields saved{.count = 3,
                     .flag = true,
                     .fixed = {1.5f, -2},
                     .sized = {7, 8, 9},
                     .ids = {4, 5},
                     .checkpoint = 11};
  Fields loaded;
  ASSERT_TRUE(Read(Written(saved), loaded).ok());
  EXPECT_EQ(loaded.count, 3u);
  EXPECT_TRUE(loaded.flag);
  EXPECT_EQ(loaded.fixed, saved.fixed);
  EXPECT_EQ(loaded.sized, saved.sized);
  EXPECT_EQ(loaded.ids, saved.ids);
  EXPECT_EQ(loaded.checkpoint, 11u);
  // An absent optional reads back absent, whatever the reader held.
  Fields none{.checkpoint = 5};
  ASSERT_TRUE(Read(Written(Fields{}), none).ok());
  EXPECT_FALSE(none.checkpoint.has_value());
}

TEST(StateArchiveTest, WhatThisStateCannotHoldIsNamedWithItsOffset) {
  const std::string good = Written(Fields{.count = 2, .sized = {1}});
  Fields loaded;
  EXPECT_EQ(Read(good.substr(0, 2), loaded).message(), "state at byte 0: needs 4 bytes, 2 left");
  std::string over = good;
  over[0] = 5;  // count 5 of at most 4
  EXPECT_EQ(Read(over, loaded).message(),
            "state at byte 4: 5 entries, past the 4 this state holds");
  std::string flag = good;
  flag[4] = 2;
  EXPECT_EQ(Read(flag, loaded).message(), "state at byte 5: a flag of 2");
  std::string wide = good;
  wide[5] = 3;  // the fixed part's count: 3 floats where 2 are held
  EXPECT_EQ(Read(wide, loaded).message(),
            "state at byte 13: 3 floats where this model's state holds 2");
  std::string long_vector = good;
  long_vector[21] = 100;  // the sized vector's count
  EXPECT_EQ(Read(long_vector, loaded).message(), "state at byte 29: 100 floats, past the end");
  EXPECT_EQ(Read(good + "xy", loaded).message(), "state at byte 42: 2 bytes left over");
}

}  // namespace
}  // namespace warp::computed
