#include "tests/testing/interactive_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace warp::testing {

InteractiveProcess::InteractiveProcess(const std::string& binary,
                                       const std::vector<std::string>& args) {
  const char* bin_dir = std::getenv("WARP_BIN_DIR");
  const std::string path = std::string(bin_dir ? bin_dir : WARP_TEST_BIN_DIR) + "/" + binary;
  int in[2], out[2];
  if (::pipe(in) != 0) return;
  if (::pipe(out) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(in[1]);
    ::close(out[0]);
    std::vector<char*> argv = {const_cast<char*>(path.c_str())};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(path.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  stdin_fd_ = in[1];
  output_fd_ = out[0];
}

InteractiveProcess::~InteractiveProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  CloseStdin();
  if (output_fd_ >= 0) ::close(output_fd_);
}

void InteractiveProcess::Write(const std::string& text) {
  if (stdin_fd_ >= 0) (void)!::write(stdin_fd_, text.data(), text.size());
}

void InteractiveProcess::CloseStdin() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
}

void InteractiveProcess::Signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

bool InteractiveProcess::ReadSome(int timeout_ms) {
  pollfd fd{.fd = output_fd_, .events = POLLIN, .revents = 0};
  if (::poll(&fd, 1, timeout_ms) <= 0) return false;
  char buffer[4096];
  const ssize_t n = ::read(output_fd_, buffer, sizeof(buffer));
  if (n <= 0) return false;
  output_.append(buffer, static_cast<size_t>(n));
  return true;
}

bool InteractiveProcess::WaitForOutput(const std::string& needle, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (output_.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !ReadSome(static_cast<int>(left.count()))) {
      return output_.find(needle) != std::string::npos;
    }
  }
  return true;
}

bool InteractiveProcess::WaitForOutputPast(const std::string& needle,
                                           std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto past = [&] {
    const size_t at = output_.find(needle);
    return at != std::string::npos && output_.size() > at + needle.size();
  };
  while (!past()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !ReadSome(static_cast<int>(left.count()))) return past();
  }
  return true;
}

int InteractiveProcess::Wait() {
  while (ReadSome(60'000)) {
  }
  int status = 0;
  if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) {
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return -1;
}

}  // namespace warp::testing
