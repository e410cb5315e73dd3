// The cost of constrained decoding per token on a real vocabulary (a
// tokenizer.json, e.g. Qwen3's 151,669 tokens): the vocabulary's trie, one
// mask in each kind of JSON state at its first visit (no cache), and a whole
// reply of a schema drawn by a model whose logits are random, so that the
// unconstrained sample is refused at almost every token and the mask is
// needed (the worst case; a trained model's samples are mostly allowed and
// cost one Allows check). tests/bench/constrained_decode.sh sets these
// against a resident decode token measured in the same run.
//
// Usage: constrain_bench TOKENIZER_JSON [REPLIES]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "computed/constrain/json_schema_grammar.h"
#include "computed/constrain/token_constraint.h"
#include "computed/engine/sampler.h"
#include "computed/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace warp::computed::constrain {
namespace {

using Json = nlohmann::ordered_json;

double Milliseconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::shared_ptr<const Grammar> SchemaGrammar(const Json& schema) {
  GrammarBuilder builder;
  JsonSchemaGrammar compiler(builder);
  const int32_t root = *compiler.Compile(schema);
  return std::make_shared<const Grammar>(*std::move(builder).Build(root));
}

const char* kSchema = R"({"type": "object", "properties": {
  "city": {"type": "string", "maxLength": 40}, "days": {"type": "integer"},
  "unit": {"enum": ["celsius", "fahrenheit"]}, "hourly": {"type": "boolean"},
  "notes": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3}},
  "required": ["city", "days", "unit", "hourly", "notes"]})";

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: constrain_bench TOKENIZER_JSON [REPLIES]\n");
    return 2;
  }
  const int replies = argc > 2 ? std::atoi(argv[2]) : 5;
  auto tokenizer = text::Tokenizer::Load(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tokenizer.status().message()).c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  auto vocabulary = std::make_shared<const Vocabulary>(Vocabulary::FromTokenizer(**tokenizer));
  std::printf("vocabulary: %d tokens, trie built in %.0f ms\n", vocabulary->size(),
              Milliseconds(start));
  const auto grammar = SchemaGrammar(Json::parse(kSchema));
  const int32_t end = (*tokenizer)->vocab_size();  // an end token past the vocabulary

  // First visits: each state's mask with an empty cache.
  const std::pair<const char*, std::string> states[] = {
      {"object start", ""},
      {"after a key", R"({"city")"},
      {"inside a free string", R"({"city": "Osl)"},
      {"inside an integer", R"({"city": "Oslo", "days": 12)"},
      {"an enum's start", R"({"city": "Oslo", "days": 12, "unit": ")"},
  };
  std::vector<float> logits(end + 1);
  for (const auto& [name, prefix] : states) {
    TokenConstraint constraint(grammar, vocabulary, {end});
    const std::vector<int32_t> ids = (*tokenizer)->Encode(prefix).value_or(std::vector<int32_t>{});
    for (const int32_t token : ids) {
      if (!constraint.Accept(token).ok()) std::fprintf(stderr, "prefix %s refused\n", name);
    }
    std::fill(logits.begin(), logits.end(), 0.0f);
    start = std::chrono::steady_clock::now();
    constraint.Mask(logits);
    const double ms = Milliseconds(start);
    size_t allowed = 0;
    for (const float l : logits) allowed += !std::isinf(l);
    std::printf("mask, first visit, %-22s %7.2f ms  (%zu tokens allowed)\n", name, ms, allowed);
  }

  // Whole replies under random logits: the worker's loop (sample, Allows,
  // Mask and resample when refused, Accept).
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal;
  size_t tokens = 0, masks = 0, computed = 0;
  double sample_ms = 0, constrain_ms = 0;
  for (int r = 0; r < replies; ++r) {
    TokenConstraint constraint(grammar, vocabulary, {end});
    Sampler sampler(SamplerOptions{.temperature = 1.0f, .seed = uint64_t(r)});
    for (int t = 0; t < 400; ++t) {
      for (float& l : logits) l = normal(rng);
      auto begin = std::chrono::steady_clock::now();
      int32_t token = sampler.Sample(logits);
      sample_ms += Milliseconds(begin);
      begin = std::chrono::steady_clock::now();
      if (!constraint.Allows(token)) {
        constraint.Mask(logits);
        ++masks;
        token = sampler.Sample(logits);
      }
      if (token == end) break;
      if (!constraint.Accept(token).ok()) return 1;
      constrain_ms += Milliseconds(begin);
      ++tokens;
    }
    computed += constraint.masks_computed();
  }
  std::printf("replies: %d, %zu tokens, %zu masked (%zu computed, the rest cached)\n", replies,
              tokens, masks, computed);
  std::printf("constraint per token: %.3f ms (sampling alone: %.3f ms)\n", constrain_ms / tokens,
              sample_ms / tokens);
  return 0;
}

}  // namespace
}  // namespace warp::computed::constrain

int main(int argc, char** argv) { return warp::computed::constrain::Main(argc, argv); }
