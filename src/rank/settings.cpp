#include "rank/settings.hpp"

#include <charconv>
#include <type_traits>

namespace pkb::rank {

namespace {

// A value as its flag takes it: the shortest text that reads back as the same number.
template <class T>
std::string text_of(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
}

}  // namespace

std::vector<std::string> to_flags(const EvalSettings& s) {
  const EvalSettings defaults;
  std::vector<std::string> given;  // each setting's default, in order
  for_each_setting(defaults, [&](const Setting&, const auto& v) { given.push_back(text_of(v)); });
  std::vector<std::string> out;
  size_t k = 0;
  for_each_setting(s, [&](const Setting& x, const auto& v) {
    std::string now = text_of(v);
    if (now == given[k++]) return;
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>) {
      out.push_back(x.flag);  // a bool that is on by default: its flag turns it off
    } else {
      out.push_back(x.flag);
      out.push_back(now);
    }
  });
  return out;
}

nlohmann::json to_json(const EvalSettings& s) {
  nlohmann::json j = nlohmann::json::object();
  for_each_setting(s, [&](const Setting& x, const auto& v) { j[x.key] = v; });
  return j;
}

EvalSettings settings_from_json(const nlohmann::json& j) {
  EvalSettings s;
  for_each_setting(s, [&](const Setting& x, auto& v) {
    if (j.contains(x.key)) j.at(x.key).get_to(v);
  });
  return s;
}

}  // namespace pkb::rank
