// How an engine status becomes an OpenAI error reply (computed/serve/api_error.h):
// the status code a client library turns into its exception, and the body's fields.

#include "computed/serve/api_error.h"

#include "gtest/gtest.h"

namespace warp::computed::serve {
namespace {

TEST(FromStatusTest, EachEngineStatusGetsItsHttpStatusTypeAndCode) {
  struct Case {
    absl::Status status;
    int http_status;
    const char* type;
    const char* code;  // "" : null
  };
  for (const Case& c : std::vector<Case>{
           {absl::InvalidArgumentError("token 9 is outside the vocabulary"), 400,
            "invalid_request_error", ""},
           {absl::OutOfRangeError("context full"), 400, "invalid_request_error", ""},
           {absl::ResourceExhaustedError("the prompt needs 900 positions"), 400,
            "invalid_request_error", "context_length_exceeded"},
           {absl::NotFoundError("layer 3 expert 7: no such record"), 404, "not_found_error", ""},
           {absl::UnavailableError("the server is shutting down"), 503, "server_error", ""},
           {absl::DataLossError("layer 3 expert 7: crc mismatch"), 500, "server_error", ""},
           {absl::InternalError("bug"), 500, "server_error", ""}}) {
    const ApiError error = FromStatus(c.status);
    const nlohmann::json body = error.ToJson();
    EXPECT_EQ(error.http_status, c.http_status) << c.status;
    EXPECT_EQ(body["error"]["type"], c.type) << c.status;
    EXPECT_EQ(body["error"]["message"], std::string(c.status.message())) << c.status;
    EXPECT_TRUE(body["error"]["param"].is_null()) << c.status;
    if (*c.code == '\0') {
      EXPECT_TRUE(body["error"]["code"].is_null()) << c.status;
    } else {
      EXPECT_EQ(body["error"]["code"], c.code) << c.status;
    }
  }
}

TEST(BadRequestTest, NamesTheFieldAtFault) {
  const nlohmann::json body = BadRequest("messages[2].role", "unknown role \"bot\"").ToJson();
  EXPECT_EQ(body["error"]["param"], "messages[2].role");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(body["error"]["code"].is_null());
}

}  // namespace
}  // namespace warp::computed::serve
