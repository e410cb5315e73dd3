#pragma once

// StopStrings: the `stop` sequences of a request over streamed text. Text
// that could still become a stop sequence is held back until the next piece
// decides; a match ends the reply, the sequence and all after it left out
// (as OpenAI's API does).
//
// Thread-compatible: one per reply.

#include <string>
#include <string_view>
#include <vector>

namespace warp::computed::serve {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // The text now safe to emit. After a match, matched() is true and every
  // later Push returns "".
  std::string Push(std::string_view piece);
  // What was held back, at the end of the reply.
  std::string Flush();
  bool matched() const { return matched_; }
  // The stop string that matched; empty before.
  const std::string& matched_stop() const { return matched_stop_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool matched_ = false;
  std::string matched_stop_;
};

}  // namespace warp::computed::serve
