// pkb's one handling of SIGINT and SIGTERM, for whichever command is running: while an
// Interrupts object lives, the first such signal is recorded (requested()) and wakes
// whoever polls fd(); a second one ends the process at once (the default action), for a
// user who means "now". Or, for commands whose finished work is already on disk (sweep),
// the first signal prints a line and exits 130 at once. The old handlers come back after.
#pragma once

#include <atomic>
#include <csignal>
#include <string>

namespace pkb::launch {

class Interrupts {
 public:
  enum class Mode { record, exit_now };
  // `wake_on_child_exit`: SIGCHLD wakes fd() too (run_group's loop reaps at once).
  // `exit_message` (exit_now) is printed on stderr before exiting.
  explicit Interrupts(Mode mode = Mode::record, bool wake_on_child_exit = false, std::string exit_message = "");
  ~Interrupts();
  Interrupts(const Interrupts&) = delete;
  Interrupts& operator=(const Interrupts&) = delete;

  static bool requested() { return flag(); }  // a SIGINT or SIGTERM came while one lived
  static const std::atomic<bool>& flag();     // the same, for code that watches it
  static void request();                      // raise it from code (a fatal error: stop too)
  int fd() const;           // readable after any handled signal
  void drain() const;       // empties fd()

 private:
  struct sigaction old_int_{}, old_term_{}, old_chld_{};
  bool chld_ = false;
};

}  // namespace pkb::launch
