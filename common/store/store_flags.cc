#include "common/store/store_flags.h"

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"

namespace warp {
namespace {

constexpr uint32_t kMaxEmbeddedIoThreads = 256;  // reads in flight: far above any disk's queue
constexpr uint32_t kMaxIoDepth = 4096;           // io_uring's own limit on a ring
constexpr uint32_t kMaxIoPieceKib = 1 << 20;     // UringReader's: 1 GiB

// A value the flag's parse refuses, with the exit code of the other refusals
// of a run's options (1).
[[noreturn]] void Refuse(std::string message) { throw CLI::ValidationError(std::move(message), 1); }

// The knobs a deployment tunes: threads, engine, pieces, policy, verification.
void AddStoreTuning(CLI::App* cmd, ExpertStore::Options& options, bool embedded) {
  BankSet::Options& banks = options.banks;
  CLI::Option* io_threads = cmd->add_option("--io-threads", options.io_threads,
                                            "Reader threads of the store: records read at once")
                                ->capture_default_str()
                                ->group(kStoreFlagGroup);
  // The daemon's bound is its config's (NormalizeConfig), whichever sets it.
  if (embedded) io_threads->check(CLI::Range(uint32_t{1}, kMaxEmbeddedIoThreads));
  cmd->add_option_function<std::string>(
         "--io-engine",
         [&banks](const std::string& name) {
           absl::StatusOr<IoBackend> backend = ParseIoBackend(name);
           if (!backend.ok()) Refuse(std::string(backend.status().message()));
           banks.io_backend = *backend;
         },
         absl::StrCat("How records come off the disk: uring (pieces in flight) or pread (default ",
                      IoBackendName(banks.io_backend), ")"))
      ->group(kStoreFlagGroup);
  cmd->add_option("--io-depth", banks.uring.depth,
                  absl::StrCat("uring: the disk's pieces in flight over all reads (default ",
                               banks.uring.depth, "; measured in docs/EFFICIENCY.md)"))
      ->check(CLI::Range(uint32_t{1}, kMaxIoDepth))
      ->group(kStoreFlagGroup);
  cmd->add_option_function<uint32_t>(
         "--io-piece-kib",
         [&banks](uint32_t kib) {
           if (kib % 4 != 0) {
             Refuse(absl::StrCat("--io-piece-kib ", kib, ": not a multiple of 4 (a page)"));
           }
           banks.uring.piece_bytes = uint64_t{kib} * 1024;
         },
         absl::StrCat("uring: KiB a piece of a record's read, a multiple of 4 (default ",
                      banks.uring.piece_bytes / 1024, ")"))
      ->check(CLI::Range(uint32_t{4}, kMaxIoPieceKib))
      ->group(kStoreFlagGroup);
  cmd->add_option_function<std::string>(
         "--cache-policy",
         [&options](const std::string& name) {
           absl::StatusOr<EvictionPolicy> policy = ParseEvictionPolicy(name);
           if (!policy.ok()) Refuse(std::string(policy.status().message()));
           options.cache_policy = *policy;
         },
         absl::StrCat("Eviction order of the record cache: duel, lfru, lru or arc (default ",
                      EvictionPolicyName(options.cache_policy), ")"))
      ->group(kStoreFlagGroup);
  cmd->add_flag_callback(
         "--verify-every-read", [&banks] { banks.verify_every_read = true; },
         "Check a record's CRC32C at every read (default: until it first passes; its footer "
         "at every read either way)")
      ->group(kStoreFlagGroup);
}

}  // namespace

void AddStoreFlags(CLI::App* cmd, ExpertStore::Options& options, StoreFlagsFor side,
                   FlagSections sections) {
  const bool embedded = side == StoreFlagsFor::kEmbedded;
  BankSet::Options& banks = options.banks;
  if (sections != FlagSections::kAbSwitches) AddStoreTuning(cmd, options, embedded);
  if (sections == FlagSections::kTuning) return;
  cmd->add_flag_callback(
         "--no-verify", [&banks] { banks.verify = false; },
         "Skip the CRC32C of records read (footers are still checked); for measuring only")
      ->group(kAbFlagGroup);
  cmd->add_flag_callback(
         "--no-prefault", [&options] { options.prefault_cache = false; },
         "Fault the cache's memory in at its first use instead of ahead of it, on an idle core")
      ->group(kAbFlagGroup);
  cmd->add_flag_callback(
         "--no-foresight", [&options] { options.foresight = false; },
         "Let evictions take records the lookahead has just predicted")
      ->group(kAbFlagGroup);
  cmd->add_flag_callback(
         "--no-ordered-pieces", [&banks] { banks.ordered_pieces = false; },
         "uring: each read sends its own pieces, instead of the disk's pieces granted by "
         "priority, then by the read's start")
      ->group(kAbFlagGroup);
  if (!embedded) return;
  cmd->add_flag_callback(
         "--prefault-anytime", [&options] { options.prefault_yields_to_prefill = false; },
         "Fault the cache in whenever a core is idle, also while a prefill computes")
      ->group(kAbFlagGroup);
  cmd->add_flag_callback(
         "--no-paced-growth", [&options] { options.pace_growth_below_bytes_per_second = 0; },
         "Let the cache grow into memory the prefault has not backed yet, even where fresh "
         "memory is slower than the disk")
      ->group(kAbFlagGroup);
}

}  // namespace warp
