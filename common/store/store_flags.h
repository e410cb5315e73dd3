#pragma once

// The flags of an ExpertStore's knobs, declared once for both processes that
// run a store: computed (its embedded store) and `expertd serve`. Each flag
// writes its field of ExpertStore::Options (BankSet::Options and
// UringReader::Options inside it) directly, and its help shows the default
// the struct holds when the flag is registered. A knob added here reaches
// both; expertd's config maps the same struct (expertd/serve.h,
// StoreOptionsOf), so the embedded store and the daemon cannot drift.

#include "common/store/expert_store.h"

namespace CLI {
class App;
}  // namespace CLI

namespace warp {

// The help sections the flags go to. The few a run needs come first (the
// command's own); then the store's tuning; then the switches that only
// compare one mechanism against its absence (benchmarks, docs/EFFICIENCY.md),
// which never change the logits.
inline constexpr const char kStoreFlagGroup[] = "Expert store (embedded, or the daemon's)";
inline constexpr const char kAbFlagGroup[] =
    "A/B switches (for benchmarks: each turns one mechanism off; the logits stay the same)";

// Which store the flags tune: computed's embedded one also has the knobs of a
// private arena beside a compute engine (--prefault-anytime,
// --no-paced-growth); the daemon's config bounds its --io-threads.
enum class StoreFlagsFor { kEmbedded, kDaemon };

// Which of them to add now: a command with sections of its own adds the
// tuning with them and the A/B switches with its others, at the end.
enum class FlagSections { kAll, kTuning, kAbSwitches };

void AddStoreFlags(CLI::App* cmd, ExpertStore::Options& options, StoreFlagsFor side,
                   FlagSections sections = FlagSections::kAll);

}  // namespace warp
