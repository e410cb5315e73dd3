/* warp.h: the C API of WARP, for embedding the engine in another program
 * (libwarp.so). C11 and C++; no C++ type or exception crosses it.
 *
 * A warp_model is a .warp container's text layer (tokenizer, chat template,
 * end-of-text ids) plus the options its sessions open with. A warp_session is
 * one run of the model: its own trunk, expert cache and KV cache, as
 * `computed run` holds them. Text in, tokens through a session, text out:
 *
 *   warp_model_open -> warp_apply_chat_template -> warp_tokenize
 *   -> warp_session_create -> warp_session_prefill -> warp_session_generate
 *   -> warp_session_free -> warp_model_close
 *
 * Errors: every function that can fail returns a warp_status; WARP_OK is 0.
 * warp_last_error() gives the message of this thread's last call that
 * returned one ("" after a success), naming the file, field or id at fault.
 *
 * Threads: a warp_model is immutable once open, so tokenize, detokenize,
 * apply_chat_template and session_create may run on any number of threads at
 * once. A warp_session takes one call at a time, except warp_session_cancel,
 * which any thread may call while another generates.
 *
 * Memory: strings and arrays the library returns are freed with warp_free.
 *
 * Handles: the library keeps a registry of the models and sessions it has
 * opened and not yet closed. A handle closed or freed already (recently:
 * freed handles are kept out of reuse for a while, not forever), or never
 * returned by the library, is refused with WARP_INVALID_HANDLE instead of
 * being used; a session with a call in progress on another thread is refused
 * with WARP_FAILED_PRECONDITION. */

#ifndef WARP_API_WARP_H_
#define WARP_API_WARP_H_

#include <stddef.h>
#include <stdint.h>

/* Bumped when a function or a struct field is added; older programs keep
 * working (the option structs carry their size). */
#define WARP_API_VERSION 4

#if defined(__GNUC__)
#define WARP_EXPORT __attribute__((visibility("default")))
#else
#define WARP_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum warp_status {
  WARP_OK = 0,
  WARP_INVALID_ARGUMENT = 1,    /* a bad option, JSON, text or NULL pointer */
  WARP_NOT_FOUND = 2,           /* a file or directory that is not there */
  WARP_FAILED_PRECONDITION = 3, /* e.g. generate before prefill, budget below the floor */
  WARP_OUT_OF_RANGE = 4,        /* a token id outside the vocabulary, a full context */
  WARP_RESOURCE_EXHAUSTED = 5,  /* a prompt past the model's trained context */
  WARP_DATA_LOSS = 6,           /* a corrupt container or expert record */
  WARP_UNAVAILABLE = 7,         /* an expert store that cannot be reached */
  WARP_PERMISSION_DENIED = 8,   /* a file or a store that refuses access */
  WARP_UNSUPPORTED = 9,         /* a format or family this build does not know */
  WARP_INTERNAL = 10,           /* anything else, a C++ exception included */
  WARP_INVALID_HANDLE = 11,     /* a model or session closed or freed already, or not one
                                 * the library returned (API version 2) */
  WARP_ALREADY_EXISTS = 12      /* an output that is already there: warp_convert's `out`
                                 * holding a model (API version 2) */
} warp_status;

typedef struct warp_model warp_model;
typedef struct warp_session warp_session;

/* WARP_API_VERSION of the library itself (compare with the header's). */
WARP_EXPORT int warp_api_version(void);
/* "WARP_NOT_FOUND", ...; never NULL. */
WARP_EXPORT const char* warp_status_name(warp_status status);
/* This thread's last error message; valid until its next warp_ call. */
WARP_EXPORT const char* warp_last_error(void);
/* Frees what the library returned (strings, id arrays); NULL is fine. */
WARP_EXPORT void warp_free(void* memory);
/* Log level of the engine's stderr logs: "trace" .. "error", "off".
 * Until this is called, the library logs warnings and errors only. */
WARP_EXPORT void warp_set_log_level(const char* level);

/* ---- Model --------------------------------------------------------------- */

