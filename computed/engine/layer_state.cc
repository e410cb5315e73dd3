#include "computed/engine/layer_state.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "computed/model/layer_plan.h"

namespace warp::computed {

PositionRows::PositionRows(uint32_t context, uint32_t window, std::vector<uint64_t> widths)
    : window_(window),
      capacity_(static_cast<uint32_t>(HeldPositions(context, window))),
      widths_(std::move(widths)) {
  for (uint64_t width : widths_) rows_.emplace_back(uint64_t{capacity_} * width);
}

uint64_t PositionRows::bytes() const {
  uint64_t total = 0;
  for (const auto& rows : rows_) total += rows.size() * sizeof(float);
  return total;
}

uint32_t PositionRows::Rewind(uint32_t position) {
  position = std::min(position, end_);
  // The next token at `position` needs positions FirstVisible(position) .. position - 1;
  // the ring still holds end_ - capacity_ .. end_ - 1.
  const uint32_t oldest_held = end_ > capacity_ ? end_ - capacity_ : 0;
  if (position > 0 && FirstVisible(position) < oldest_held) position = 0;
  end_ = position;
  return position;
}

void PositionRows::Archive(StateArchive& archive) {
  archive.U32(end_);
  if (archive.reading() && window_ == 0 && end_ > capacity_) {
    archive.Refuse(absl::StrCat(end_, " positions, past this context's ", capacity_));
  }
  if (!archive.ok()) return;
  const uint32_t held = std::min(end_, capacity_);
  for (size_t kind = 0; kind < rows_.size(); ++kind) {
    if (widths_[kind] == 0) continue;
    for (uint32_t pos = end_ - held; pos < end_ && archive.ok(); ++pos) {
      archive.Floats(std::span<float>(Row(kind, pos), widths_[kind]));
    }
  }
}

RecurrentState::RecurrentState(std::vector<uint64_t> sizes) {
  for (uint64_t size : sizes) {
    parts_.emplace_back(size, 0.0f);
    saved_.emplace_back(size, 0.0f);
  }
}

uint64_t RecurrentState::bytes() const {
  uint64_t total = 0;
  for (const auto& part : parts_) total += 2 * part.size() * sizeof(float);
  return total;
}

uint32_t RecurrentState::Rewind(uint32_t position) {
  if (position >= end_) return end_;
  if (saved_at_ && *saved_at_ <= position) {
    parts_ = saved_;
    end_ = *saved_at_;
    return end_;
  }
  // The checkpoint (if any) lies in the forgotten part, which may be rewritten.
  saved_at_.reset();
  for (auto& part : parts_) std::fill(part.begin(), part.end(), 0.0f);
  end_ = 0;
  return 0;
}

void RecurrentState::Archive(StateArchive& archive) {
  archive.U32(end_);
  for (auto& part : parts_) archive.Floats(part);
  archive.Optional(saved_at_, [&](uint32_t& at) {
    archive.U32(at);
    for (auto& part : saved_) archive.Floats(part);
  });
}

void RecurrentState::Checkpoint() {
  saved_ = parts_;
  saved_at_ = end_;
}

}  // namespace warp::computed
