// Time to first token with the prompt cache on disk, cold and warm across a
// restart, on one model (issue 48 part 4): a session opens the model, takes
// a prompt of N tokens through a PromptCache with a DiskPromptCache (the
// prefill, then the entry written), and closes; a second session — the
// restart, nothing in memory — takes the same prompt plus one more turn
// (M tokens), loading the first prompt's entry and prefilling the rest.
// Each time to first token is the prompt's logits; the first reply token is
// sampled greedily from them. Token ids are drawn at random from 300..1299
// (no tokenizer needed; a synthetic model's routing is uniform, which makes
// the cold prefill read more distinct experts than a real text would).
//
// Usage: prompt_cache_bench MODEL CACHE_DIR [--budget SIZE] [--prompt N] [--turn M]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/byte_size.h"
#include "computed/engine/sampler.h"
#include "computed/run/disk_prompt_cache.h"
#include "computed/run/prompt_cache.h"
#include "computed/run/session.h"

namespace warp::computed {
namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Args {
  std::string model, cache_dir, budget;
  uint32_t prompt = 4096, turn = 64;
};

// One "server lifetime": opens, brings the cache up to `ids`, closes.
int Once(const Args& args, const std::vector<int32_t>& ids, const char* label) {
  SessionOptions options{.model = args.model};
  options.engine.max_positions = args.prompt + args.turn + 8;
  if (!args.budget.empty()) options.run.budget_bytes = *ParseByteSize(args.budget);
  auto start = std::chrono::steady_clock::now();
  auto session = Session::Open(options);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  const double open_seconds = Seconds(start);
  auto disk = DiskPromptCache::Open(
      {.dir = args.cache_dir, .max_bytes = uint64_t{64} << 30, .key = (*session)->state_key()});
  if (!disk.ok()) {
    std::fprintf(stderr, "%s\n", disk.status().ToString().c_str());
    return 1;
  }
  PromptCache cache(**session, 0, disk->get());
  start = std::chrono::steady_clock::now();
  auto logits = cache.BringUpTo(ids, 1, "the prompt");
  if (!logits.ok()) {
    std::fprintf(stderr, "%s\n", logits.status().ToString().c_str());
    return 1;
  }
  const double ttft = Seconds(start);
  const int32_t first = ArgmaxToken(*logits);
  start = std::chrono::steady_clock::now();
  (*disk)->Flush();
  const double write_seconds = Seconds(start);
  const DiskPromptCacheStats stats = (*disk)->stats();
  std::printf(
      "%s: %zu prompt tokens, %u from disk, %u prefilled: time to first token %.2f s "
      "(first token %d; open %.1f s; entry write after it %.2f s; cache %lu entries, %.1f MiB)\n",
      label, ids.size(), cache.disk_tokens(), cache.new_tokens(), ttft, first, open_seconds,
      write_seconds, static_cast<unsigned long>(stats.entries), stats.bytes / 1048576.0);
  std::printf("  %s\n", (*session)->StatsLine().c_str());
  return 0;
}

int Main(int argc, char** argv) {
  Args args;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--budget" && i + 1 < argc) {
      args.budget = argv[++i];
    } else if (flag == "--prompt" && i + 1 < argc) {
      args.prompt = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (flag == "--turn" && i + 1 < argc) {
      args.turn = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else {
      positional.push_back(flag);
    }
  }
  if (positional.size() != 2) {
    std::fprintf(stderr,
                 "usage: prompt_cache_bench MODEL CACHE_DIR [--budget SIZE] [--prompt N] "
                 "[--turn M]\n");
    return 2;
  }
  args.model = positional[0];
  args.cache_dir = positional[1];
  std::mt19937 rng(7);
  std::vector<int32_t> ids(args.prompt + args.turn);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 1000 + 300);
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + args.prompt);
  if (int rc = Once(args, prompt, "cold"); rc != 0) return rc;
  return Once(args, ids, "warm, after a restart, one more turn");
}

}  // namespace
}  // namespace warp::computed

int main(int argc, char** argv) { return warp::computed::Main(argc, argv); }
