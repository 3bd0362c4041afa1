#include "launch/signals.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

namespace pkb::launch {

namespace {

int g_pipe[2] = {-1, -1};
std::atomic<bool> g_requested{false};
std::atomic<int> g_mode{0};
char g_message[512];
size_t g_message_len = 0;
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "set from a signal handler");

extern "C" void on_signal(int sig) {
  int saved = errno;
  if (sig == SIGINT || sig == SIGTERM) {
    if (g_mode == int(Interrupts::Mode::exit_now)) {
      [[maybe_unused]] ssize_t n = write(2, g_message, g_message_len);
      _exit(130);
    }
    if (g_requested.exchange(true)) {  // the second: now
      signal(sig, SIG_DFL);
      raise(sig);
    }
  }
  char c = static_cast<char>(sig);
  [[maybe_unused]] ssize_t n = write(g_pipe[1], &c, 1);
  errno = saved;
}

}  // namespace

Interrupts::Interrupts(Mode mode, bool wake_on_child_exit, std::string exit_message) : chld_(wake_on_child_exit) {
  if (g_pipe[0] < 0 && pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  drain();
  g_requested = false;
  g_mode = int(mode);
  g_message_len = std::min(exit_message.size(), sizeof g_message);
  std::memcpy(g_message, exit_message.data(), g_message_len);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  if (chld_) {
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, &old_chld_);
  }
}

Interrupts::~Interrupts() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  if (chld_) sigaction(SIGCHLD, &old_chld_, nullptr);
}

const std::atomic<bool>& Interrupts::flag() { return g_requested; }

void Interrupts::request() { g_requested = true; }

int Interrupts::fd() const { return g_pipe[0]; }

void Interrupts::drain() const {
  char buf[64];
  while (read(g_pipe[0], buf, sizeof buf) > 0) {
  }
}

}  // namespace pkb::launch
