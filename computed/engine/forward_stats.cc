#include "computed/engine/forward_stats.h"

namespace warp::computed {
namespace {

// Calls op(a.field, b.field) for every counter of ForwardStats.
template <typename Op>
void EachCounter(ForwardStats& a, const ForwardStats& b, Op op) {
  op(a.tokens, b.tokens);
  op(a.expert_reads, b.expert_reads);
  op(a.expert_read_bytes, b.expert_read_bytes);
  op(a.moe_passes, b.moe_passes);
  op(a.expert_waves, b.expert_waves);
  op(a.expert_uses, b.expert_uses);
  op(a.token_by_token_bytes, b.token_by_token_bytes);
  op(a.sequence_union_bytes, b.sequence_union_bytes);
  op(a.certain_reads, b.certain_reads);
  op(a.early_routed, b.early_routed);
  op(a.early_unused, b.early_unused);
  op(a.computed_as_landed, b.computed_as_landed);
  for (size_t i = 0; i < kServedKinds; ++i) {
    op(a.served[i], b.served[i]);
    op(a.served_bytes[i], b.served_bytes[i]);
  }
  op(a.seconds_route, b.seconds_route);
  op(a.seconds_fetch_wait, b.seconds_fetch_wait);
  op(a.seconds_expert, b.seconds_expert);
  op(a.seconds_attention, b.seconds_attention);
  op(a.seconds_dense, b.seconds_dense);
  op(a.seconds_head, b.seconds_head);
  op(a.head_rows, b.head_rows);
  op(a.engram_passes, b.engram_passes);
  op(a.seconds_engram_arrive, b.seconds_engram_arrive);
  op(a.seconds_engram_need, b.seconds_engram_need);
  op(a.seconds_engram_wait, b.seconds_engram_wait);
}

}  // namespace

ForwardStats ForwardStats::Delta(const ForwardStats& after, const ForwardStats& before) {
  ForwardStats delta = after;
  EachCounter(delta, before, [](auto& a, const auto& b) { a -= b; });
  return delta;
}

ForwardStats& ForwardStats::operator+=(const ForwardStats& other) {
  EachCounter(*this, other, [](auto& a, const auto& b) { a += b; });
  return *this;
}

}  // namespace warp::computed
