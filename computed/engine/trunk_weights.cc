#include "computed/engine/trunk_weights.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/crc32c.h"
#include "common/io/file.h"
#include "common/status.h"

namespace warp::computed {
namespace {

constexpr uint64_t kReadChunkBytes = 64 << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<TrunkWeights>> TrunkWeights::Load(const Container& container) {
  auto weights = std::unique_ptr<TrunkWeights>(new TrunkWeights());
  const Manifest& manifest = container.manifest();
  const std::string path = container.TrunkPath().string();
  WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(container.TrunkPath(), /*want_direct=*/true));
  // Every token reads the whole trunk: on 4 KiB pages a q4_0 model's attention
  // took 0.39-0.62 s over 23 tokens, on huge pages 0.39-0.40 (LEARNED.md;
  // TLB misses likely, not counted). The read overwrites every byte: no fill.
  weights->bytes_ = AlignedBuffer::OnHugePages(manifest.trunk_bytes);
  for (uint64_t done = 0; done < manifest.trunk_bytes; done += kReadChunkBytes) {
    const uint64_t n = std::min(kReadChunkBytes, manifest.trunk_bytes - done);
    WARP_RETURN_IF_ERROR(
        PreadFull(file.fd.get(), weights->bytes_.span().subspan(done, n), done, path));
  }
  for (const TensorEntry& tensor : manifest.trunk) {
    uint32_t crc = Crc32c(weights->bytes_.span().subspan(tensor.data.offset, tensor.data.bytes));
    if (tensor.scale) {
      crc = Crc32cExtend(crc,
                         weights->bytes_.span().subspan(tensor.scale->offset, tensor.scale->bytes));
    }
    if (tensor.crc32c && crc != *tensor.crc32c) {
      return absl::DataLossError(absl::StrCat("trunk tensor ", tensor.name, ": checksum mismatch (",
                                              path, " @", tensor.data.offset, ")"));
    }
    weights->tensors_.emplace(tensor.name, tensor);
  }
  return weights;
}

const TensorEntry* TrunkWeights::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

kernels::MatrixView TrunkWeights::Matrix(const std::string& name) const {
  const TensorEntry* tensor = Find(name);
  WARP_CHECK(tensor != nullptr && tensor->shape.size() == 2);
  return kernels::MatrixView{
      .format = tensor->format,
      .rows = tensor->shape[0],
      .cols = tensor->shape[1],
      .data = bytes_.data() + tensor->data.offset,
      .scale = tensor->scale ? bytes_.data() + tensor->scale->offset : nullptr};
}

std::span<const float> TrunkWeights::Vector(const std::string& name) const {
  const TensorEntry* tensor = Find(name);
  WARP_CHECK(tensor != nullptr && tensor->format == TensorFormat::kF32);
  return {reinterpret_cast<const float*>(bytes_.data() + tensor->data.offset),
          tensor->data.bytes / sizeof(float)};
}

kernels::MatrixView TrunkWeights::Matrix(const TensorRef& tensor) const {
  return tensor.present() ? Matrix(tensor.name) : kernels::MatrixView{};
}

std::span<const float> TrunkWeights::Vector(const TensorRef& tensor) const {
  return tensor.present() ? Vector(tensor.name) : std::span<const float>();
}

}  // namespace warp::computed
