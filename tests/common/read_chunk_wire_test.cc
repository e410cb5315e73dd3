#include "common/wire/read_chunk_wire.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "warp/v1/expert_service.grpc.pb.h"

namespace warp {
namespace {

using ::testing::HasSubstr;

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// `bytes` as a buffer of slices of `piece` bytes each (the last shorter).
grpc::ByteBuffer Sliced(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

v1::ReadChunk FullChunk() {
  v1::ReadChunk chunk;
  chunk.set_index(7);
  chunk.set_record_bytes(1 << 20);
  chunk.set_offset(300000);
  chunk.set_crc32c(0xdeadbeef);
  chunk.set_last(true);
  chunk.set_served(v1::SERVED_DISK);
  std::string data(5000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 + 7);
  chunk.set_data(data);
  return chunk;
}

std::string DataOf(const IncomingReadChunk& chunk) {
  std::string data(chunk.data_bytes(), '\0');
  chunk.CopyDataTo(reinterpret_cast<std::byte*>(data.data()));
  return data;
}

TEST(ReadChunkWireTest, TheMethodIsTheGeneratedServicesRead) {
  EXPECT_EQ(std::string(kReadMethod),
            absl::StrCat("/", v1::ExpertStore::service_full_name(), "/Read"));
}

TEST(ReadChunkWireTest, TheSentChunkIsTheGeneratedMessageAndHoldsItsRecordUntilSent) {
  const v1::ReadChunk expected = FullChunk();
  auto record = std::make_shared<std::string>(expected.data());
  OutgoingReadChunk chunk{
      .head = expected, .data = std::as_bytes(std::span(*record)), .keeper = record};
  chunk.head.clear_data();
  auto buffer = std::make_unique<grpc::ByteBuffer>();
  EncodeReadChunk(chunk, buffer.get());
  chunk.keeper.reset();
  EXPECT_EQ(record.use_count(), 2) << "the data slice holds the record";

  v1::ReadChunk parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(*buffer)));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, expected))
      << parsed.ShortDebugString();
  buffer.reset();
  EXPECT_EQ(record.use_count(), 1) << "gRPC's last reference lets the record go";

  // A failure chunk has no data at all, not an empty data field.
  OutgoingReadChunk failure;
  failure.head.set_index(3);
  failure.head.mutable_status()->set_code(5);
  failure.head.set_last(true);
  grpc::ByteBuffer sent;
  EncodeReadChunk(failure, &sent);
  EXPECT_EQ(Flatten(sent), failure.head.SerializeAsString());
}

TEST(ReadChunkWireTest, AGeneratedMessageDecodesWhereverItsSlicesSplit) {
  const v1::ReadChunk sent = FullChunk();
  v1::ReadChunk head = sent;
  head.clear_data();
  const std::string bytes = sent.SerializeAsString();
  for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{4096}, bytes.size()}) {
    IncomingReadChunk received;
    ASSERT_TRUE(DecodeReadChunk(Sliced(bytes, piece), &received).ok()) << piece;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(received.head, head)) << piece;
    EXPECT_EQ(DataOf(received), sent.data()) << piece;
  }
  // Fields after data, and an empty message.
  v1::ReadChunk reordered;
  reordered.set_data("abc");
  std::string tail_bytes = reordered.SerializeAsString() + head.SerializeAsString();
  IncomingReadChunk received;
  ASSERT_TRUE(DecodeReadChunk(Sliced(tail_bytes, 5), &received).ok());
  EXPECT_EQ(received.head.index(), 7u);
  EXPECT_EQ(DataOf(received), "abc");
  ASSERT_TRUE(DecodeReadChunk(Sliced(std::string(), 1), &received).ok());
  EXPECT_EQ(received.head.index(), 0u);
  EXPECT_EQ(received.data_bytes(), 0u);
}

TEST(ReadChunkWireTest, TheCopyReportsEachPieceItWrote) {
  v1::ReadChunk sent;
  sent.set_data(std::string(200 << 10, 'x'));
  IncomingReadChunk received;
  ASSERT_TRUE(DecodeReadChunk(Sliced(sent.SerializeAsString(), 150 << 10), &received).ok());
  std::string out(received.data_bytes(), '\0');
  std::byte* const begin = reinterpret_cast<std::byte*>(out.data());
  std::vector<std::pair<size_t, size_t>> pieces;  // (offset, size)
  received.CopyDataTo(begin, [&](std::span<const std::byte> copied) {
    pieces.emplace_back(copied.data() - begin, copied.size());
  });
  EXPECT_EQ(out, sent.data());
  size_t next = 0;
  for (const auto& [offset, size] : pieces) {
    EXPECT_EQ(offset, next);
    EXPECT_LE(size, IncomingReadChunk::kCopyPieceBytes);
    next = offset + size;
  }
  EXPECT_EQ(next, sent.data().size());
  EXPECT_GE(pieces.size(), 4u);
}

TEST(ReadChunkWireTest, AMalformedMessageIsDataLossNamingWhatAndWhere) {
  const struct {
    std::string bytes;
    std::string what;
  } cases[] = {
      {std::string("\x08\x07\x80", 3), "truncated tag at byte 2 of 3"},
      {std::string("\x20\x05", 2), "data field not length-delimited at byte 0"},
      {std::string("\x22\x09"
                   "abc",
                   5),
       "truncated data field at byte 0"},
      {std::string("\x22\x01"
                   "a"
                   "\x22\x01"
                   "b",
                   6),
       "a second data field at byte 3"},
      {std::string("\x0b", 1), "wire type 3 of field 1 at byte 0"},
      {std::string("\x00\x01", 2), "field number 0 at byte 0"},
      {std::string("\x2d\x01\x02", 3), "truncated field 5 at byte 0"},
      {std::string("\x32\x7f\x08", 3), "truncated field 6 at byte 0"},
      {std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),
       "truncated field 1 at byte 0"},
  };
  for (const auto& c : cases) {
    IncomingReadChunk received;
    const absl::Status status = DecodeReadChunk(Sliced(c.bytes, 1), &received);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << c.what;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.what));
  }
  // Well framed, but not a ReadChunk: its status (field 6) holds a truncated varint.
  IncomingReadChunk received;
  const absl::Status status = DecodeReadChunk(Sliced(std::string("\x32\x01\x80", 3), 2), &received);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()), HasSubstr("do not parse as warp.v1.ReadChunk"));
}

}  // namespace
}  // namespace warp
