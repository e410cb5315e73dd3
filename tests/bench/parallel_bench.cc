// What `computed serve --parallel` gains: REQUESTS requests arrive at once
// at the server's engine (serve::EngineWorker, without HTTP), each a prompt
// of random token ids and a sampled reply (seeded, so every configuration
// decodes the same tokens); they run --parallel at a time, each batched
// decode step reading the union of its requests' experts once. Prints one
// line: wall time, total decode tok/s, the store's bytes read per generated
// token, and the dedup the batches made. tests/bench/serve_parallel.sh runs
// it for several --parallel in one run, alternating.
//
//   parallel_bench MODEL.warp --parallel P [--requests R] [--tokens N]
//                  [--prompt-tokens N] [--budget SIZE] [--threads N] [--warmup]
// --warmup: first the same number of other requests, untimed (a resident
// model's experts read once before the figures start).

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "common/byte_size.h"
#include "computed/run/session.h"
#include "computed/serve/engine_worker.h"

namespace {

using warp::computed::ForwardStats;
using warp::computed::Session;
using warp::computed::SessionOptions;
using warp::computed::serve::EngineWorker;
using warp::computed::serve::FinishReason;
using warp::computed::serve::GenerationFigures;
using warp::computed::serve::GenerationJob;

struct Args {
  std::string model;
  uint32_t parallel = 1;
  uint32_t requests = 4;
  uint32_t tokens = 32;
  uint32_t prompt_tokens = 16;
  std::string budget;
  uint32_t threads = 0;
  bool warmup = false;
};

bool ParseArgs(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto number = [&](uint32_t& out) {
      return i + 1 < argc && absl::SimpleAtoi(argv[++i], &out) && out > 0;
    };
    bool ok = true;
    if (flag == "--parallel") {
      ok = number(args.parallel);
    } else if (flag == "--requests") {
      ok = number(args.requests);
    } else if (flag == "--tokens") {
      ok = number(args.tokens);
    } else if (flag == "--prompt-tokens") {
      ok = number(args.prompt_tokens);
    } else if (flag == "--threads") {
      ok = number(args.threads);
    } else if (flag == "--warmup") {
      args.warmup = true;
    } else if (flag == "--budget" && i + 1 < argc) {
      args.budget = argv[++i];
    } else if (args.model.empty() && flag[0] != '-') {
      args.model = flag;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "parallel_bench: bad argument %s\n", flag.c_str());
      return false;
    }
  }
  return !args.model.empty();
}

uint64_t ReadBytes(const std::map<std::string, uint64_t>& counters) {
  uint64_t sum = 0;
  for (const char* name : {"expertd.store.read_bytes_demand", "expertd.store.read_bytes_certain",
                           "expertd.store.read_bytes_lookahead"}) {
    auto it = counters.find(name);
    if (it != counters.end()) sum += it->second;
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: parallel_bench MODEL.warp --parallel P [--requests R] [--tokens N] "
                 "[--prompt-tokens N] [--budget SIZE] [--threads N]\n");
    return 2;
  }
  SessionOptions options{.model = args.model};
  options.engine.max_positions = args.prompt_tokens + args.tokens + 1;
  options.engine.sequences = args.parallel;
  options.compute.threads = args.threads;
  if (!args.budget.empty()) {
    auto budget = warp::ParseByteSize(args.budget);
    if (!budget.ok()) {
      std::fprintf(stderr, "parallel_bench: %s\n", budget.status().ToString().c_str());
      return 2;
    }
    options.run.budget_bytes = *budget;
  }
  auto session = Session::Open(options);
  if (!session.ok()) {
    std::fprintf(stderr, "parallel_bench: %s\n", session.status().ToString().c_str());
    return 1;
  }
  const uint32_t vocab = (*session)->vocab_size();
  EngineWorker worker(*std::move(session), args.requests);
  // Submits the requests of `set` (its prompts and seeds) at once and waits
  // for them; returns the tokens generated, or 0 if one failed.
  auto run_set = [&](uint32_t set) -> uint32_t {
    std::mutex mutex;
    std::condition_variable all_done;
    uint32_t done = 0, generated = 0;
    bool failed = false;
    for (uint32_t r = 0; r < args.requests; ++r) {
      const uint32_t id = set * args.requests + r;
      std::mt19937 random(1000 + id);
      GenerationJob job;
      for (uint32_t t = 0; t < args.prompt_tokens; ++t) {
        job.prompt.push_back(static_cast<int32_t>(random() % vocab));
      }
      job.max_tokens = args.tokens;
      job.sampling = {.temperature = 0.8f, .top_p = 0.95f, .seed = 7 + id};
      job.on_token = [](int32_t) { return true; };
      job.on_done = [&](const absl::Status& status, FinishReason, const GenerationFigures& f) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!status.ok()) {
          std::fprintf(stderr, "parallel_bench: %s\n", status.ToString().c_str());
          failed = true;
        }
        generated += f.completion_tokens;
        ++done;
        all_done.notify_all();
      };
      if (absl::Status submitted = worker.Submit(std::move(job)); !submitted.ok()) {
        std::fprintf(stderr, "parallel_bench: %s\n", submitted.ToString().c_str());
        return 0;
      }
    }
    std::unique_lock<std::mutex> lock(mutex);
    all_done.wait(lock, [&] { return done == args.requests; });
    return failed ? 0 : generated;
  };
  if (args.warmup && run_set(1) == 0) return 1;
  const warp::computed::serve::EngineStats before = worker.Stats();
  const auto start = std::chrono::steady_clock::now();
  const uint32_t generated = run_set(0);
  if (generated == 0) return 1;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const warp::computed::serve::EngineStats stats = worker.Stats();
  const ForwardStats forward = ForwardStats::Delta(stats.forward, before.forward);
  const uint64_t read = ReadBytes(stats.source_counters) - ReadBytes(before.source_counters);
  const uint64_t steps = stats.steps - before.steps;
  const uint64_t stepped = stats.step_requests - before.step_requests;
  std::printf(
      "parallel %2u  requests %u  tokens %5u  wall %7.2f s  %7.2f tok/s  read %s a token  "
      "mean batch %.2f  batch dedup %.2fx\n",
      args.parallel, args.requests, generated, wall, generated / wall,
      warp::FormatBytes(generated ? read / generated : 0).c_str(),
      steps ? static_cast<double>(stepped) / steps : 0.0,
      forward.expert_read_bytes
          ? static_cast<double>(forward.sequence_union_bytes) / forward.expert_read_bytes
          : 0.0);
  return 0;
}
