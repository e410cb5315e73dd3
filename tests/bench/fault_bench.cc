// How fast this machine hands a process fresh memory: the rate at which
// anonymous memory (huge pages advised, as the expert cache asks for) is
// faulted in, first as the process's first touch and then again right after
// it was given back. On a VM whose balloon reports free pages to the host
// (virtio-balloon free page reporting), memory free for a while is no longer
// backed, and its first touch costs a host fault: on the dev VM 0.4-0.9 GB/s
// against 18-23 GB/s for memory freed a moment before (docs/EFFICIENCY.md,
// LEARNED.md). Every process that fills a cache pays the first rate, so a
// short benchmark under a large cap measures it, not the disk.
//
// Usage: fault_bench [GiB] [rounds]   (default 2 GiB, 2 rounds)
// Prints one line a round: "round R: fresh|recycled G GiB in S s = X GB/s".

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14), absent from older headers
constexpr size_t kPage = 4096;

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Maps `bytes`, faults every page in and unmaps it; the seconds the faults took,
// or a negative number if the memory could not be mapped.
double FaultIn(size_t bytes) {
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    std::fprintf(stderr, "fault_bench: mmap of %zu bytes: %s\n", bytes, std::strerror(errno));
    return -1;
  }
  auto* p = static_cast<volatile char*>(map);
  madvise(map, bytes, MADV_HUGEPAGE);  // a hint: without THP the pages are 4 KiB
  const double start = Seconds();
  if (madvise(map, bytes, kPopulateWrite) != 0) {
    for (size_t i = 0; i < bytes; i += kPage) p[i] = 1;  // kernels before 5.14
  }
  const double seconds = Seconds() - start;
  munmap(map, bytes);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 2.0;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 2;
  if (gib <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: fault_bench [GiB > 0] [rounds > 0]\n");
    return 2;
  }
  const size_t bytes = static_cast<size_t>(gib * (1ull << 30)) / kPage * kPage;
  for (int round = 0; round < rounds; ++round) {
    const double seconds = FaultIn(bytes);
    if (seconds < 0) return 1;
    std::printf("round %d: %s %.2f GiB in %.2f s = %.2f GB/s\n", round,
                round == 0 ? "fresh" : "recycled", bytes / double(1ull << 30), seconds,
                bytes / seconds / 1e9);
    std::fflush(stdout);
  }
  return 0;
}
