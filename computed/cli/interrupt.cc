#include "computed/cli/interrupt.h"

#include <signal.h>

namespace warp::computed {
namespace {

struct sigaction previous_action;

void OnSigint(int) { InterruptScope::flag().store(true); }

}  // namespace

std::atomic<bool>& InterruptScope::flag() {
  static std::atomic<bool> interrupted{false};
  return interrupted;
}

InterruptScope::InterruptScope() {
  struct sigaction action = {};
  action.sa_handler = OnSigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  sigaction(SIGINT, &action, &previous_action);
}

InterruptScope::~InterruptScope() { sigaction(SIGINT, &previous_action, nullptr); }

}  // namespace warp::computed
