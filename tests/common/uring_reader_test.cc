// UringReader against PreadFull on a real file opened with O_DIRECT: the same
// bytes for every split of a read into pieces, and the same errors.

#include "common/io/uring_reader.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
#include "common/io/piece_gate.h"
#include "common/store/bank_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kFileBytes = 3 * (1 << 20) + 5 * 4096;  // not a whole number of pieces

class UringReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (dir_ / "bank.bin").string();
    contents_.resize(kFileBytes);
    std::mt19937_64 rng(7);
    for (char& c : contents_) c = static_cast<char>(rng());
    WARP_ASSERT_OK(WriteFileAtomically(path_, contents_));
    auto file = OpenForRead(path_, /*want_direct=*/true);
    WARP_ASSERT_OK(file);
    file_ = std::move(*file);
  }

  // Reads [offset, offset + bytes) through a reader with `options`.
  absl::StatusOr<std::string> Read(UringReader::Options options, uint64_t offset, uint64_t bytes) {
    auto reader = UringReader::Create(options);
    if (!reader.ok()) return reader.status();
    AlignedBuffer buffer(bytes);
    absl::Status status =
        (*reader)->ReadFull(file_.fd.get(), buffer.span().first(bytes), offset, path_);
    if (!status.ok()) return status;
    return std::string(reinterpret_cast<const char*>(buffer.span().data()), bytes);
  }

  testing::TempDir dir_;
  std::string path_;
  std::string contents_;
  OpenedFile file_;
};

TEST_F(UringReaderTest, EverySplitReadsTheFileBytes) {
  for (const UringReader::Options& options :
       {UringReader::Options{.depth = 1, .piece_bytes = 4096},
        UringReader::Options{.depth = 3, .piece_bytes = 8192}, UringReader::Options{.depth = 16},
        UringReader::Options{.depth = 64, .piece_bytes = 1 << 16},
        UringReader::Options{.depth = 2, .piece_bytes = 8 << 20}}) {
    for (const auto& [offset, bytes] : std::vector<std::pair<uint64_t, uint64_t>>{
             {0, kFileBytes}, {4096, 1 << 20}, {1 << 20, 2 * (1 << 20) + 8192}, {8192, 4096}}) {
      absl::StatusOr<std::string> got = Read(options, offset, bytes);
      WARP_ASSERT_OK(got);
      EXPECT_TRUE(*got == contents_.substr(offset, bytes))
          << "depth " << options.depth << ", pieces of " << options.piece_bytes << ", " << bytes
          << " bytes at " << offset;
    }
  }
}

TEST_F(UringReaderTest, OneReaderServesManyReads) {
  auto reader = UringReader::Create({.depth = 4, .piece_bytes = 1 << 16});
  WARP_ASSERT_OK(reader);
  AlignedBuffer buffer(1 << 20);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 50; ++i) {
    const uint64_t offset = (rng() % (kFileBytes / 4096 - 256)) * 4096;
    WARP_ASSERT_OK((*reader)->ReadFull(file_.fd.get(), buffer.span(), offset, path_));
    ASSERT_EQ(std::memcmp(buffer.span().data(), contents_.data() + offset, 1 << 20), 0)
        << "read " << i << " at " << offset;
  }
}

