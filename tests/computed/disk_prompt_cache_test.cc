#include "computed/run/disk_prompt_cache.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<DiskPromptCache> OpenCache(const fs::path& dir, uint64_t max_bytes,
                                           const std::string& key = "model-a context 64") {
  auto cache = DiskPromptCache::Open({.dir = dir, .max_bytes = max_bytes, .key = key});
  EXPECT_TRUE(cache.ok()) << cache.status();
  return cache.ok() ? *std::move(cache) : nullptr;
}

std::vector<fs::path> Entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& file : fs::directory_iterator(dir)) out.push_back(file.path());
  return out;
}

TEST(DiskPromptCacheTest, TheLongestPrefixComesBackAfterARestart) {
  warp::testing::TempDir dir;
  {
    auto cache = OpenCache(dir.path(), 1 << 20);
    cache->Store({1, 2, 3}, "state of three");
    cache->Flush();
    cache->Store({1, 2, 3, 4, 5}, "state of five");
    cache->Flush();
    cache->Store({1, 2, 9}, "another branch");
    cache->Flush();
    EXPECT_EQ(cache->stats().writes, 3u);
    cache->Store({1, 2, 3}, "state of three");  // held already: not written again
    cache->Flush();
    EXPECT_EQ(cache->stats().writes, 3u);
  }
  auto cache = OpenCache(dir.path(), 1 << 20);  // a restart: the index is read from the files
  EXPECT_EQ(cache->stats().entries, 3u);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7};
  auto hit = cache->Lookup(prompt, 0);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->ids, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(hit->state, "state of five");
  // Only entries longer than what the sequence already holds.
  EXPECT_FALSE(cache->Lookup(prompt, 5).has_value());
  hit = cache->Lookup(std::vector<int32_t>{1, 2, 3, 4}, 0);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->state, "state of three");
  EXPECT_FALSE(cache->Lookup(std::vector<int32_t>{2, 2, 3}, 0).has_value());
  EXPECT_EQ(cache->stats().hits, 2u);
  EXPECT_EQ(cache->stats().misses, 2u);
}

TEST(DiskPromptCacheTest, CorruptTruncatedAndForeignEntriesAreNeverUsed) {
  warp::testing::TempDir dir;
  {
    auto cache = OpenCache(dir.path(), 1 << 20);
    cache->Store({1, 2, 3}, std::string(1000, 'a'));
    cache->Flush();
    cache->Store({1, 2, 3, 4}, std::string(1000, 'b'));
    cache->Flush();
  }
  // Another model's entry in the same directory: left alone, never offered.
  const std::vector<int32_t> ids = {1, 2, 3, 4, 5};
  std::ofstream(dir.path() / "0000000000000001.wpc")
      << EncodePromptCacheEntry("model-b context 64", ids, "b's state");
  // One byte of the four-token entry's state flipped.
  for (const fs::path& path : Entries(dir.path())) {
    if (fs::file_size(path) < 1000 || path.filename() == "0000000000000001.wpc") continue;
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), {});
    if (bytes.find(std::string(1000, 'b')) == std::string::npos) continue;
    file.seekp(bytes.find('b') + 10);
    file.put('c');
  }
  auto cache = OpenCache(dir.path(), 1 << 20);
  EXPECT_EQ(cache->stats().entries, 2u);  // model-b's is not counted
  auto hit = cache->Lookup(ids, 0);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->ids.size(), 3u) << "the corrupt longer entry was used";
  EXPECT_EQ(cache->stats().refused, 1u);
  EXPECT_EQ(cache->stats().entries, 1u);
  EXPECT_TRUE(fs::exists(dir.path() / "0000000000000001.wpc"));
  EXPECT_EQ(Entries(dir.path()).size(), 2u) << "the corrupt entry stays on disk";

  // Truncated (a copy cut short): refused when read, not only when scanned.
  const fs::path three = [&] {
    for (const fs::path& path : Entries(dir.path())) {
      if (path.filename() != "0000000000000001.wpc") return path;
    }
    return fs::path();
  }();
  fs::resize_file(three, fs::file_size(three) - 7);
  EXPECT_FALSE(cache->Lookup(ids, 0).has_value());
  EXPECT_EQ(cache->stats().refused, 2u);
  auto reopened = OpenCache(dir.path(), 1 << 20);
  EXPECT_EQ(reopened->stats().entries, 0u);
}

TEST(DiskPromptCacheTest, PastItsBoundTheLeastRecentlyUsedGo) {
  warp::testing::TempDir dir;
  auto cache = OpenCache(dir.path(), 3000);
  cache->Store({1}, std::string(900, 'a'));
  cache->Flush();
  cache->Store({2}, std::string(900, 'b'));
  cache->Flush();
  ASSERT_TRUE(cache->Lookup(std::vector<int32_t>{1, 5}, 0).has_value());  // {1} used last
  cache->Store({3}, std::string(900, 'c'));
  cache->Flush();
  cache->Store({4}, std::string(900, 'd'));
  cache->Flush();
  EXPECT_LE(cache->stats().bytes, 3000u);
  EXPECT_EQ(cache->stats().evictions, 1u);
  EXPECT_TRUE(cache->Lookup(std::vector<int32_t>{1, 5}, 0).has_value());
  EXPECT_FALSE(cache->Lookup(std::vector<int32_t>{2, 5}, 0).has_value()) << "{2} was oldest";
  // An entry past the bound alone is not written at all.
  cache->Store({5}, std::string(4000, 'e'));
  cache->Flush();
  EXPECT_FALSE(cache->Lookup(std::vector<int32_t>{5, 5}, 0).has_value());
}

TEST(DiskPromptCacheTest, AFailedWriteIsLoggedAndTheRunGoesOn) {
  warp::testing::TempDir dir;
  const fs::path cache_dir = dir.path() / "cache";
  auto cache = OpenCache(cache_dir, 1 << 20);
  fs::remove_all(cache_dir);
  std::ofstream(cache_dir) << "a file where the directory was";  // every write now fails
  cache->Store({1, 2}, "state");
  cache->Flush();
  EXPECT_EQ(cache->stats().write_failures, 1u);
  EXPECT_EQ(cache->stats().writes, 0u);
  EXPECT_FALSE(cache->Lookup(std::vector<int32_t>{1, 2, 3}, 0).has_value());
}

TEST(DiskPromptCacheTest, ADirectoryThatCannotBeMadeIsNamed) {
  warp::testing::TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  auto cache =
      DiskPromptCache::Open({.dir = dir.path() / "file" / "sub", .max_bytes = 1, .key = "k"});
  ASSERT_FALSE(cache.ok());
  EXPECT_NE(cache.status().message().find("--prompt-cache-dir"), std::string::npos)
      << cache.status();
}

}  // namespace
}  // namespace warp::computed
