// computed logits MODEL.warp --tokens 1,2,3 [--out FILE] [--greedy N]
//   [--threads N] [--prefill-chunk N]
// The diagnostic forward pass: logits of every prompt position as float32
// little-endian [positions][vocab], and optionally a greedy continuation.

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <cstdlib>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/format/container.h"
#include "computed/cli/commands.h"
#include "computed/engine/sampler.h"
#include "computed/engine/sources.h"
#include "computed/engine/thread_pool.h"
#include "computed/engine/transformer.h"

namespace warp::computed {
namespace {

struct LogitsFlags {
  std::string model;
  std::string tokens;
  std::string out;
  uint32_t greedy = 0;
  uint32_t threads = 0;
  uint32_t prefill_chunk = 0;  // 0: the whole prompt in one prefill
  SamplerOptions sampling;     // temperature 0: greedy
  std::string banks;           // shard directories, comma-separated
  std::string stores;          // expertd addresses, comma-separated
};

absl::StatusOr<std::vector<int32_t>> ParseTokens(const std::string& text) {
  std::vector<int32_t> tokens;
  for (absl::string_view piece : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int32_t token;
    if (!absl::SimpleAtoi(piece, &token)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tokens: \"", std::string(piece), "\" is not a token id"));
    }
    tokens.push_back(token);
  }
  if (tokens.empty()) return absl::InvalidArgumentError("--tokens: no token ids given");
  return tokens;
}

absl::Status Run(const LogitsFlags& flags) {
  auto tokens = ParseTokens(flags.tokens);
  if (!tokens.ok()) return tokens.status();
  auto container = Container::Open(flags.model);
  if (!container.ok()) return container.status();
  std::shared_ptr<const Container> shared = std::move(*container);
  SourceOptions sources{.bank_dirs = SplitList(flags.banks), .stores = SplitList(flags.stores)};
  if (sources.bank_dirs.empty()) {
    if (const char* env = std::getenv("WARP_BANK_SHARDS")) sources.bank_dirs = SplitList(env);
  }
  auto opened = OpenExpertSource(shared, sources);
  if (!opened.ok()) return opened.status();
  ExpertSource& source = **opened;
  ThreadPool pool(flags.threads ? flags.threads : std::max(1u, std::thread::hardware_concurrency()));
  const uint32_t max_positions = static_cast<uint32_t>(tokens->size()) + flags.greedy + 1;
  auto transformer = Transformer::Create(shared, source, pool, {.max_positions = max_positions});
  if (!transformer.ok()) return transformer.status();
  const uint32_t vocab = (*transformer)->config().vocab_size;

  std::vector<float> logits;
  const size_t chunk = flags.prefill_chunk ? flags.prefill_chunk : tokens->size();
  for (size_t begin = 0; begin < tokens->size(); begin += chunk) {
    const size_t n = std::min(chunk, tokens->size() - begin);
    auto part = (*transformer)->Forward({tokens->data() + begin, n});
    if (!part.ok()) return part.status();
    logits.insert(logits.end(), part->begin(), part->end());
  }
  if (!flags.out.empty()) {
    std::ofstream out(flags.out, std::ios::binary);
    out.write(reinterpret_cast<const char*>(logits.data()),
              static_cast<std::streamsize>(logits.size() * sizeof(float)));
    if (!out) return absl::InternalError(absl::StrCat(flags.out, ": write failed"));
  }
  if (flags.greedy > 0) {
    std::vector<int32_t> generated;
    Sampler sampler(flags.sampling);
    int32_t next = sampler.Sample({logits.data() + logits.size() - vocab, vocab});
    for (uint32_t i = 0; i < flags.greedy; ++i) {
      generated.push_back(next);
      if (i + 1 == flags.greedy) break;
      auto step = (*transformer)->Forward({&next, 1});
      if (!step.ok()) return step.status();
      next = sampler.Sample(*step);
    }
    std::printf("%s\n", absl::StrJoin(generated, ",").c_str());
  }
  return absl::OkStatus();
}

}  // namespace

CommandRunner AddLogitsCommand(CLI::App& app) {
  auto flags = std::make_shared<LogitsFlags>();
  CLI::App* cmd = app.add_subcommand("logits", "Run a prompt and write its logits");
  cmd->add_option("model", flags->model, "MODEL.warp")->required();
  cmd->add_option("--tokens", flags->tokens, "Prompt token ids, comma-separated")->required();
  cmd->add_option("--out", flags->out, "Write float32 [positions][vocab] here");
  cmd->add_option("--greedy", flags->greedy,
                  "Then decode N tokens (greedily unless --temperature) and print them");
  cmd->add_option("--temperature", flags->sampling.temperature, "Sampling temperature (0: greedy)");
  cmd->add_option("--top-k", flags->sampling.top_k, "Sample among the k best tokens (0: all)");
  cmd->add_option("--top-p", flags->sampling.top_p, "Nucleus sampling mass (1: off)");
  cmd->add_option("--seed", flags->sampling.seed, "Sampling seed");
  cmd->add_option("--banks", flags->banks,
                  "Shard directories to read experts from, comma-separated (env WARP_BANK_SHARDS)");
  cmd->add_option("--stores", flags->stores,
                  "expertd daemons to read experts from: unix:PATH,tcp:HOST:PORT,...");
  cmd->add_option("--threads", flags->threads, "Compute threads (default: all cores)");
  cmd->add_option("--prefill-chunk", flags->prefill_chunk,
                  "Tokens per prefill chunk (default: the whole prompt)");
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
