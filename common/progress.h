#pragma once

// A one-line progress bar on stderr with bytes/s and ETA, for long streaming
// jobs (synth, convert, verify). Redraws at most 5 times a second, and only
// when stderr is a terminal; otherwise prints just the final line.
//
// Thread-compatible: one thread advances it.

#include <chrono>
#include <cstdint>
#include <string>

namespace warp {

class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total_bytes, bool enabled);
  ~ProgressBar();  // prints the final line if Finish() was not called

  void Advance(uint64_t bytes);
  void Finish();

  uint64_t done_bytes() const { return done_bytes_; }
  double elapsed_seconds() const;

 private:
  void Draw(bool final_line);

  std::string label_;
  uint64_t total_bytes_;
  uint64_t done_bytes_ = 0;
  bool enabled_;
  bool interactive_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace warp
