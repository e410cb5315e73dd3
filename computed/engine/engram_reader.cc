#include "computed/engine/engram_reader.h"

#include <array>
#include <cmath>

#include "common/status.h"

namespace warp::computed {
namespace {

// E4M3 (finite: 0x7F and 0xFF are NaN) as float, by code.
const std::array<float, 256>& E4m3Values() {
  static const std::array<float, 256> values = [] {
    std::array<float, 256> v{};
    for (int code = 0; code < 256; ++code) {
      const int exponent = (code >> 3) & 15, mantissa = code & 7;
      float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                      : std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
      if ((code & 0x7F) == 0x7F) magnitude = NAN;
      v[code] = code & 0x80 ? -magnitude : magnitude;
    }
    return v;
  }();
  return values;
}

}  // namespace

EngramReader::EngramReader(const ModelConfig& config, EngramAddressing addressing,
                           EngramStore& store, uint32_t sequences, uint32_t max_positions)
    : head_dim_(config.engram.head_dim),
      addressing_(std::move(addressing)),
      store_(store),
      history_(sequences, std::vector<int32_t>(max_positions, 0)) {}

void EngramReader::Begin(std::span<const int32_t> ids, std::span<const uint32_t> positions,
                         std::span<const uint32_t> sequences) {
  const EngramHash& hash = addressing_.hash;
  n_ = static_cast<uint32_t>(ids.size());
  for (uint32_t t = 0; t < n_; ++t) {
    history_[sequences[t]][positions[t]] = addressing_.token_map[ids[t]];
  }
  rows_.resize(uint64_t{n_} * hash.rows_per_token());
  std::vector<EngramRow> fetch;
  fetch.reserve(rows_.size());
  for (uint32_t t = 0; t < n_; ++t) {
    const std::vector<int32_t>& history = history_[sequences[t]];
    std::span<int64_t> rows(&rows_[uint64_t{t} * hash.rows_per_token()], hash.rows_per_token());
    hash.HashPosition(std::span(history).first(positions[t] + 1), positions[t], rows);
    for (size_t i = 0; i < rows.size(); ++i) {
      fetch.push_back({.table = static_cast<uint32_t>(i / hash.num_columns()),
                       .row = static_cast<uint64_t>(rows[i])});
    }
  }
  fetch_ = store_.Fetch(fetch);
}

absl::Status EngramReader::Rows(uint32_t table, std::vector<float>& out) {
  const EngramHash& hash = addressing_.hash;
  const size_t columns = hash.num_columns();
  std::vector<size_t> wanted;  // positions in the pass's fetch
  wanted.reserve(uint64_t{n_} * columns);
  for (uint32_t t = 0; t < n_; ++t) {
    for (size_t c = 0; c < columns; ++c) {
      wanted.push_back(uint64_t{t} * hash.rows_per_token() + table * columns + c);
    }
  }
  const uint32_t row_bytes = store_.row_bytes(table);
  std::vector<std::byte> bytes(wanted.size() * row_bytes);
  WARP_RETURN_IF_ERROR(store_.Rows(fetch_, wanted, bytes));
  const std::array<float, 256>& e4m3 = E4m3Values();
  out.resize(wanted.size() * head_dim_);
  for (size_t r = 0; r < wanted.size(); ++r) {
    const auto* codes = reinterpret_cast<const uint8_t*>(&bytes[r * row_bytes]);
    const uint8_t* scales = codes + head_dim_;
    for (uint32_t block = 0; block < head_dim_ / 32; ++block) {  // one E8M0 scale per 32
      const float scale = std::ldexp(1.0f, int{scales[block]} - 127);
      for (uint32_t i = block * 32; i < (block + 1) * 32; ++i) {
        out[r * head_dim_ + i] = e4m3[codes[i]] * scale;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace warp::computed
