#include "launch/procfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace pkb::launch {

std::string proc_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fd);
  return n < 0 ? "" : text;
}

std::string stat_fields(const std::string& stat_path) {
  std::string stat = proc_file(stat_path);
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? "" : stat.substr(close + 2);
}

std::map<pid_t, ThreadTimes> thread_times(pid_t pid) {
  std::map<pid_t, ThreadTimes> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long tid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end) continue;  // "." and ".."
    std::string text = proc_file(dir + "/" + e->d_name + "/schedstat");  // "run wait slices"
    const char* s = text.c_str();
    ThreadTimes t;
    t.run_ns = std::strtoll(s, &end, 10);
    if (end == s) continue;  // the thread ended meanwhile
    t.wait_ns = std::strtoll(end, nullptr, 10);
    out[static_cast<pid_t>(tid)] = t;
  }
  closedir(d);
  return out;
}

}  // namespace pkb::launch
