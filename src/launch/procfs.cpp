#include "launch/procfs.hpp"

#include <fcntl.h>
#include <unistd.h>

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

}  // namespace pkb::launch
