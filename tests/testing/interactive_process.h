#pragma once

// A built binary run with a pipe on its stdin and one on its stdout + stderr,
// for tests of interactive commands (computed chat): write a line, wait for
// output, send a signal, close stdin (Ctrl-D), collect the exit code.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace warp::testing {

// Thread-compatible.
class InteractiveProcess {
 public:
  // `binary` is a file name in $WARP_BIN_DIR, else the build's bin/.
  InteractiveProcess(const std::string& binary, const std::vector<std::string>& args);
  ~InteractiveProcess();  // kills the process if it still runs

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  void Write(const std::string& text);
  void CloseStdin();
  void Signal(int signal);
  // Reads until the output so far contains `needle`; false on timeout or EOF.
  bool WaitForOutput(const std::string& needle, std::chrono::seconds timeout);
  // Reads to EOF and reaps the process; returns its exit code (-1 if killed).
  // Until something follows `needle` in the output.
  bool WaitForOutputPast(const std::string& needle, std::chrono::seconds timeout);
  int Wait();
  const std::string& output() const { return output_; }

 private:
  bool ReadSome(int timeout_ms);  // false at EOF or on timeout

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int output_fd_ = -1;
  std::string output_;
};

}  // namespace warp::testing
