// The C API against a careless caller (the outside probe of issue 44,
// finding 10): handles closed or freed twice, a session freed while another
// thread generates, an expert store that cannot be reached, empty lists.
// Each was an abort, a segfault, a 30 s wait or a silent default before.

#include <atomic>
#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "tests/api/api_fixture.h"

namespace warp::api {
namespace {

using ::testing::HasSubstr;

const char* kPrompt = "And the LORD said unto Moses,";

TEST(ApiHandleTest, AModelClosedTwiceIsAnInvalidHandleNotAnAbort) {
  warp_model* model = nullptr;
  const warp_model_options options = DemoOptions();
  ASSERT_EQ(warp_model_open(&options, &model), WARP_OK) << warp_last_error();
  EXPECT_EQ(warp_model_close(model), WARP_OK);
  EXPECT_EQ(warp_model_close(model), WARP_INVALID_HANDLE);
  EXPECT_THAT(warp_last_error(), HasSubstr("model is not an open handle"));
  uint32_t vocab = 0;
  EXPECT_EQ(warp_model_vocab_size(model, &vocab), WARP_INVALID_HANDLE);
  int32_t* ids = nullptr;
  size_t num_ids = 0;
  EXPECT_EQ(warp_tokenize(model, "a", 1, 0, &ids, &num_ids), WARP_INVALID_HANDLE);
  warp_session* session = nullptr;
  EXPECT_EQ(warp_session_create(model, &session), WARP_INVALID_HANDLE);
  EXPECT_EQ(session, nullptr);
  EXPECT_EQ(warp_model_close(nullptr), WARP_OK);
  EXPECT_STREQ(warp_status_name(WARP_INVALID_HANDLE), "WARP_INVALID_HANDLE");
}

TEST(ApiHandleTest, ASessionFreedTwiceOrNeverOpenedIsAnInvalidHandle) {
  ModelPtr model = OpenModel(DemoOptions());
  warp_session* session = nullptr;
  ASSERT_EQ(warp_session_create(model.get(), &session), WARP_OK) << warp_last_error();
  EXPECT_EQ(warp_session_free(session), WARP_OK);
  EXPECT_EQ(warp_session_free(session), WARP_INVALID_HANDLE);
  EXPECT_THAT(warp_last_error(), HasSubstr("session is not an open handle"));
  const int32_t ids[] = {295, 258};
  EXPECT_EQ(warp_session_prefill(session, ids, 2), WARP_INVALID_HANDLE);
  warp_session_cancel(session);  // ignored
  // A model's handle is not a session's.
  auto* not_a_session = reinterpret_cast<warp_session*>(model.get());
  EXPECT_EQ(warp_session_free(not_a_session), WARP_INVALID_HANDLE);
  EXPECT_EQ(warp_session_reset(not_a_session), WARP_INVALID_HANDLE);
  EXPECT_EQ(warp_session_free(nullptr), WARP_OK);
  // The model is untouched by all of that.
  SessionPtr fresh = OpenSession(model.get());
  EXPECT_EQ(warp_session_prefill(fresh.get(), ids, 2), WARP_OK) << warp_last_error();
}

// Another thread frees (and prefills) the session while the first generates:
// refused, not a segfault; once the generation returns, the free goes through.
TEST(ApiHandleTest, ASessionInACallIsNotFreedOrEnteredFromAnotherThread) {
  ModelPtr model = OpenModel(DemoOptions());
  const std::vector<int32_t> prompt = Tokenize(model.get(), kPrompt, true);
  warp_session* session = nullptr;
  ASSERT_EQ(warp_session_create(model.get(), &session), WARP_OK) << warp_last_error();
  ASSERT_EQ(warp_session_prefill(session, prompt.data(), prompt.size()), WARP_OK);
  std::atomic<bool> in_callback{false}, tried{false};
  warp_status free_status = WARP_OK, prefill_status = WARP_OK;
  std::string free_error;
  std::thread other([&] {
    while (!in_callback.load()) std::this_thread::yield();
    free_status = warp_session_free(session);
    free_error = warp_last_error();
    prefill_status = warp_session_prefill(session, prompt.data(), 1);
    warp_session_cancel(session);
    tried.store(true);
  });
  struct Waiter {
    std::atomic<bool>* in_callback;
    std::atomic<bool>* tried;
    warp_session* session;
    warp_status own_free = WARP_OK;
  } waiter{&in_callback, &tried, session};
  auto callback = [](void* user_data, int32_t token, const char*, size_t) -> int {
    auto& w = *static_cast<Waiter*>(user_data);
    if (token == WARP_NO_TOKEN || w.in_callback->load()) return 0;
    w.own_free = warp_session_free(w.session);  // this thread's own call is in progress too
    w.in_callback->store(true);
    while (!w.tried->load()) std::this_thread::yield();
    return 0;
  };
  warp_generate_options options;
  warp_generate_options_init(&options);
  options.max_tokens = 16;
  options.ignore_eos = 1;
  warp_stop_reason reason = WARP_STOP_LENGTH;
  EXPECT_EQ(warp_session_generate(session, &options, callback, &waiter, nullptr, &reason),
            WARP_OK)
      << warp_last_error();
  other.join();
  EXPECT_EQ(reason, WARP_STOP_CANCELLED);
  EXPECT_EQ(waiter.own_free, WARP_FAILED_PRECONDITION);
  EXPECT_EQ(free_status, WARP_FAILED_PRECONDITION);
  EXPECT_THAT(free_error, HasSubstr("the session is in a call"));
  EXPECT_EQ(prefill_status, WARP_FAILED_PRECONDITION);
  EXPECT_EQ(warp_session_free(session), WARP_OK) << warp_last_error();
}

TEST(ApiHandleTest, AnUnreachableStoreIsGivenUpOnAfterTheOptionsTimeout) {
  warp_model_options options = DemoOptions();
  const std::string address = "unix:" + (ScratchDir() / "no-daemon.sock").string();
  options.stores = address.c_str();
  options.store_timeout_ms = 300;
  ModelPtr model = OpenModel(options);
  ASSERT_NE(model, nullptr);
  const auto start = std::chrono::steady_clock::now();
  warp_session* session = nullptr;
  EXPECT_EQ(warp_session_create(model.get(), &session), WARP_UNAVAILABLE);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_THAT(warp_last_error(), HasSubstr(address));
  EXPECT_EQ(session, nullptr);
  EXPECT_LT(seconds, 5.0);  // the default waits 30 s
}

TEST(ApiHandleTest, AnEmptyStoreOrBankListIsRefusedNotTakenAsNone) {
  warp_model* model = nullptr;
  warp_model_options options = DemoOptions();
  options.stores = "";
  EXPECT_EQ(warp_model_open(&options, &model), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options.stores: \"\" is empty (NULL for none)"));
  options.stores = "unix:/run/a.sock,,unix:/run/b.sock";
  EXPECT_EQ(warp_model_open(&options, &model), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("has an empty entry (2 of 3)"));
  options = DemoOptions();
  options.bank_dirs = " ";
  EXPECT_EQ(warp_model_open(&options, &model), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options.bank_dirs: \" \" is empty"));
  EXPECT_EQ(model, nullptr);
}

}  // namespace
}  // namespace warp::api
