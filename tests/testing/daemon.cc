#include "tests/testing/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace warp::testing {

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const std::vector<std::string>& args,
                                                      const Options& options) {
  const char* bin_dir = std::getenv("WARP_BIN_DIR");
  const std::string binary = std::string(bin_dir ? bin_dir : WARP_TEST_BIN_DIR) + "/expertd";
  size_t expected = 0;
  for (const std::string& arg : args) expected += absl::StartsWith(arg, "--listen");
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    if (options.max_open_files > 0) {
      const rlimit limit{.rlim_cur = options.max_open_files, .rlim_max = options.max_open_files};
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(126);
    }
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    std::vector<std::string> argv_strings = {binary, "--log-level", "warn", "serve"};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  auto daemon = std::unique_ptr<Daemon>(new Daemon(pid, pipe_fds[0]));
  std::string pending;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (daemon->addresses_.size() < expected) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd fd{daemon->out_fd_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&fd, 1, static_cast<int>(left.count())) <= 0) {
      return absl::DeadlineExceededError("expertd did not report its addresses in 10 s");
    }
    char buf[512];
    const ssize_t n = ::read(daemon->out_fd_, buf, sizeof(buf));
    if (n <= 0) return absl::UnavailableError("expertd exited before listening");
    pending.append(buf, static_cast<size_t>(n));
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      if (absl::StartsWith(line, "listening ")) daemon->addresses_.push_back(line.substr(10));
    }
  }
  return daemon;
}

int Daemon::Stop(int signal) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signal);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Daemon::~Daemon() {
  Stop(SIGTERM);
  ::close(out_fd_);
}

}  // namespace warp::testing
