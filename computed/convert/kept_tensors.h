#pragma once

// Release tensors WARP does not run yet but keeps in the container, verbatim
// (names, dtypes, shapes, bytes), so that a later feature can use them
// without reconverting: DeepSeek V4.1's DSpark stages (mtp.*), which a
// speculative decoder would draft with. They go to one safetensors file in
// the container (docs/FORMAT.md#kept-tensors), streamed in bounded memory.
//
// Thread-compatible: free functions.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"
#include "computed/convert/safetensors.h"
#include "computed/model/family.h"

namespace warp::computed {

// Writes the tensors of `checkpoint` that `rule` names to `dir`/rule.file, in
// name order; nullopt (and no file) if it has none. `advance` is told each
// chunk's bytes. Refuses, naming the tensor, one that is not plain
// safetensors data (a GGUF file's blocks).
absl::StatusOr<std::optional<KeptTensorsEntry>> WriteKeptTensors(
    const Checkpoint& checkpoint, const KeptTensorsRule& rule, const std::filesystem::path& dir,
    const std::function<void(uint64_t)>& advance);

}  // namespace warp::computed
