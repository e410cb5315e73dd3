#include "common/memory/heap_reuse.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace warp {

bool KeepFreedHeapMemory() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return false;
  // Setting either also stops glibc moving them with the largest block freed.
  return mallopt(M_MMAP_THRESHOLD, kHeapMmapThresholdBytes) == 1 &&
         mallopt(M_TRIM_THRESHOLD, kHeapTrimThresholdBytes) == 1;
}

}  // namespace warp
