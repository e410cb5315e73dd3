#pragma once

// TrunkWeights: trunk.bin loaded into RAM once (O_DIRECT, CRC of every tensor
// checked), with typed views by Hugging Face name. The dense part of the model
// stays resident for the whole run; experts never come from here.
//
// Thread-safe: immutable after Load.

#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/io/aligned_buffer.h"
#include "common/kernels/matrix_view.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

class TrunkWeights {
 public:
  static absl::StatusOr<std::unique_ptr<TrunkWeights>> Load(const Container& container);

  // The tensor called `name`, or nullptr.
  const TensorEntry* Find(const std::string& name) const;
  // REQUIRES: the tensor exists and is 2-D (checked at engine creation).
  kernels::MatrixView Matrix(const std::string& name) const;
  // A 1-D f32 tensor. REQUIRES: exists, f32.
  std::span<const float> Vector(const std::string& name) const;
  // The same for a kind's tensor (computed/model/kinds/); an absent one is an
  // empty view.
  kernels::MatrixView Matrix(const TensorRef& tensor) const;
  std::span<const float> Vector(const TensorRef& tensor) const;

  uint64_t bytes() const { return bytes_.size(); }

 private:
  TrunkWeights() = default;

  AlignedBuffer bytes_;
  std::unordered_map<std::string, TensorEntry> tensors_;
};

}  // namespace warp::computed
