// The C entry points of warp.h: argument checks, status codes, the thread's
// last error, and a catch-all so no C++ exception reaches a C caller. The
// work is in ModelState and SessionState.

#include "computed/api/warp.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "common/status.h"
#include "computed/api/convert_call.h"
#include "computed/api/model_state.h"
#include "computed/api/session_state.h"

struct warp_model {
  std::shared_ptr<const warp::api::ModelState> state;
};

struct warp_session {
  std::unique_ptr<warp::api::SessionState> state;
  // Calls in progress (HandleRegistry's mutex guards both): free waits for
  // none, and a call from another thread while one runs is refused.
  int calls = 0;
  std::thread::id caller;
};

namespace {

using warp::api::ModelState;
using warp::api::SessionState;

// The handles the library gave out and has not taken back: a pointer is
// looked up here before it is used, so a closed, freed or foreign one is
// refused (WARP_INVALID_HANDLE) instead of dereferenced. The shells of freed
// handles (a few dozen bytes each) stay allocated in a bounded quarantine, so
// that a new handle does not reuse a stale one's address at once; a stale
// pointer older than the quarantine may again name a live handle (the
// registry trades that for bounded memory).
//
// Thread-safe: one mutex, held only for lookups, never across the engine's work.
class HandleRegistry {
 public:
  static HandleRegistry& Get() {
    static auto* registry = new HandleRegistry();  // never destroyed: handles may outlive main
    return *registry;
  }

  void Add(warp_model* model) {
    absl::MutexLock lock(&mu_);
    models_.insert(model);
  }
  void Add(warp_session* session) {
    absl::MutexLock lock(&mu_);
    sessions_.insert(session);
  }

  // The model's state, shared: the call keeps it alive if another thread closes the handle.
  absl::StatusOr<std::shared_ptr<const ModelState>> Model(const warp_model* model) {
    absl::MutexLock lock(&mu_);
    if (!models_.contains(model)) return Stale("model");
    return model->state;
  }

  // Takes the model out of the registry; its state goes when the last session and call are done.
  absl::Status Close(warp_model* model) {
    std::shared_ptr<const ModelState> state;  // released after the lock
    absl::MutexLock lock(&mu_);
    if (models_.erase(model) == 0) return Stale("model");
    state = std::move(model->state);
    Quarantine(closed_models_, model);
    return absl::OkStatus();
  }

  // Starts a call on `session`; EndCall must follow when it is OK.
  absl::Status BeginCall(const warp_session* session) {
    absl::MutexLock lock(&mu_);
    auto* live = Live(session);
    if (live == nullptr) return Stale("session");
    if (live->calls > 0 && live->caller != std::this_thread::get_id()) {
      return absl::FailedPreconditionError(
          "the session is in a call on another thread (a warp_session takes one call at a time; "
          "only warp_session_cancel may run beside one)");
    }
    if (live->calls++ == 0) live->caller = std::this_thread::get_id();
    return absl::OkStatus();
  }
  void EndCall(const warp_session* session) {
    absl::MutexLock lock(&mu_);
    --Live(session)->calls;
  }

  // Cancels the session's generation if it is live; ignores anything else.
  void Cancel(warp_session* session) {
    absl::MutexLock lock(&mu_);
    if (auto* live = Live(session)) live->state->Cancel();
  }

  absl::Status Free(warp_session* session) {
    std::unique_ptr<SessionState> state;  // destroyed after the lock: it joins threads
    absl::MutexLock lock(&mu_);
    auto* live = Live(session);
    if (live == nullptr) return Stale("session");
    if (live->calls > 0) {
      return absl::FailedPreconditionError(
          "the session is in a call (a generation on another thread, or its callback): "
          "warp_session_cancel it, let the call return, then free it");
    }
    sessions_.erase(live);
    state = std::move(live->state);
    Quarantine(freed_sessions_, live);
    return absl::OkStatus();
  }

 private:
  // Freed shells kept before their memory is reused, per kind.
  static constexpr size_t kQuarantine = 1024;

  static absl::Status Stale(const char* kind) {
    absl::Status status = absl::InvalidArgumentError(
        absl::StrCat(kind, " is not an open handle (closed or freed already, or not one the "
                           "library returned)"));
    status.SetPayload(kInvalidHandle, absl::Cord());
    return status;
  }

