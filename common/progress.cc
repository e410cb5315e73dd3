#include "common/progress.h"

#include <unistd.h>

#include <cstdio>

#include "common/byte_size.h"

namespace warp {
namespace {

constexpr int kBarWidth = 30;
constexpr auto kRedrawInterval = std::chrono::milliseconds(200);

}  // namespace

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes, bool enabled)
    : label_(std::move(label)),
      total_bytes_(total_bytes),
      enabled_(enabled),
      interactive_(enabled && ::isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { Finish(); }

double ProgressBar::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressBar::Advance(uint64_t bytes) {
  done_bytes_ += bytes;
  if (!interactive_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  Draw(/*final_line=*/false);
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_) Draw(/*final_line=*/true);
}

void ProgressBar::Draw(bool final_line) {
  const double seconds = elapsed_seconds();
  const double fraction =
      total_bytes_ == 0 ? 1.0
                        : static_cast<double>(done_bytes_) / static_cast<double>(total_bytes_);
  const double rate = seconds > 0 ? static_cast<double>(done_bytes_) / seconds : 0.0;
  const int filled = static_cast<int>(fraction * kBarWidth + 0.5);
  std::string bar(static_cast<size_t>(std::min(filled, kBarWidth)), '#');
  bar.resize(kBarWidth, ' ');
  std::string tail;
  if (final_line) {
    tail = "in " + std::to_string(static_cast<int>(seconds + 0.5)) + " s";
  } else if (rate > 0) {
    tail =
        "ETA " + std::to_string(static_cast<int>((total_bytes_ - done_bytes_) / rate + 0.5)) + " s";
  }
  std::fprintf(stderr, "%s%s [%s] %3d%% %s/%s %s/s %s%s", interactive_ ? "\r" : "", label_.c_str(),
               bar.c_str(), static_cast<int>(fraction * 100 + 0.5),
               FormatBytes(done_bytes_).c_str(), FormatBytes(total_bytes_).c_str(),
               FormatBytes(static_cast<uint64_t>(rate)).c_str(), tail.c_str(),
               final_line ? "\n" : "   ");
  std::fflush(stderr);
}

}  // namespace warp
