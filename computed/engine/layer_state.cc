#include "computed/engine/layer_state.h"

#include <algorithm>

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

}  // namespace warp::computed
