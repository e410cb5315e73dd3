// The front's framing (computed/serve/http_head.h): heads found and bounded,
// fields parsed or refused, request framing, chunked bodies fed in pieces.

#include "computed/serve/http_head.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warp::computed::serve {
namespace {

using State = HeadScan::State;

TEST(HttpHeadTest, ScanFindsTheEndAndRefusesPastTheBounds) {
  const std::string head = "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\nBODY";
  EXPECT_EQ(ScanHead(head, {}).state, State::kComplete);
  EXPECT_EQ(ScanHead(head, {}).end, head.size() - 4);
  EXPECT_EQ(ScanHead("GET / HTTP/1.1\nA: b\n\n", {}).state, State::kComplete);
  EXPECT_EQ(ScanHead("GET / HTTP/1.1\r\nHost: x\r\n", {}).state, State::kIncomplete);
  EXPECT_EQ(ScanHead(std::string(100, 'a'), {.max_bytes = 64}).state, State::kTooLarge);
  EXPECT_EQ(ScanHead("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", {.max_fields = 2}).state,
            State::kTooLarge);
  EXPECT_EQ(ScanHead("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n", {.max_fields = 2}).state,
            State::kComplete);
}

TEST(HttpHeadTest, ParseKeepsFieldsAndRefusesMalformedOnes) {
  auto head = ParseHead("POST /v1 HTTP/1.1\r\nHost:  x \r\nA: 1, 2\r\na: 3\r\n\r\n");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->start_line, "POST /v1 HTTP/1.1");
  EXPECT_EQ(head->Field("host"), "x");
  EXPECT_THAT(head->Values("A"), ::testing::ElementsAre("1", "2", "3"));
  head->Remove("a");
  EXPECT_EQ(head->Serialize(), "POST /v1 HTTP/1.1\r\nHost: x\r\n\r\n");
  for (const char* bad : {"GET / HTTP/1.1\r\nNo colon\r\n\r\n", "GET / HTTP/1.1\r\n x: 1\r\n\r\n",
                          "GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n", "GET / HTTP/1.1\r\nA: \x01\r\n\r\n",
                          "\r\n\r\n"}) {
    EXPECT_FALSE(ParseHead(bad).has_value()) << bad;
  }
}

TEST(HttpHeadTest, FramingRefusesAmbiguity) {
  auto framing = [](const char* text) { return RequestFraming(*ParseHead(text)); };
  EXPECT_EQ(framing("GET / HTTP/1.1\r\n\r\n").framing.kind, BodyFraming::Kind::kNone);
  EXPECT_EQ(framing("POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n").framing.length, 12u);
  EXPECT_EQ(framing("POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n").framing.length, 3u);
  EXPECT_EQ(framing("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n").framing.kind,
            BodyFraming::Kind::kChunked);
  EXPECT_THAT(framing("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
                  .error,
              ::testing::HasSubstr("both"));
  EXPECT_FALSE(framing("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
                   .error.empty());
  EXPECT_FALSE(framing("POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n").error.empty());
  EXPECT_FALSE(framing("POST / HTTP/1.1\r\nContent-Length: 9999999999999999999\r\n\r\n")
                   .error.empty());
  EXPECT_TRUE(framing("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").not_implemented);
}

TEST(HttpHeadTest, ChunkedBodiesDecodeInAnyPiecesAndStopAtTheLimit) {
  const std::string body = "5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: 1\r\n\r\nNEXT";
  for (size_t piece = 1; piece <= body.size(); ++piece) {
    ChunkedDecoder decoder(100);
    std::string out;
    size_t at = 0;
    ChunkedDecoder::Result result = ChunkedDecoder::Result::kMore;
    while (result == ChunkedDecoder::Result::kMore && at < body.size()) {
      size_t used = 0;
      result = decoder.Feed(std::string_view(body).substr(at, piece), &used, &out);
      at += used;
    }
    EXPECT_EQ(result, ChunkedDecoder::Result::kDone) << piece;
    EXPECT_EQ(out, "hello world") << piece;
    EXPECT_EQ(body.substr(at), "NEXT") << piece;
  }
  std::string out;
  size_t used = 0;
  EXPECT_EQ(ChunkedDecoder(10).Feed("b\r\n", &used, &out), ChunkedDecoder::Result::kTooLarge);
  EXPECT_EQ(ChunkedDecoder(10).Feed("zz\r\n", &used, &out), ChunkedDecoder::Result::kMalformed);
  EXPECT_EQ(ChunkedDecoder(10).Feed("1\r\nabc", &used, &out), ChunkedDecoder::Result::kMalformed);
  EXPECT_EQ(ChunkedDecoder(1 << 30).Feed("ffffffffffffffffff\r\n", &used, &out),
            ChunkedDecoder::Result::kMalformed);
  EXPECT_EQ(ChunkedDecoder(10).Feed(std::string(5000, '1'), &used, &out),
            ChunkedDecoder::Result::kMalformed);
}

}  // namespace
}  // namespace warp::computed::serve
