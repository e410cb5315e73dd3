// KeepFreedHeapMemory: the pattern of gRPC's chunk buffers (several 1 MiB
// blocks alive at once, then all freed) reuses its pages instead of faulting
// fresh, zero-filled ones in every round. Each case runs in a child process:
// the setting is the whole process's, and the test binary's heap is not fresh.

#include "common/memory/heap_reuse.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"

namespace warp {
namespace {

long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Page faults of rounds 2-4 of: 8 blocks of 1 MiB allocated and written, then
// freed. Round 1 faults its pages in whatever the setting.
long FaultsAfterTheFirstRound() {
  long faults = 0;
  for (int round = 0; round < 4; ++round) {
    const long before = MinorFaults();
    char* blocks[8];
    for (char*& block : blocks) {
      block = static_cast<char*>(malloc(1 << 20));
      std::memset(block, 1, 1 << 20);
    }
    asm volatile("" : : "r"(blocks) : "memory");  // the writes are not elided
    for (char* block : blocks) free(block);
    if (round > 0) faults += MinorFaults() - before;
  }
  return faults;
}

// Runs `body` in a child; returns its exit code.
template <typename Body>
int InChild(Body body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// 3 rounds x 8 MiB is 6,144 pages of 4 KiB; a reused heap faults almost none.
constexpr long kFewFaults = 64;

TEST(HeapReuseTest, FreedChunkBuffersAreReusedWithoutFreshPages) {
  EXPECT_EQ(0, InChild([] {
              if (!KeepFreedHeapMemory()) return 2;
              return FaultsAfterTheFirstRound() < kFewFaults ? 0 : 1;
            }));
}

// The control: glibc's defaults hand the pages back and fault them in again,
// which is what the setting is for (if this stops failing, glibc changed).
TEST(HeapReuseTest, GlibcDefaultsFaultFreshPagesEveryRound) {
  EXPECT_EQ(1, InChild([] { return FaultsAfterTheFirstRound() < kFewFaults ? 0 : 1; }));
}

TEST(HeapReuseTest, AGlibcTunablesMallocSettingIsLeftToDecide) {
  EXPECT_EQ(0, InChild([] {
              setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576", 1);
              return KeepFreedHeapMemory() ? 1 : 0;
            }));
}

}  // namespace
}  // namespace warp