  warp_session* Live(const warp_session* session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = sessions_.find(const_cast<warp_session*>(session));
    return it == sessions_.end() ? nullptr : *it;
  }

  template <typename Handle>
  void Quarantine(std::deque<std::unique_ptr<Handle>>& shells, Handle* handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    shells.emplace_back(handle);
    if (shells.size() > kQuarantine) shells.pop_front();
  }

 public:
  // The payload of Stale's statuses, which ToWarpStatus turns into WARP_INVALID_HANDLE.
  static constexpr char kInvalidHandle[] = "warp.api.InvalidHandle";

 private:
  absl::Mutex mu_;
  std::unordered_set<const warp_model*> models_ ABSL_GUARDED_BY(mu_);
  std::unordered_set<warp_session*> sessions_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<warp_model>> closed_models_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<warp_session>> freed_sessions_ ABSL_GUARDED_BY(mu_);
};

// A session call in progress (HandleRegistry::BeginCall .. EndCall).
class SessionCall {
 public:
  explicit SessionCall(const warp_session* session) : session_(session) {}
  SessionCall(const SessionCall&) = delete;
  SessionCall& operator=(const SessionCall&) = delete;
  ~SessionCall() {
    if (begun_) HandleRegistry::Get().EndCall(session_);
  }
  absl::Status Begin() {
    WARP_RETURN_IF_ERROR(HandleRegistry::Get().BeginCall(session_));
    begun_ = true;
    return absl::OkStatus();
  }

 private:
  const warp_session* session_;
  bool begun_ = false;
};

thread_local std::string last_error;  // warp_last_error of this thread

// An embedding program's stderr is its own: warnings only, until it asks.
std::atomic<bool> log_level_chosen{false};

void SetLastError(const char* message) noexcept {
  try {
    last_error = message;
  } catch (...) {  // out of memory: an empty message still says nothing is right
    last_error.clear();
  }
}

warp_status ToWarpStatus(const absl::Status& status) {
  if (status.GetPayload(HandleRegistry::kInvalidHandle).has_value()) return WARP_INVALID_HANDLE;
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return WARP_OK;
    case absl::StatusCode::kInvalidArgument:
      return WARP_INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
      return WARP_NOT_FOUND;
    case absl::StatusCode::kFailedPrecondition:
      return WARP_FAILED_PRECONDITION;
    case absl::StatusCode::kOutOfRange:
      return WARP_OUT_OF_RANGE;
    case absl::StatusCode::kResourceExhausted:
      return WARP_RESOURCE_EXHAUSTED;
    case absl::StatusCode::kDataLoss:
      return WARP_DATA_LOSS;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return WARP_UNAVAILABLE;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return WARP_PERMISSION_DENIED;
    case absl::StatusCode::kUnimplemented:
      return WARP_UNSUPPORTED;
    case absl::StatusCode::kAlreadyExists:
      return WARP_ALREADY_EXISTS;
    default:
      return WARP_INTERNAL;
  }
}

// Runs `body` (returning absl::Status) as one C call: the status becomes the
// code and the thread's message; an exception becomes WARP_INTERNAL.
template <typename Body>
warp_status Call(Body&& body) noexcept {
  SetLastError("");
  try {
    const absl::Status status = body();
    if (status.ok()) return WARP_OK;
    SetLastError(std::string(status.message()).c_str());
    return ToWarpStatus(status);
  } catch (const std::bad_alloc&) {
    SetLastError("out of memory");
    return WARP_RESOURCE_EXHAUSTED;
  } catch (const std::exception& error) {
    SetLastError(absl::StrCat("internal error: ", error.what()).c_str());
    return WARP_INTERNAL;
  } catch (...) {
    SetLastError("internal error: an exception of unknown type");
    return WARP_INTERNAL;
  }
}

absl::Status Null(const char* argument) {
  return absl::InvalidArgumentError(absl::StrCat(argument, " is NULL"));
}