// Threads of one disk share a gate smaller than a read's pieces: every read
// still gets the file's bytes, and none waits for ever (ranks mixed, a read
// of a higher rank overtaken by later ones of lower rank).
TEST_F(UringReaderTest, ReadsSharingAGateAreTheFileBytes) {
  auto gate = std::make_shared<PieceGate>(3);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto reader = UringReader::Create({.depth = 8, .piece_bytes = 1 << 16, .gate = gate});
      if (!reader.ok()) {
        ++wrong;
        return;
      }
      AlignedBuffer buffer(1 << 20);
      std::mt19937_64 rng(t);
      for (int i = 0; i < 20; ++i) {
        const uint64_t offset = (rng() % (kFileBytes / 4096 - 256)) * 4096;
        const ReadRank rank(t % 3);
        const absl::Status status =
            (*reader)->ReadFull(file_.fd.get(), buffer.span(), offset, path_, &rank);
        if (!status.ok() ||
            std::memcmp(buffer.span().data(), contents_.data() + offset, 1 << 20) != 0) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong, 0);
  // Every piece went back: a new read gets the whole gate.
  const ReadRank demand(0);
  PieceGate::Read after(gate.get(), demand, 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(after.Take(false)) << i;
}

TEST_F(UringReaderTest, ReadsIntoRegisteredBuffersAreTheFileBytes) {
  AlignedBuffer first(1 << 20);
  AlignedBuffer second(2 << 20);
  auto fixed = std::make_shared<FixedBuffers>();
  fixed->buffers = {first.span(), second.span()};
  auto reader = UringReader::Create({.depth = 4, .piece_bytes = 1 << 16, .fixed = fixed});
  WARP_ASSERT_OK(reader);
  EXPECT_TRUE((*reader)->registered());
  AlignedBuffer unregistered(1 << 20);
  // Whole buffers, a part inside one (not at its start), and memory outside them.
  for (std::span<std::byte> out :
       {first.span(), second.span().subspan(8192, (1 << 20) + 4096), unregistered.span()}) {
    const uint64_t offset = 5 * 4096;
    WARP_ASSERT_OK((*reader)->ReadFull(file_.fd.get(), out, offset, path_));
    EXPECT_EQ(std::memcmp(out.data(), contents_.data() + offset, out.size()), 0) << out.size();
  }
}

// Where the kernel refuses the registration (here: memory it cannot pin), the
// reader still reads, unregistered, into any memory.
TEST_F(UringReaderTest, ARefusedRegistrationStillReads) {
  constexpr size_t kBytes = 1 << 20;
  void* unpinnable = ::mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(unpinnable, MAP_FAILED);
  auto fixed = std::make_shared<FixedBuffers>();
  fixed->buffers = {std::span(static_cast<std::byte*>(unpinnable), kBytes)};
  auto reader = UringReader::Create({.depth = 4, .piece_bytes = 1 << 16, .fixed = fixed});
  WARP_ASSERT_OK(reader);
  EXPECT_FALSE((*reader)->registered());
  AlignedBuffer buffer(kBytes);
  WARP_ASSERT_OK((*reader)->ReadFull(file_.fd.get(), buffer.span(), 8192, path_));
  EXPECT_EQ(std::memcmp(buffer.span().data(), contents_.data() + 8192, kBytes), 0);
  ::munmap(unpinnable, kBytes);
}

// Reads into registered memory are cut at what the disk takes in one request
// on 4 KiB pages; the bytes are the same whatever the cut.
TEST_F(UringReaderTest, LargePiecesIntoRegisteredBuffersAreTheFileBytes) {
  const uint64_t limit = DeviceRequestBytesOn4KiBPages(file_.fd.get());
  EXPECT_EQ(limit % 4096, 0u) << "0 (unknown) or whole pages";
  AlignedBuffer memory(3 << 20);
  auto fixed = std::make_shared<FixedBuffers>();
  fixed->buffers = {memory.span()};
  auto reader = UringReader::Create({.depth = 4, .piece_bytes = 8 << 20, .fixed = fixed});
  WARP_ASSERT_OK(reader);
  WARP_ASSERT_OK((*reader)->ReadFull(file_.fd.get(), memory.span(), 4096, path_));
  EXPECT_EQ(std::memcmp(memory.span().data(), contents_.data() + 4096, 3 << 20), 0);
}

// A thread's ring registered over memory that has gone must not read into
// new memory at the same address: the old registration pins the old pages,
// so a read through it would land there and leave the new pages untouched.
TEST_F(UringReaderTest, AThreadTakesANewRingForOtherRegisteredBuffers) {
  constexpr size_t kBytes = 1 << 20;
  void* at = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(at, MAP_FAILED);
  std::span<std::byte> memory(static_cast<std::byte*>(at), kBytes);
  auto first = std::make_shared<FixedBuffers>();
  first->buffers = {memory};
  WARP_ASSERT_OK(UringPreadFull({.depth = 4, .piece_bytes = 1 << 16, .fixed = first},
                                file_.fd.get(), memory, 0, path_));
  ASSERT_EQ(std::memcmp(memory.data(), contents_.data(), kBytes), 0);
  // New pages at the same address, registered anew.
  ASSERT_EQ(
      ::mmap(at, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
      at);
  auto second = std::make_shared<FixedBuffers>();
  second->buffers = {memory};
  const uint64_t offset = 1 << 20;
  WARP_ASSERT_OK(UringPreadFull({.depth = 4, .piece_bytes = 1 << 16, .fixed = second},
                                file_.fd.get(), memory, offset, path_));
  EXPECT_EQ(std::memcmp(memory.data(), contents_.data() + offset, kBytes), 0);
  ::munmap(at, kBytes);
}

TEST_F(UringReaderTest, AReadPastTheEndIsAShortReadNamingTheFile) {
  // The last 4096 bytes exist, the next piece and the one after start past the end.
  const uint64_t offset = kFileBytes - 4096;
  absl::StatusOr<std::string> got = Read({.depth = 4, .piece_bytes = 4096}, offset, 3 * 4096);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  // The same words as PreadFull's: the bytes before the hole count as read.
  EXPECT_THAT(got.status().message(), HasSubstr(path_ + ": short read at " +
                                                std::to_string(offset) + ": got 4096 of 12288"));
  AlignedBuffer buffer(3 * 4096);
  absl::Status pread = PreadFull(file_.fd.get(), buffer.span(), offset, path_);
  EXPECT_EQ(pread.message(), got.status().message());
}

TEST_F(UringReaderTest, AnErrnoErrorNamesTheFileAndOffset) {
  auto reader = UringReader::Create({.depth = 2, .piece_bytes = 4096});
  WARP_ASSERT_OK(reader);
  AlignedBuffer buffer(4096);
  const absl::Status status = (*reader)->ReadFull(/*fd=*/-1, buffer.span(), 8192, path_);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(path_ + " @8192"));
}

// The landed prefix grows to the whole read, and whenever it is told, its
// bytes are the file's: a caller may digest them while the rest fly.
TEST_F(UringReaderTest, EachLandedPrefixHoldsTheFileBytes) {
  for (const UringReader::Options& options :
       {UringReader::Options{.depth = 1, .piece_bytes = 4096},
        UringReader::Options{.depth = 3, .piece_bytes = 8192},
        UringReader::Options{.depth = 16, .piece_bytes = 1 << 16},
        UringReader::Options{
            .depth = 4, .piece_bytes = 1 << 16, .gate = std::make_shared<PieceGate>(2)}}) {
    auto reader = UringReader::Create(options);
    WARP_ASSERT_OK(reader);
    AlignedBuffer buffer(kFileBytes);
    std::vector<uint64_t> told;
    int wrong = 0;
    WARP_ASSERT_OK((*reader)->ReadFull(
        file_.fd.get(), buffer.span(), 0, path_, /*rank=*/nullptr, [&](uint64_t landed) {
          told.push_back(landed);
          if (std::memcmp(buffer.span().data(), contents_.data(), landed) != 0) ++wrong;
        }));
    SCOPED_TRACE(::testing::Message()
                 << "depth " << options.depth << ", pieces of " << options.piece_bytes);
    ASSERT_FALSE(told.empty());
    EXPECT_EQ(told.back(), kFileBytes);
    EXPECT_TRUE(std::is_sorted(told.begin(), told.end()) &&
                std::adjacent_find(told.begin(), told.end()) == told.end());
    EXPECT_EQ(wrong, 0);
    if (options.depth == 1) {
      EXPECT_EQ(told.size(), (kFileBytes + 4095) / 4096);  // one by one
    }
  }
}

// A read that fails tells no landed prefix past the failure.
TEST_F(UringReaderTest, AReadPastTheEndTellsOnlyWhatLanded) {
  auto reader = UringReader::Create({.depth = 2, .piece_bytes = 1 << 20});
  WARP_ASSERT_OK(reader);
  AlignedBuffer buffer(4 << 20);
  uint64_t last = 0;
  const absl::Status status =
      (*reader)->ReadFull(file_.fd.get(), buffer.span(), 0, path_, /*rank=*/nullptr,
                          [&](uint64_t landed) { last = landed; });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_LT(last, kFileBytes);
}

TEST_F(UringReaderTest, RefusesPiecesThatAreNotPages) {
  for (const UringReader::Options& options :
       {UringReader::Options{.depth = 0}, UringReader::Options{.piece_bytes = 1000},
        UringReader::Options{.piece_bytes = 0}}) {
    auto reader = UringReader::Create(options);
    ASSERT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(reader.status().message(), HasSubstr("multiple of 4096"));
  }
}

TEST_F(UringReaderTest, EachThreadGetsItsOwnRing) {
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(4);
  std::vector<AlignedBuffer> buffers;
  for (int t = 0; t < 4; ++t) buffers.emplace_back(1 << 20);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20 && results[t].ok(); ++i) {
        const uint64_t offset = static_cast<uint64_t>((t * 20 + i) % 3) << 20;
        results[t] = UringPreadFull({.depth = 8, .piece_bytes = 1 << 16}, file_.fd.get(),
                                    buffers[t].span(), offset, path_);
        if (results[t].ok() &&
            std::memcmp(buffers[t].span().data(), contents_.data() + offset, 1 << 20) != 0) {
          results[t] = absl::DataLossError("wrong bytes");
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : results) WARP_EXPECT_OK(status);
}

TEST(IoEngineTest, NamesParseAndUnknownNamesAreRefused) {
  EXPECT_EQ(*ParseIoBackend("pread"), IoBackend::kPread);
  EXPECT_EQ(*ParseIoBackend("uring"), IoBackend::kUring);
  EXPECT_EQ(*ParseIoBackend(""), kDefaultIoBackend);
  EXPECT_STREQ(IoBackendName(IoBackend::kUring), "uring");
  const absl::StatusOr<IoBackend> unknown = ParseIoBackend("aio");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown I/O engine \"aio\" (pread or uring)"));
}

}  // namespace
}  // namespace warp
