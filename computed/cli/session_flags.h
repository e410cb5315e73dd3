#pragma once

// The engine options shared by `computed run` and `computed logits`, so the
// same comparison (budget, prefetch, lookahead, threads, chunking, banks,
// stores) can be made from either command.

#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "common/wire/lan_auth.h"
#include "computed/engine/sampler.h"
#include "computed/run/session.h"

namespace warp::computed {

struct SessionFlags {
  std::string model;
  std::string banks;
  std::string stores;
  TlsClientFiles store_tls;                   // --tls-ca, --tls-cert, --tls-key, --token-file
  std::optional<double> store_retry_seconds;  // unset: per address (30 s local, 60 s tcp:/tls:)
  std::string budget;
  std::string cpus;
  uint32_t threads = 0;
  uint32_t io_threads = 4;
  std::string cache_policy;  // "": kDefaultEvictionPolicy (duel)
  std::string io_engine;     // "": kDefaultIoBackend
  bool no_ordered_pieces = false;
  uint32_t io_depth = 0;      // 0: UringReader::Options' default
  uint32_t io_piece_kib = 0;  // 0: UringReader::Options' default
  bool verify_every_read = false;
  uint32_t prefill_chunk = 0;
  bool no_prefetch = false;
  bool no_certain = false;
  bool early_route = false;
  bool no_early_route = false;
  bool no_prefault = false;
  bool prefault_anytime = false;
  bool no_paced_growth = false;
  bool no_foresight = false;
  std::string activations = "q8";             // --activations q8 | f32
  int lookahead = -1;                         // -1: WARP_LOOKAHEAD or 6
  std::optional<double> lookahead_precision;  // unset: the default
  uint32_t lookahead_depth = 1;
  uint32_t experts_per_token = 0;
  std::string trace;
  bool learn = false;
  bool preload = false;
};

void AddSessionFlags(CLI::App* cmd, SessionFlags& flags);

// --temperature, --top-k, --top-p, --seed (defaults: greedy).
void AddSamplingFlags(CLI::App* cmd, SamplerOptions& options);

// Resolves flags and environment (WARP_BANK_SHARDS, WARP_LOOKAHEAD).
// `positions` is the context the command needs (prompt + tokens to generate),
// counted in 64 bits so that no flag wraps it; the planner bounds it.
absl::StatusOr<SessionOptions> ToSessionOptions(const SessionFlags& flags, uint64_t positions);

}  // namespace warp::computed