// A malloc'd, NUL-terminated copy for warp_free.
absl::Status CopyOut(const std::string& text, char** out, size_t* length_out) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) return absl::ResourceExhaustedError("out of memory");
  std::memcpy(copy, text.data(), text.size());
  copy[text.size()] = '\0';
  *out = copy;
  if (length_out != nullptr) *length_out = text.size();
  return absl::OkStatus();
}

// `options` as this library's struct: a caller built against an older
// header passes a shorter one; the fields it lacks keep their defaults.
template <typename Options, typename Init>
absl::Status Widen(const Options* options, Init init, const char* name, Options& out) {
  init(&out);
  if (options == nullptr) return absl::OkStatus();
  if (options->struct_size < sizeof(size_t)) {
    return absl::InvalidArgumentError(absl::StrCat(name, "->struct_size is ", options->struct_size,
                                                   ": fill it with its _init function"));
  }
  std::memcpy(&out, options, std::min(options->struct_size, sizeof(Options)));
  out.struct_size = sizeof(Options);
  return absl::OkStatus();
}

void EnsureLogging() {
  if (!log_level_chosen.exchange(true)) warp::InitLogging("warn");
}

}  // namespace

extern "C" {

int warp_api_version(void) { return WARP_API_VERSION; }

const char* warp_status_name(warp_status status) {
  switch (status) {
    case WARP_OK:
      return "WARP_OK";
    case WARP_INVALID_ARGUMENT:
      return "WARP_INVALID_ARGUMENT";
    case WARP_NOT_FOUND:
      return "WARP_NOT_FOUND";
    case WARP_FAILED_PRECONDITION:
      return "WARP_FAILED_PRECONDITION";
    case WARP_OUT_OF_RANGE:
      return "WARP_OUT_OF_RANGE";
    case WARP_RESOURCE_EXHAUSTED:
      return "WARP_RESOURCE_EXHAUSTED";
    case WARP_DATA_LOSS:
      return "WARP_DATA_LOSS";
    case WARP_UNAVAILABLE:
      return "WARP_UNAVAILABLE";
    case WARP_PERMISSION_DENIED:
      return "WARP_PERMISSION_DENIED";
    case WARP_UNSUPPORTED:
      return "WARP_UNSUPPORTED";
    case WARP_INTERNAL:
      return "WARP_INTERNAL";
    case WARP_INVALID_HANDLE:
      return "WARP_INVALID_HANDLE";
    case WARP_ALREADY_EXISTS:
      return "WARP_ALREADY_EXISTS";
  }
  return "WARP_UNKNOWN_STATUS";
}

const char* warp_last_error(void) { return last_error.c_str(); }

void warp_free(void* memory) { std::free(memory); }

void warp_set_log_level(const char* level) {
  log_level_chosen.store(true);
  try {
    warp::InitLogging(level != nullptr ? level : "info");
  } catch (...) {  // the loggers keep their level
  }
}

void warp_model_options_init(warp_model_options* options) {
  if (options == nullptr) return;
  *options = warp_model_options{};
  options->struct_size = sizeof(warp_model_options);
  options->io_threads = 4;
}

warp_status warp_model_open(const warp_model_options* options, warp_model** model_out) {
  return Call([&]() -> absl::Status {
    if (options == nullptr) return Null("options");
    if (model_out == nullptr) return Null("model_out");
    *model_out = nullptr;
    EnsureLogging();
    warp_model_options wide;
    if (absl::Status s = Widen(options, warp_model_options_init, "options", wide); !s.ok()) {
      return s;
    }
    absl::StatusOr<std::shared_ptr<const ModelState>> state = ModelState::Open(wide);
    if (!state.ok()) return state.status();
    *model_out = new warp_model{*std::move(state)};
    HandleRegistry::Get().Add(*model_out);
    return absl::OkStatus();
  });
}

void warp_convert_options_init(warp_convert_options* options) {
  if (options == nullptr) return;
  *options = warp_convert_options{};
  options->struct_size = sizeof(warp_convert_options);
  options->direct_io = 1;
  options->early_route_folds = 1;
}

warp_status warp_convert(const warp_convert_options* options) {
  return Call([&]() -> absl::Status {
    if (options == nullptr) return Null("options");
    EnsureLogging();
    warp_convert_options wide;
    if (absl::Status s = Widen(options, warp_convert_options_init, "options", wide); !s.ok()) {
      return s;
    }
    return warp::api::Convert(wide);
  });
}

warp_status warp_model_close(warp_model* model) {
  return Call([&]() -> absl::Status {
    if (model == nullptr) return absl::OkStatus();
    return HandleRegistry::Get().Close(model);
  });
}

warp_status warp_model_vocab_size(const warp_model* model, uint32_t* vocab_size_out) {
  return Call([&]() -> absl::Status {
    if (model == nullptr) return Null("model");
    if (vocab_size_out == nullptr) return Null("vocab_size_out");
    WARP_ASSIGN_OR_RETURN(auto state, HandleRegistry::Get().Model(model));
    *vocab_size_out = state->vocab_size();
    return absl::OkStatus();
  });
}

warp_status warp_tokenize(const warp_model* model, const char* text, size_t text_len,
                          int add_special_tokens, int32_t** ids_out, size_t* num_ids_out) {
  return Call([&]() -> absl::Status {
    if (model == nullptr) return Null("model");
    if (text == nullptr && text_len > 0) return Null("text");
    if (ids_out == nullptr) return Null("ids_out");
    if (num_ids_out == nullptr) return Null("num_ids_out");
    WARP_ASSIGN_OR_RETURN(auto state, HandleRegistry::Get().Model(model));
    absl::StatusOr<std::vector<int32_t>> ids =
        state->Tokenize({text, text_len}, add_special_tokens != 0);
    if (!ids.ok()) return ids.status();
    // One element at least, so that an empty text still gets a pointer to free.
    auto* copy = static_cast<int32_t*>(std::malloc(std::max<size_t>(ids->size(), 1) * 4));
    if (copy == nullptr) return absl::ResourceExhaustedError("out of memory");
    std::copy(ids->begin(), ids->end(), copy);
    *ids_out = copy;
    *num_ids_out = ids->size();
    return absl::OkStatus();
  });
}

warp_status warp_detokenize(const warp_model* model, const int32_t* ids, size_t num_ids,
                            int skip_special_tokens, char** text_out, size_t* text_len_out) {
  return Call([&]() -> absl::Status {
    if (model == nullptr) return Null("model");
    if (ids == nullptr && num_ids > 0) return Null("ids");
    if (text_out == nullptr) return Null("text_out");
    WARP_ASSIGN_OR_RETURN(auto state, HandleRegistry::Get().Model(model));
    absl::StatusOr<std::string> text =
        state->Detokenize({ids, num_ids}, skip_special_tokens != 0);
    if (!text.ok()) return text.status();
    return CopyOut(*text, text_out, text_len_out);
  });
}

warp_status warp_apply_chat_template(const warp_model* model, const char* messages_json,
                                     int add_generation_prompt, const char* tools_json,
                                     const char* template_kwargs_json, char** prompt_out,
                                     size_t* prompt_len_out) {
  return Call([&]() -> absl::Status {
    if (model == nullptr) return Null("model");
    if (messages_json == nullptr) return Null("messages_json");
    if (prompt_out == nullptr) return Null("prompt_out");
    WARP_ASSIGN_OR_RETURN(auto state, HandleRegistry::Get().Model(model));
    absl::StatusOr<std::string> prompt = state->ApplyChatTemplate(
        messages_json, add_generation_prompt != 0, tools_json, template_kwargs_json);
    if (!prompt.ok()) return prompt.status();
    return CopyOut(*prompt, prompt_out, prompt_len_out);
  });
}

warp_status warp_session_create(const warp_model* model, warp_session** session_out) {
  return Call([&]() -> absl::Status {
    if (model == nullptr) return Null("model");
    if (session_out == nullptr) return Null("session_out");
    *session_out = nullptr;
    WARP_ASSIGN_OR_RETURN(auto model_state, HandleRegistry::Get().Model(model));
    absl::StatusOr<std::unique_ptr<SessionState>> state =
        SessionState::Open(std::move(model_state));
    if (!state.ok()) return state.status();
    *session_out = new warp_session{.state = *std::move(state)};
    HandleRegistry::Get().Add(*session_out);
    return absl::OkStatus();
  });
}

warp_status warp_session_free(warp_session* session) {
  return Call([&]() -> absl::Status {
    if (session == nullptr) return absl::OkStatus();
    return HandleRegistry::Get().Free(session);
  });
}

warp_status warp_session_prefill(warp_session* session, const int32_t* ids, size_t num_ids) {
  return Call([&]() -> absl::Status {
    if (session == nullptr) return Null("session");
    if (ids == nullptr && num_ids > 0) return Null("ids");
    SessionCall call(session);
    WARP_RETURN_IF_ERROR(call.Begin());
    return session->state->Prefill({ids, num_ids});
  });
}

warp_status warp_session_reset(warp_session* session) {
  return Call([&]() -> absl::Status {
    if (session == nullptr) return Null("session");
    SessionCall call(session);
    WARP_RETURN_IF_ERROR(call.Begin());
    return session->state->Reset();
  });
}

void warp_generate_options_init(warp_generate_options* options) {
  if (options == nullptr) return;
  *options = warp_generate_options{};
  options->struct_size = sizeof(warp_generate_options);
  options->max_tokens = 32;
  options->top_p = 1.0f;
}

warp_status warp_session_generate(warp_session* session, const warp_generate_options* options,
                                  warp_token_callback callback, void* user_data,
                                  uint32_t* num_tokens_out, warp_stop_reason* stop_reason_out) {
  return Call([&]() -> absl::Status {
    if (session == nullptr) return Null("session");
    SessionCall call(session);
    WARP_RETURN_IF_ERROR(call.Begin());
    warp_generate_options wide;
    if (absl::Status s = Widen(options, warp_generate_options_init, "options", wide); !s.ok()) {
      return s;
    }
    if (!(wide.temperature >= 0 && wide.temperature <= 100)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options->temperature: ", wide.temperature, " is not in [0, 100]"));
    }
    if (!(wide.top_p > 0 && wide.top_p <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options->top_p: ", wide.top_p, " is not in (0, 1]"));
    }
    const warp::api::GenerateRequest request{.max_tokens = wide.max_tokens,
                                             .sampling = {.temperature = wide.temperature,
                                                          .top_k = wide.top_k,
                                                          .top_p = wide.top_p,
                                                          .seed = wide.seed},
                                             .ignore_eos = wide.ignore_eos != 0};
    auto sink = [&](int32_t token, const std::string& text) {
      return callback != nullptr && callback(user_data, token, text.c_str(), text.size()) != 0;
    };
    absl::StatusOr<warp::api::GenerateOutcome> outcome = session->state->Generate(request, sink);
    if (!outcome.ok()) return outcome.status();
    if (num_tokens_out != nullptr) *num_tokens_out = outcome->num_tokens;
    if (stop_reason_out != nullptr) *stop_reason_out = outcome->stop_reason;
    return absl::OkStatus();
  });
}

void warp_session_cancel(warp_session* session) {
  if (session != nullptr) HandleRegistry::Get().Cancel(session);
}

warp_status warp_session_stats(const warp_session* session, warp_stats* stats) {
  return Call([&]() -> absl::Status {
    if (session == nullptr) return Null("session");
    if (stats == nullptr) return Null("stats");
    SessionCall call(session);
    WARP_RETURN_IF_ERROR(call.Begin());
    if (stats->struct_size < sizeof(size_t)) {
      return absl::InvalidArgumentError(absl::StrCat("stats->struct_size is ", stats->struct_size,
                                                     ": set it to sizeof(warp_stats)"));
    }
    const warp_stats full = session->state->Stats();
    const size_t size = std::min(stats->struct_size, sizeof(warp_stats));
    std::memcpy(stats, &full, size);
    stats->struct_size = size;
    return absl::OkStatus();
  });
}

warp_status warp_session_stats_line(const warp_session* session, char** line_out) {
  return Call([&]() -> absl::Status {
    if (session == nullptr) return Null("session");
    if (line_out == nullptr) return Null("line_out");
    SessionCall call(session);
    WARP_RETURN_IF_ERROR(call.Begin());
    return CopyOut(session->state->StatsLine(), line_out, nullptr);
  });
}

}  // extern "C"
