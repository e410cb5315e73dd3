// llama_probe: llama.cpp as a test peer, through its public API (llama.h, gguf.h).
//
//   llama_probe logits MODEL.gguf --tokens 1,2,3 --out FILE [--threads N]
//       float32 logits of every prompt position, [positions][vocab], the layout
//       of `computed logits --out`, with an F32 KV cache (llama.cpp's default,
//       F16, rounds every key and value).
//   llama_probe dequantize IN.gguf OUT.gguf
//       a copy of IN with every float tensor converted to F32 by ggml's own
//       dequantizer: the target of an engine that computes in f32 from
//       dequantized weights. Integer tensors (DeepSeek-V4's I32 tid2eid
//       routing table) are copied as they are.
//   llama_probe quantize IN.gguf OUT.gguf TYPE [--pure]
//       llama_model_quantize, as llama.cpp's llama-quantize calls it (TYPE its
//       names: Q4_0 ... Q8_0, Q2_K ... Q6_K with _S/_M, MXFP4_MOE); --pure:
//       every matrix in TYPE. Here so that the peer needs no llama-quantize,
//       whose build doubles the peer's (llama.cpp's common library).
//   llama_probe bench MODEL.gguf --tokens 1,2,3 --gen N [--threads N] [--f32-kv]
//                     [--temperature T --seed S] [--repack]
//       prefill the tokens, then decode tokens one at a time, N in all (greedy,
//       or sampled from softmax(logits / T): greedy decoding of random weights
//       repeats one token and flatters every cache),
//       with llama.cpp's default KV cache (F16) unless --f32-kv; prints the
//       line "prefill_done" when the prompt is in, then the tokens "a,b,c" one
//       by one as they come; on stderr "prefill_tok_s=X decode_tok_s=Y".
//
// The model is mmap-ed and loaded without extra buffer types (llama-cli's
// --no-repack), on the CPU: how llama.cpp streams a model larger than RAM.
// bench --repack loads it as llama.cpp does by default instead: weights copied
// into its repacked CPU layouts (Q4_0 as interleaved blocks), in RAM.
// Built by tests/peer/install.sh against the llama.cpp of node-llama-cpp.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "llama.h"

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "llama_probe: %s\n", message.c_str());
  std::exit(1);
}

struct Args {
  std::string mode, model, out, tokens;
  int threads = 1, gen = 0;
  bool f32_kv = false;
  bool repack = false;
  double temperature = 0;  // 0: greedy
  unsigned seed = 0;
  std::string type;   // quantize: llama-quantize's name of the type
  bool pure = false;  // quantize: every matrix in `type`
};

Args ParseArgs(int argc, char** argv) {
  if (argc < 3) Die("usage: llama_probe logits|dequantize|quantize|bench MODEL.gguf [options]");
  Args args{.mode = argv[1], .model = argv[2]};
  int i = 3;
  if (args.mode == "quantize") {
    if (argc < 5 || argc > 6 || (argc == 6 && std::strcmp(argv[5], "--pure") != 0)) {
      Die("usage: llama_probe quantize IN.gguf OUT.gguf TYPE [--pure]");
    }
    args.out = argv[3];
    args.type = argv[4];
    args.pure = argc == 6;
    return args;
  }
  if (args.mode == "dequantize") {
    if (argc != 4) Die("usage: llama_probe dequantize IN.gguf OUT.gguf");
    args.out = argv[3];
    return args;
  }
  for (; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--f32-kv" || flag == "--repack") {
      (flag == "--repack" ? args.repack : args.f32_kv) = true;
      --i;
      continue;
    }
    if (i + 1 == argc) Die("flag without a value: " + flag);
    const std::string value = argv[i + 1];
    if (flag == "--tokens") {
      args.tokens = value;
    } else if (flag == "--out") {
      args.out = value;
    } else if (flag == "--threads") {
      args.threads = std::atoi(value.c_str());
    } else if (flag == "--gen") {
      args.gen = std::atoi(value.c_str());
    } else if (flag == "--temperature") {
      args.temperature = std::atof(value.c_str());
    } else if (flag == "--seed") {
      args.seed = static_cast<unsigned>(std::strtoul(value.c_str(), nullptr, 10));
    } else {
      Die("unknown flag " + flag);
    }
  }
  if (args.tokens.empty()) Die("--tokens is required");
  return args;
}

std::vector<llama_token> ParseTokens(const std::string& text) {
  std::vector<llama_token> tokens;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    char* end = nullptr;
    const long id = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || id < 0) Die("--tokens: bad id '" + item + "'");
    tokens.push_back(static_cast<llama_token>(id));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return tokens;
}

