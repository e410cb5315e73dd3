#pragma once

// The early routes' folds (EarlyRouteFoldSpecs) written into a container's
// trunk, after its other tensors: each pre-norm routed layer's router through
// its attention's output projection, computed from the bytes the trunk stores
// (FoldRouterThroughOutput), so that they are the fold the engine would make
// at load, bit for bit. Shared by `computed convert` and `computed synth`.
//
// Thread-compatible: one writer at a time.

#include <cstddef>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/format/container_writer.h"
#include "common/kernels/matrix_view.h"
#include "computed/model/model_config.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {

// A trunk tensor's bytes as the container stores them, whole.
struct StoredTensor {
  TensorSpec spec;
  std::vector<std::byte> data, scale;

  // REQUIRES: a matrix.
  kernels::MatrixView view() const {
    return {.format = spec.format,
            .rows = spec.shape.at(0),
            .cols = spec.shape.at(1),
            .data = data.data(),
            .scale = scale.empty() ? nullptr : scale.data()};
  }
};

// The stored bytes of the trunk tensor `spec` (one of TrunkTensorSpecs).
using StoredTrunkTensor = std::function<absl::StatusOr<StoredTensor>(const TensorSpec& spec)>;

// Adds the folds of `model` to `writer`'s trunk, its tensors in
// `trunk_format` given by `stored`. Nothing for a model without early routes.
absl::Status WriteEarlyRouteFolds(ContainerWriter& writer, const ModelConfig& model,
                                  TensorFormat trunk_format, const StoredTrunkTensor& stored);

}  // namespace warp::computed