typedef struct warp_model_options {
  size_t struct_size;         /* sizeof(warp_model_options); set by _init */
  const char* path;           /* the MODEL.warp directory */
  uint64_t budget_bytes;      /* trunk + KV + expert cache, per session; 0: the planner's */
  const char* stores;         /* expertd daemons, "unix:PATH,tls:HOST:PORT"; NULL: embedded
                               * (an empty list or entry is refused) */
  const char* bank_dirs;      /* shard directories, comma-separated; NULL: the model's own
                               * (an empty list or entry is refused) */
  const char* tls_ca;         /* for tls: stores (NULL: none) */
  const char* tls_cert;       /* client certificate, with tls_key */
  const char* tls_key;        /* */
  const char* token_file;     /* the token sent to tls: stores */
  uint32_t threads;           /* compute threads; 0: every core */
  uint32_t io_threads;        /* reads in flight of the embedded store; 0: 4 */
  uint32_t context_positions; /* KV positions per session; 0: the model's, at most 4096 */
  uint32_t prefill_chunk;     /* prompt tokens per forward pass; 0: all at once */
  const char* activations;    /* "q8" (NULL: the default) or "f32": 4-bit weights (q4, MXFP4)
                               * dot activations rounded to int8, as `computed --activations q8`;
                               * "f32" dots them unrounded */
  uint32_t store_timeout_ms;  /* how long a store that cannot be reached is waited for, at
                               * warp_session_create and when one goes away mid-run
                               * (`computed --store-retry-seconds`); 0: 30 s for unix: and
                               * fastpath:, 60 s for tcp: and tls: (API version 2) */
  const char* expert_compute; /* "auto" (NULL), "records" or "daemons": whether the daemons of
                               * `stores` compute their experts over the rows sent, or send
                               * records (`computed --expert-compute`; auto: compute when every
                               * store is beyond this machine) (API version 3) */
  const char* prompt_cache_dir; /* keep prompt states here (NULL: no cache on disk), as
                                 * `computed serve --prompt-cache-dir`: a session's first
                                 * prefill loads the longest saved prefix of its ids and runs
                                 * only the rest; prefill and generate save what the context
                                 * holds (API version 4) */
  uint64_t prompt_cache_bytes;  /* what the directory may hold of this model; 0: 20 GiB */
} warp_model_options;

/* Fills the defaults and struct_size. */
WARP_EXPORT void warp_model_options_init(warp_model_options* options);

/* Opens the container at options->path and loads its tokenizer and chat
 * template (a model without a tokenizer opens; then only token ids work). */
WARP_EXPORT warp_status warp_model_open(const warp_model_options* options, warp_model** model_out);
/* Sessions keep what they need: a model may be closed before them, and while
 * other threads are in calls on it (they finish with the model they had).
 * NULL is WARP_OK; a handle closed already is WARP_INVALID_HANDLE. */
WARP_EXPORT warp_status warp_model_close(warp_model* model);

/* The model's vocabulary size (the largest valid token id + 1). */
WARP_EXPORT warp_status warp_model_vocab_size(const warp_model* model, uint32_t* vocab_size_out);

/* ---- Conversion ---------------------------------------------------------- */

typedef struct warp_convert_options {
  size_t struct_size;  /* sizeof(warp_convert_options); set by _init */
  const char* source;  /* a Hugging Face checkpoint directory (config.json, *.safetensors)
                        * or a .gguf file */
  const char* out;     /* the MODEL.warp directory to write; refused if it holds a model */
  const char* experts; /* "native" (NULL), "q8", "q4" or "vq3r": the routed experts' format */
  const char* trunk;   /* "native" (NULL), "bf16", "q8", "q4" or "mixed": the dense tensors'
                        * format (docs/ENGINE.md, "A trunk that fits") */
  int direct_io;       /* nonzero (the default): write with O_DIRECT, past the page cache */
  int early_route_folds; /* nonzero (the default): fold each router through its attention's
                          * output projection into the trunk (`--no-early-route-folds`: 0) */
} warp_convert_options;

/* Fills the defaults and struct_size. */
WARP_EXPORT void warp_convert_options_init(warp_convert_options* options);

/* `computed convert`: writes options->out from options->source tensor by
 * tensor in bounded memory, on the calling thread, printing nothing. A
 * conversion that fails leaves no manifest.json, so no half-written model
 * opens. */
WARP_EXPORT warp_status warp_convert(const warp_convert_options* options);

/* ---- Text ---------------------------------------------------------------- */

/* Token ids of `text` (UTF-8, text_len bytes). add_special_tokens applies
 * the tokenizer's post-processor (e.g. a BOS); a rendered chat template
 * already holds its special tokens, so pass 0 for one. */
WARP_EXPORT warp_status warp_tokenize(const warp_model* model, const char* text, size_t text_len,
                                      int add_special_tokens, int32_t** ids_out,
                                      size_t* num_ids_out);

/* The text of `ids`, NUL-terminated; text_len_out may be NULL. */
WARP_EXPORT warp_status warp_detokenize(const warp_model* model, const int32_t* ids, size_t num_ids,
                                        int skip_special_tokens, char** text_out,
                                        size_t* text_len_out);

/* The prompt the model's chat template renders, as transformers'
 * apply_chat_template(messages, tools=..., **kwargs, tokenize=False) does.
 * messages_json: [{"role": "user", "content": "..."}, ...] (or {"messages": [...]}).
 * tools_json: NULL, or an array of OpenAI-style tool definitions.
 * template_kwargs_json: NULL, or an object of template variables such as
 * {"enable_thinking": false}. prompt_len_out may be NULL. */
