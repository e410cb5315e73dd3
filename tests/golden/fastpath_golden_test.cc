// Pins the fast-path frame preamble of docs/FORMAT.md#fast-path-frames: one
// Hello frame is encoded here and its hex dump compared with the doc's block.
// The header after the preamble is protobuf (proto/warp/v1/fastpath.proto);
// its bytes are shown for the example only, the proto is their contract.

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/wire/fastpath_frame.h"
#include "gtest/gtest.h"
#include "tests/testing/golden_doc.h"
#include "tests/testing/hex_dump.h"
#include "warp/v1/fastpath.pb.h"

namespace warp {
namespace {

using ::warp::testing::FormatDoc;
using ::warp::testing::GoldenBlock;

std::string HelloFrame() {
  v1::FastPathRequest request;
  request.mutable_hello()->set_protocol_version(kFastPathProtocolVersion);
  request.mutable_hello()->set_model_fingerprint(0x0123456789abcdefull);
  return EncodeFastPathFrame(request);
}

TEST(FastPathGoldenTest, HelloFrameHexDumpMatchesTheDoc) {
  const std::string frame = HelloFrame();
  const std::string dump = warp::testing::HexDump(std::as_bytes(std::span(frame)), 0);
  EXPECT_EQ(GoldenBlock(FormatDoc(), "fastpath-hello"), dump) << "docs/FORMAT.md block:\n" << dump;
}

TEST(FastPathGoldenTest, PreambleIsMagicThenHeaderLength) {
  const std::string frame = HelloFrame();
  ASSERT_GE(frame.size(), kFastPathPreambleBytes);
  EXPECT_EQ(frame.substr(0, 4), "WXFP");
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(frame[i])); };
  EXPECT_EQ(byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24, kFastPathMagic);
  EXPECT_EQ(byte(4) | byte(5) << 8 | byte(6) << 16 | byte(7) << 24,
            frame.size() - kFastPathPreambleBytes);
}

}  // namespace
}  // namespace warp
