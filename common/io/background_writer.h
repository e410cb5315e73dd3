#pragma once

// Writes filled buffers to files on one owned thread, so the producer fills
// the next buffer while the disk takes the last one: a streaming writer runs
// at the slower of fill speed and disk speed instead of their sum.
//
// Thread-safe. Lock order: mu_ only.

#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/io/aligned_buffer.h"

namespace warp {

class BackgroundWriter {
 public:
  // At most `num_buffers` buffers exist; Acquire() waits while all are queued.
  explicit BackgroundWriter(size_t num_buffers);
  ~BackgroundWriter();  // finishes every queued write
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // A free buffer of at least `bytes` (4 KiB aligned, contents unspecified).
  AlignedBuffer Acquire(size_t bytes);

  // Queues a pwrite of buffer[0, bytes) to `fd` at `offset`; the buffer goes
  // back to the pool once written. REQUIRES: fd stays open until Drain().
  void Submit(int fd, std::string path, AlignedBuffer buffer, size_t bytes, uint64_t offset);

  // Waits until every queued write is done; returns the first write error
  // since the last Drain() (later writes of a failed stream are skipped).
  absl::Status Drain();

 private:
  struct Job {
    int fd;
    std::string path;
    AlignedBuffer buffer;
    size_t bytes;
    uint64_t offset;
  };

  void Run();

  const size_t num_buffers_;
  absl::Mutex mu_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<AlignedBuffer> free_ ABSL_GUARDED_BY(mu_);
  size_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;  // buffers handed out or queued
  bool writing_ ABSL_GUARDED_BY(mu_) = false;    // the thread holds a job
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last member: starts after the state it uses
};

}  // namespace warp