WARP_EXPORT warp_status warp_apply_chat_template(const warp_model* model, const char* messages_json,
                                                 int add_generation_prompt, const char* tools_json,
                                                 const char* template_kwargs_json,
                                                 char** prompt_out, size_t* prompt_len_out);

/* ---- Session ------------------------------------------------------------- */

/* Opens the model's weights and expert source inside the budget. */
WARP_EXPORT warp_status warp_session_create(const warp_model* model, warp_session** session_out);
/* NULL is WARP_OK; a session freed already is WARP_INVALID_HANDLE. A session
 * with a call in progress (a generation on another thread, or this thread's
 * callback) is not freed: WARP_FAILED_PRECONDITION; cancel it, let the call
 * return, then free it. */
WARP_EXPORT warp_status warp_session_free(warp_session* session);

/* Runs `ids` through the model after what the session holds (the whole
 * prompt, or a turn that continues it). */
WARP_EXPORT warp_status warp_session_prefill(warp_session* session, const int32_t* ids,
                                             size_t num_ids);

/* Forgets the context: the next prefill starts a new text. */
WARP_EXPORT warp_status warp_session_reset(warp_session* session);

typedef struct warp_generate_options {
  size_t struct_size;  /* sizeof(warp_generate_options); set by _init */
  uint32_t max_tokens; /* default 32 */
  float temperature;   /* 0 (the default): greedy */
  uint32_t top_k;      /* 0: all tokens */
  float top_p;         /* 1: no nucleus cut */
  uint64_t seed;       /* sampling seed, per generate call */
  int ignore_eos;      /* nonzero: end-of-text ids do not stop it */
} warp_generate_options;

WARP_EXPORT void warp_generate_options_init(warp_generate_options* options);

/* Called once per generated token, before the next one is computed, with
 * the text that token completed (NUL-terminated, possibly empty: a character
 * may span tokens). Return nonzero to stop. When the generation ends, text
 * still held back is passed once more with token WARP_NO_TOKEN. */
#define WARP_NO_TOKEN (-1)
typedef int (*warp_token_callback)(void* user_data, int32_t token, const char* text,
                                   size_t text_len);

typedef enum warp_stop_reason {
  WARP_STOP_LENGTH = 0,      /* max_tokens were generated */
  WARP_STOP_EOS = 1,         /* an end-of-text id was sampled (not passed on) */
  WARP_STOP_CALLBACK = 2,    /* the callback returned nonzero */
  WARP_STOP_CANCELLED = 3,   /* warp_session_cancel */
  WARP_STOP_CONTEXT_FULL = 4 /* the session's context_positions are used up */
} warp_stop_reason;

/* Generates from the end of the context (the last prefill or generation;
 * FAILED_PRECONDITION when it is empty). Tokens generated become context: a
 * following prefill or generate continues after them, giving the tokens one
 * longer generation would have. An end-of-text id is not context: a chat's
 * next turn, rendered by its template, brings its own.
 * options and callback may be NULL; num_tokens_out, stop_reason_out too. */
WARP_EXPORT warp_status warp_session_generate(warp_session* session,
                                              const warp_generate_options* options,
                                              warp_token_callback callback, void* user_data,
                                              uint32_t* num_tokens_out,
                                              warp_stop_reason* stop_reason_out);

/* Thread-safe: stops the generation running on this session before its next
 * token (WARP_STOP_CANCELLED). Each generation starts uncancelled. A handle
 * that is not a live session is ignored. */
WARP_EXPORT void warp_session_cancel(warp_session* session);

typedef struct warp_stats {
  size_t struct_size;         /* sizeof(warp_stats), set by the caller */
  uint32_t position;          /* tokens in the KV cache */
  uint32_t max_positions;     /* its capacity */
  uint64_t budget_bytes;      /* what the session took */
  uint64_t cache_bytes;       /* the expert cache's share of it */
  uint64_t prefill_tokens;    /* prompt tokens run */
  double prefill_seconds;     /* inside warp_session_prefill */
  uint64_t decode_tokens;     /* tokens generated */
  double decode_seconds;      /* inside warp_session_generate */
  uint64_t expert_hits;       /* demand records found in the cache */
  uint64_t expert_misses;     /* demand records read from disk */
  uint64_t lookahead_hits;    /* records a prediction brought in first */
  uint64_t expert_miss_bytes; /* bytes the misses read */
  uint64_t prompt_cache_tokens; /* prefill tokens loaded from prompt_cache_dir, not run
                                 * (API version 4) */
} warp_stats;

/* The session's counters; the caller sets stats->struct_size. */
WARP_EXPORT warp_status warp_session_stats(const warp_session* session, warp_stats* stats);
/* The stats line `computed run` prints: "[prefill 7 tokens ...]". */
WARP_EXPORT warp_status warp_session_stats_line(const warp_session* session, char** line_out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WARP_API_WARP_H_ */
