#include "sweep/results_file.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pkb::sweep {

namespace {

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

ResultsFile::ResultsFile(const std::string& path) : path_(path) {
  // Close-on-exec: an evaluation still running must not inherit (and keep) the lock.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error("cannot open", path);
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    throw std::runtime_error(path + " is being written by another pkb sweep; wait for it or pick another --out");
  }
  std::string text;
  char buf[1 << 16];
  for (ssize_t n; (n = ::pread(fd_, buf, sizeof buf, static_cast<off_t>(text.size()))) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      throw io_error("cannot read", path);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  // Every line is written whole with its newline; anything after the last newline is the
  // remains of a write that a kill cut short, and its evaluation runs again.
  size_t end = text.rfind('\n');
  end = end == std::string::npos ? 0 : end + 1;
  if (end < text.size()) {
    torn_bytes_ = text.size() - end;
    if (ftruncate(fd_, static_cast<off_t>(end)) != 0) throw io_error("cannot cut the torn last line of", path);
    text.resize(end);
  }
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl - at);
    at = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ++bad_lines_;
      continue;
    }
    remember(j);
  }
}

ResultsFile::~ResultsFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ResultsFile::append(const nlohmann::json& line) {
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // One write of the whole line (O_APPEND): a kill leaves either nothing or a torn tail
  // that the next open cuts off, never half a line in the middle.
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw io_error("cannot write to", path_);
    done += static_cast<size_t>(n);
  }
  if (fdatasync(fd_) != 0) throw io_error("cannot flush", path_);
  remember(line);
}

void ResultsFile::remember(const nlohmann::json& line) {
  ++lines_;
  const nlohmann::json none;
  const nlohmann::json& sweep = line.contains("sweep") ? line["sweep"] : none;
  if (sweep.is_object() && sweep.value("task", none).is_string()) done_.insert(sweep["task"].get<std::string>());
}

}  // namespace pkb::sweep