struct Engine {
  llama_model* model = nullptr;
  llama_context* ctx = nullptr;
  int vocab = 0;
  ~Engine() {
    if (ctx) llama_free(ctx);
    if (model) llama_model_free(model);
  }
};

void Load(Engine& engine, const Args& args, uint32_t n_ctx, uint32_t n_batch) {
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.load_mode = LLAMA_LOAD_MODE_MMAP;
  mp.use_extra_bufts = args.repack;  // false: llama-cli's --no-repack
  engine.model = llama_model_load_from_file(args.model.c_str(), mp);
  if (engine.model == nullptr) Die("cannot load " + args.model);
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = n_batch;
  cp.n_ubatch = n_batch;
  cp.n_threads = args.threads;
  cp.n_threads_batch = args.threads;
  cp.no_perf = true;
  if (args.f32_kv) {
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
  }
  engine.ctx = llama_init_from_model(engine.model, cp);
  if (engine.ctx == nullptr) Die("cannot create a context for " + args.model);
  engine.vocab = llama_vocab_n_tokens(llama_model_get_vocab(engine.model));
}

// Decodes `tokens` at positions [pos, pos + n) in one batch; `all_logits`
// asks for every position's logits, else only the last one's.
void Decode(Engine& engine, const std::vector<llama_token>& tokens, int pos, bool all_logits) {
  llama_batch batch = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = pos + static_cast<int>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = all_logits || i + 1 == tokens.size();
  }
  batch.n_tokens = static_cast<int32_t>(tokens.size());
  const int32_t status = llama_decode(engine.ctx, batch);
  llama_batch_free(batch);
  if (status != 0) Die("llama_decode failed with " + std::to_string(status));
}

