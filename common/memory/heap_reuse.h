#pragma once

// Keeps freed heap memory in the process for the next allocation of its size,
// instead of handing it back to the kernel at once.
//
// Why: gRPC and protobuf allocate a buffer per 1 MiB chunk of a record, on both
// ends. glibc's defaults gave each one fresh pages (its trim threshold follows
// the largest freed block, ~2 MiB, so the heap top went back to the kernel after
// nearly every chunk), and the kernel zeroes fresh pages: 37% of expertd's CPU
// in clear_page_erms, gRPC misses at 0.5-0.9 GB/s. With the heap kept,
// 1.4-1.7 GB/s (docs/EFFICIENCY.md "gRPC misses and the heap"). Only memory
// that was in use at a peak is kept, so the peak barely moves (+10 MiB of
// 4.6 GiB on a resident computed run, same section).
//
// Call once, first thing in main() of a binary (never from a library: the
// setting is the whole process's). A GLIBC_TUNABLES naming glibc.malloc
// settings is left to decide.

namespace warp {

// Blocks this large or larger get a mapping of their own. glibc's own ceiling
// for its moving threshold: nothing it would have kept on the heap is mapped
// afresh instead.
inline constexpr long kHeapMmapThresholdBytes = 32L << 20;
inline constexpr long kHeapTrimThresholdBytes = 64L << 20;  // kept free at the heap top

// Returns false (and changes nothing) if GLIBC_TUNABLES sets malloc options.
bool KeepFreedHeapMemory();

}  // namespace warp
