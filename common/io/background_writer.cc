#include "common/io/background_writer.h"

#include "common/check.h"
#include "common/io/file.h"

namespace warp {

BackgroundWriter::BackgroundWriter(size_t num_buffers)
    : num_buffers_(num_buffers), thread_([this] { Run(); }) {
  WARP_CHECK(num_buffers >= 1);
}

BackgroundWriter::~BackgroundWriter() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

AlignedBuffer BackgroundWriter::Acquire(size_t bytes) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](BackgroundWriter* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
        return self->outstanding_ < self->num_buffers_;
      },
      this));
  ++outstanding_;
  AlignedBuffer buffer;
  if (!free_.empty()) {
    buffer = std::move(free_.back());
    free_.pop_back();
  }
  if (buffer.size() < bytes) buffer = AlignedBuffer(bytes);
  return buffer;
}

void BackgroundWriter::Submit(int fd, std::string path, AlignedBuffer buffer, size_t bytes,
                              uint64_t offset) {
  WARP_CHECK(bytes <= buffer.size());
  absl::MutexLock lock(&mu_);
  queue_.push_back(Job{fd, std::move(path), std::move(buffer), bytes, offset});
}

absl::Status BackgroundWriter::Drain() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](BackgroundWriter* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
        return self->queue_.empty() && !self->writing_;
      },
      this));
  absl::Status error = std::move(error_);
  error_ = absl::OkStatus();
  return error;
}

void BackgroundWriter::Run() {
  while (true) {
    Job job{};
    bool skip = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](BackgroundWriter* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return !self->queue_.empty() || self->stop_;
          },
          this));
      if (queue_.empty()) return;  // stop_ with nothing left to write
      job = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
      skip = !error_.ok();  // the stream already failed; don't write past the hole
    }
    absl::Status status;
    if (!skip) {
      status = PwriteFull(job.fd, job.buffer.span().first(job.bytes), job.offset, job.path);
    }
    absl::MutexLock lock(&mu_);
    if (!status.ok() && error_.ok()) error_ = status;
    free_.push_back(std::move(job.buffer));
    --outstanding_;
    writing_ = false;
  }
}

}  // namespace warp
