#include "computed/engine/engram_reader.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "absl/strings/str_cat.h"
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
      row_bytes_(config.engram.head_dim + config.engram.head_dim / 32),
      addressing_(std::move(addressing)),
      store_(store),
      history_(sequences, std::vector<int32_t>(max_positions, 0)),
      waiter_([this] { WaitLoop(); }) {}

EngramReader::~EngramReader() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  waiter_.join();
}

void EngramReader::WaitLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || (posted_ && !ready_); });
    if (posted_ && !ready_) {
      lock.unlock();
      bytes_.resize(wanted_.size() * row_bytes_);
      absl::Status status = store_.Rows(fetch_, bytes_);
      const Clock::time_point arrived = Clock::now();
      lock.lock();
      status_ = std::move(status);
      arrived_ = arrived;
      ready_ = true;
      changed_.notify_all();
    } else {
      return;  // stopping, nothing in flight
    }
  }
}

void EngramReader::Begin(std::span<const int32_t> ids, std::span<const uint32_t> positions,
                         std::span<const uint32_t> sequences) {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return !posted_ || ready_; });  // an abandoned pass's rows
  const EngramHash& hash = addressing_.hash;
  n_ = static_cast<uint32_t>(ids.size());
  for (uint32_t t = 0; t < n_; ++t) {
    history_[sequences[t]][positions[t]] = addressing_.token_map[ids[t]];
  }
  rows_.resize(uint64_t{n_} * hash.rows_per_token());
  wanted_.clear();
  wanted_.reserve(rows_.size());
  for (uint32_t t = 0; t < n_; ++t) {
    const std::vector<int32_t>& history = history_[sequences[t]];
    std::span<int64_t> rows(&rows_[uint64_t{t} * hash.rows_per_token()], hash.rows_per_token());
    hash.HashPosition(std::span(history).first(positions[t] + 1), positions[t], rows);
    for (size_t i = 0; i < rows.size(); ++i) {
      wanted_.push_back({.table = static_cast<uint32_t>(i / hash.num_columns()),
                         .row = static_cast<uint64_t>(rows[i])});
    }
  }
  begin_ = Clock::now();
  fetch_ = store_.Fetch(wanted_);
  posted_ = true;
  ready_ = false;
  timed_ = false;
  changed_.notify_all();
}

void EngramReader::Prefetch(std::span<const int32_t> ids, uint32_t first_position,
                            uint32_t sequence) {
  const EngramHash& hash = addressing_.hash;
  std::vector<int32_t>& history = history_[sequence];
  const size_t n = std::min<size_t>(ids.size(), history.size() - std::min<size_t>(
                                                                     first_position, history.size()));
  // The look-back of these tokens reads only positions before them, which
  // the passes so far (or this prompt's earlier tokens) wrote; a pass
  // rewrites its own positions before it hashes them.
  for (size_t t = 0; t < n; ++t) history[first_position + t] = addressing_.token_map[ids[t]];
  std::vector<int64_t> rows(hash.rows_per_token());
  std::vector<EngramRow> ahead;
  ahead.reserve(n * rows.size());
  for (size_t t = 0; t < n; ++t) {
    const uint32_t position = first_position + static_cast<uint32_t>(t);
    hash.HashPosition(std::span(history).first(position + 1), position, rows);
    for (size_t i = 0; i < rows.size(); ++i) {
      ahead.push_back({.table = static_cast<uint32_t>(i / hash.num_columns()),
                       .row = static_cast<uint64_t>(rows[i])});
    }
  }
  store_.Prefetch(ahead);
}

absl::Status EngramReader::Rows(uint32_t table, std::vector<float>& out, ForwardStats& stats) {
  const Clock::time_point asked = Clock::now();
  {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return ready_; });
    if (!timed_) {
      timed_ = true;
      const Clock::time_point now = Clock::now();
      stats.engram_passes += 1;
      stats.seconds_engram_arrive += std::chrono::duration<double>(arrived_ - begin_).count();
      stats.seconds_engram_need += std::chrono::duration<double>(asked - begin_).count();
      stats.seconds_engram_wait += std::chrono::duration<double>(now - asked).count();
    }
    WARP_RETURN_IF_ERROR(status_);
  }
  const EngramHash& hash = addressing_.hash;
  const size_t columns = hash.num_columns();
  const std::array<float, 256>& e4m3 = E4m3Values();
  out.resize(uint64_t{n_} * columns * head_dim_);
  for (uint32_t t = 0; t < n_; ++t) {
    for (size_t c = 0; c < columns; ++c) {
      const size_t r = uint64_t{t} * columns + c;  // the row's place in `out`
      const auto* codes = reinterpret_cast<const uint8_t*>(
          &bytes_[(uint64_t{t} * hash.rows_per_token() + table * columns + c) * row_bytes_]);
      const uint8_t* scales = codes + head_dim_;
      for (uint32_t block = 0; block < head_dim_ / 32; ++block) {  // one E8M0 scale per 32
        const float scale = std::ldexp(1.0f, int{scales[block]} - 127);
        for (uint32_t i = block * 32; i < (block + 1) * 32; ++i) {
          out[r * head_dim_ + i] = e4m3[codes[i]] * scale;
        }
      }
    }
  }
  return absl::OkStatus();
}

void EngramReader::ArchiveHistory(uint32_t sequence, uint32_t positions,
                                  StateArchive& archive) {
  std::vector<int32_t>& history = history_[sequence];
  std::vector<int32_t> held(history.begin(), history.begin() + std::min<size_t>(positions, history.size()));
  archive.IdVector(held);
  if (!archive.ok()) return;
  if (held.size() > history.size()) {
    archive.Refuse(absl::StrCat(held.size(), " engram positions, past this context's ",
                                history.size()));
    return;
  }
  std::copy(held.begin(), held.end(), history.begin());
}

}  // namespace warp::computed
