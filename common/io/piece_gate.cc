#include "common/io/piece_gate.h"

#include <algorithm>

namespace warp {

PieceGate::PieceGate(uint32_t pieces) : capacity_(std::max(1u, pieces)), free_(capacity_) {}

bool PieceGate::Grantable(Order wanted) const {
  if (free_ == 0) return false;
  // A read earlier in the order that still has pieces to send goes first. It
  // asks again as soon as one of its pieces lands (or now, if it has none in
  // flight and waits), so a free piece idles at most that long.
  for (const auto& [earlier, wants] : wanting_) {
    if (!(earlier < wanted)) return true;
    if (wants > 0) return false;
  }
  return true;
}

PieceGate::Read::Read(PieceGate* gate, const ReadRank& rank, uint64_t pieces)
    : gate_(gate), rank_(&rank) {
  absl::MutexLock lock(&gate_->mu_);
  order_ = {rank.get(), gate_->started_++};
  gate_->wanting_[order_] = pieces;
}

PieceGate::Read::~Read() {
  absl::MutexLock lock(&gate_->mu_);
  gate_->wanting_.erase(order_);
}

void PieceGate::Read::Follow() {
  const Order wanted = Wanted();
  if (wanted == order_) return;
  const uint64_t wants = gate_->wanting_[order_];
  gate_->wanting_.erase(order_);
  order_ = wanted;
  gate_->wanting_[order_] = wants;
}

bool PieceGate::Read::Take(bool wait) {
  absl::MutexLock lock(&gate_->mu_);
  Follow();
  // Raised while it waits: it is granted at the new rank, and filed there
  // once it holds the lock again.
  const auto grantable = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(gate_->mu_) {
    return gate_->Grantable(Wanted());
  };
  if (wait) gate_->mu_.Await(absl::Condition(&grantable));
  if (!grantable()) return false;
  Follow();
  --gate_->free_;
  uint64_t& wants = gate_->wanting_[order_];
  if (wants > 0) --wants;
  return true;
}

void PieceGate::Read::Landed() {
  absl::MutexLock lock(&gate_->mu_);
  ++gate_->free_;
}

void PieceGate::Read::Again() {
  absl::MutexLock lock(&gate_->mu_);
  ++gate_->wanting_[order_];
}

}  // namespace warp