llama_token Argmax(const float* logits, int vocab) {
  llama_token best = 0;
  for (int i = 1; i < vocab; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

// The next token: greedy at temperature 0, else drawn from softmax(logits / T).
llama_token Next(const float* logits, int vocab, double temperature, std::mt19937_64& rng) {
  if (temperature <= 0) return Argmax(logits, vocab);
  const float top = logits[Argmax(logits, vocab)];
  std::vector<double> weights(vocab);
  for (int i = 0; i < vocab; ++i) weights[i] = std::exp((logits[i] - top) / temperature);
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  return pick(rng);
}

int RunLogits(Args args) {
  args.f32_kv = true;
  const std::vector<llama_token> tokens = ParseTokens(args.tokens);
  if (args.out.empty()) Die("--out is required");
  Engine engine;
  const uint32_t n = static_cast<uint32_t>(tokens.size());
  Load(engine, args, n < 32 ? 32 : n, n);
  Decode(engine, tokens, 0, /*all_logits=*/true);
  FILE* out = std::fopen(args.out.c_str(), "wb");
  if (out == nullptr) Die("cannot write " + args.out);
  for (uint32_t i = 0; i < n; ++i) {
    const float* row = llama_get_logits_ith(engine.ctx, static_cast<int32_t>(i));
    if (row == nullptr) Die("no logits for position " + std::to_string(i));
    if (std::fwrite(row, sizeof(float), engine.vocab, out) != static_cast<size_t>(engine.vocab)) {
      Die("short write to " + args.out);
    }
  }
  if (std::fclose(out) != 0) Die("cannot close " + args.out);
  return 0;
}

int RunBench(const Args& args) {
  std::vector<llama_token> tokens = ParseTokens(args.tokens);
  if (args.gen <= 0) Die("--gen must be positive");
  Engine engine;
  const uint32_t n = static_cast<uint32_t>(tokens.size());
  Load(engine, args, n + args.gen + 8, n);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Decode(engine, tokens, 0, false);
  const auto t1 = Clock::now();
  std::printf("prefill_done\n");
  std::fflush(stdout);
  // Each token as soon as it is known, so that a caller can time the stream.
  std::mt19937_64 rng(args.seed);
  llama_token next = Next(llama_get_logits_ith(engine.ctx, -1), engine.vocab, args.temperature, rng);
  for (int i = 0; i < args.gen; ++i) {
    std::printf(i ? ",%d" : "%d", next);
    std::fflush(stdout);
    if (i + 1 == args.gen) break;
    Decode(engine, {next}, static_cast<int>(n) + i, false);
    next = Next(llama_get_logits_ith(engine.ctx, -1), engine.vocab, args.temperature, rng);
  }
  std::printf("\n");
  const auto t2 = Clock::now();
  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  std::fprintf(stderr, "prefill_tok_s=%.4f decode_tok_s=%.4f\n", n / prefill_s,
               (args.gen - 1) / decode_s);
  return 0;
}

int RunDequantize(const Args& args) {
  ggml_context* data = nullptr;
  gguf_init_params params = {.no_alloc = false, .ctx = &data};
  gguf_context* in = gguf_init_from_file(args.model.c_str(), params);
  if (in == nullptr) Die("cannot read " + args.model);
  const int64_t count = gguf_get_n_tensors(in);
  // Integer tensors are copied, not converted: ggml has no to_float for them.
  const auto is_integer = [](ggml_type type) {
    return type == GGML_TYPE_I8 || type == GGML_TYPE_I16 || type == GGML_TYPE_I32 || type == GGML_TYPE_I64;
  };
  size_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    const ggml_tensor* src = ggml_get_tensor(data, gguf_get_tensor_name(in, i));
    total += is_integer(src->type) ? ggml_nbytes(src) : ggml_nelements(src) * sizeof(float);
  }
  ggml_init_params alloc = {.mem_size = total + (count + 1) * ggml_tensor_overhead(),
                            .mem_buffer = nullptr,
                            .no_alloc = false};
  ggml_context* f32 = ggml_init(alloc);
  gguf_context* out = gguf_init_empty();
  gguf_set_kv(out, in);
  gguf_set_val_u32(out, "general.file_type", 0);  // LLAMA_FTYPE_ALL_F32
  for (int64_t i = 0; i < count; ++i) {
    const char* name = gguf_get_tensor_name(in, i);
    const ggml_tensor* src = ggml_get_tensor(data, name);
    const ggml_type type = is_integer(src->type) ? src->type : GGML_TYPE_F32;
    ggml_tensor* dst = ggml_new_tensor(f32, type, ggml_n_dims(src), src->ne);
    ggml_set_name(dst, name);
    const int64_t elements = ggml_nelements(src);
    if (is_integer(src->type)) {
      std::memcpy(dst->data, src->data, ggml_nbytes(src));
    } else if (src->type == GGML_TYPE_F32) {
      std::memcpy(dst->data, src->data, elements * sizeof(float));
    } else {
      const ggml_type_traits* traits = ggml_get_type_traits(src->type);
      if (traits->to_float == nullptr) Die(std::string(name) + ": no dequantizer");
      traits->to_float(src->data, static_cast<float*>(dst->data), elements);
    }
    gguf_add_tensor(out, dst);
  }
  if (!gguf_write_to_file(out, args.out.c_str(), false)) Die("cannot write " + args.out);
  gguf_free(out);
  gguf_free(in);
  ggml_free(f32);
  ggml_free(data);
  return 0;
}

int RunQuantize(const Args& args) {
  // llama-quantize's names of the types the agreement test makes.
  static const struct {
    const char* name;
    llama_ftype ftype;
  } kTypes[] = {
      {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},       {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
      {"MXFP4_MOE", LLAMA_FTYPE_MOSTLY_MXFP4_MOE}, {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},
      {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},       {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
      {"Q3_K", LLAMA_FTYPE_MOSTLY_Q3_K_M},     {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
      {"Q4_K", LLAMA_FTYPE_MOSTLY_Q4_K_M},     {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S},
      {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},   {"Q5_K", LLAMA_FTYPE_MOSTLY_Q5_K_M},
      {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S},   {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
      {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},       {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
  };
  llama_model_quantize_params params = llama_model_quantize_default_params();
  bool known = false;
  for (const auto& type : kTypes) {
    if (args.type == type.name) {
      params.ftype = type.ftype;
      known = true;
    }
  }
  if (!known) Die("unknown quantization type " + args.type);
  params.pure = args.pure;
  if (llama_model_quantize(args.model.c_str(), args.out.c_str(), &params) != 0) {
    Die("llama_model_quantize failed for " + args.model);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  llama_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
      },
      nullptr);
  llama_backend_init();
  int rc = 1;
  if (args.mode == "logits") {
    rc = RunLogits(args);
  } else if (args.mode == "bench") {
    rc = RunBench(args);
  } else if (args.mode == "dequantize") {
    rc = RunDequantize(args);
  } else if (args.mode == "quantize") {
    rc = RunQuantize(args);
  } else {
    Die("unknown mode " + args.mode);
  }
  llama_backend_free();
  return rc;
}
