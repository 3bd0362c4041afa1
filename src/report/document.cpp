#include "report/document.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <sstream>

namespace pkb::report::doc {

namespace fs = std::filesystem;

namespace {

std::string md_cell(std::string cell) {
  for (size_t at = 0; (at = cell.find('|', at)) != std::string::npos; at += 2) cell.replace(at, 1, "\\|");
  return cell;
}

// A link's target as a relative URL from the page's folder (percent-encoding what a
// path may hold that a URL may not).
std::string href_for(const std::string& abs, const std::string& page_dir) {
  std::string rel = abs;
  if (!page_dir.empty()) {
    fs::path r = fs::path(abs).lexically_relative(fs::absolute(page_dir).lexically_normal());
    if (!r.empty()) rel = r.string();
  }
  return io::percent_encode(rel);
}

// The x of a speedup on the chart's log axis over [lo, hi].
struct LogAxis {
  double lo = 0.8, hi = 1.25;
  double x(double v) const {
    return kLabelWidth + kBarArea * (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
  }
};

}  // namespace

std::string percent(std::optional<double> fraction) { return fraction ? format("%.1f%%", 100 * *fraction) : kNone; }
std::string percent(int part, int whole) { return whole ? percent(double(part) / whole) : kNone; }
std::string times(std::optional<double> x) { return x ? format("%.2fx", *x) : kNone; }
std::string threshold(double p) { return format("%g", p); }
std::string us(std::optional<double> v) { return v ? format("%.1f", *v) : std::string(kNone); }
std::string rate(std::optional<double> v) {
  if (!v) return kNone;
  return format(*v >= 100 ? "%.0f" : *v >= 10 ? "%.1f" : "%.2f", *v);
}

std::string joined(const std::set<std::string>& values) {
  std::string out;
  for (auto& v : values) out += (out.empty() ? "" : ", ") + v;
  return out.empty() ? kNone : out;
}

std::string shortened(std::string text, size_t most) {
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return text.size() > most ? text.substr(0, most - 3) + "..." : text;
}

std::string short_path(const std::string& path, size_t most) {
  size_t last = path.rfind('/');
  if (path.size() <= most || last == std::string::npos) return path;
  return ".../" + path.substr(last + 1);
}

std::string as_text(const Table& t) {
  std::vector<size_t> w(t.head.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = t.head[i].size();
  for (auto& row : t.rows)
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::max(w[i], row[i].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t i = 0; i < w.size(); ++i) {
      std::string pad(w[i] - cells[i].size(), ' ');
      l += (i ? "  " : "") + (i < t.left ? cells[i] + pad : pad + cells[i]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(t.head);
  for (auto& row : t.rows) line(row);
  return out;
}

std::string as_markdown(const Table& t) {
  std::string out = "|";
  for (auto& h : t.head) out += " " + h + " |";
  out += "\n|";
  for (size_t i = 0; i < t.head.size(); ++i) out += i < t.left ? " --- |" : " ---: |";
  out += "\n";
  for (auto& row : t.rows) {
    out += "|";
    for (auto& c : row) out += " " + md_cell(c) + " |";
    out += "\n";
  }
  return out;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string as_html(const Table& t, const std::string& page_dir) {
  std::string out = "<div class=\"scroll\"><table>\n<tr>";
  for (size_t i = 0; i < t.head.size(); ++i) {
    std::string cls = std::string(i < t.left ? "" : "n") + (t.wrap.count(i) ? (i < t.left ? "wrap" : " wrap") : "");
    out += "<th" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + escape(t.head[i]) + "</th>";
  }
  out += "</tr>\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    out += "<tr>";
    for (size_t i = 0; i < t.rows[r].size(); ++i) {
      const std::string& text = t.rows[r][i];
      bool path = t.paths.count(i) && short_path(text) != text;
      std::string cell = escape(path ? short_path(text) : text);
      auto link = t.links.find({r, i});
      if (link != t.links.end()) cell = "<a href=\"" + href_for(link->second, page_dir) + "\">" + cell + "</a>";
      std::string cls = i < t.left ? "" : "n";
      if (t.wrap.count(i)) cls += cls.empty() ? "wrap" : " wrap";
      if (t.messages.count(i)) cls += cls.empty() ? "msg" : " msg";
      out += "<td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + (path ? " title=\"" + escape(text) + "\"" : "") +
             ">" + cell + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table></div>\n";
}

std::string fields_text(const std::vector<std::pair<std::string, Lines>>& fields) {
  std::string out;
  for (auto& [k, v] : fields)
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "  " + std::string(k.size() + 2, ' ') : "  " + k + ": ") + v[i] + "\n";
  return out;
}

std::string section_text(const Section& s) {
  std::string out = "\n" + s.title + "\n" + fields_text(s.fields);
  if (!s.intro.empty()) out += "  " + s.intro + "\n";
  if (s.table) out += as_text(*s.table);
  for (auto& item : s.items) out += "  ! " + item + "\n";
  return out;
}

std::string fields_markdown(const std::vector<std::pair<std::string, Lines>>& fields) {
  std::string out;
  for (auto& [k, v] : fields) {
    if (v.size() == 1) {
      out += "- **" + k + "**: " + v[0] + "\n";
      continue;
    }
    out += "- **" + k + "**:\n";
    for (auto& line : v) out += "  - " + line + "\n";
  }
  return out;
}

std::string section_markdown(const Section& s) {
  std::string out = "\n" + std::string(s.level, '#') + " " + s.title + "\n\n";
  out += fields_markdown(s.fields);
  for (auto& item : s.items) out += "- " + item + "\n";
  if (!s.fields.empty() || !s.items.empty()) out += "\n";
  if (!s.intro.empty()) out += s.intro + "\n\n";
  if (s.table) out += as_markdown(*s.table);
  if (!s.note.empty()) out += "\n" + s.note + "\n";
  return out;
}

std::string section_html(const Section& s, const std::string& page_dir, const std::string& extra) {
  std::string h = "h" + std::to_string(s.level);
  std::string out = "<section" + (s.css.empty() ? "" : " class=\"" + s.css + "\"") + ">\n<" + h + ">" +
                    escape(s.title) + "</" + h + ">\n";
  if (!s.fields.empty()) {
    out += "<dl>\n";
    for (auto& [k, v] : s.fields) {
      out += "<dt>" + escape(k) + "</dt><dd>";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? "<br>" : "") + escape(v[i]);
      out += "</dd>\n";
    }
    out += "</dl>\n";
  }
  if (!s.items.empty()) {
    out += "<ul>\n";
    for (auto& item : s.items) out += "<li>" + escape(item) + "</li>\n";
    out += "</ul>\n";
  }
  if (!s.intro.empty()) out += "<p>" + escape(s.intro) + "</p>\n";
  out += extra;
  if (s.table) out += as_html(*s.table, page_dir);
  if (!s.note.empty()) out += "<p class=\"legend\">" + escape(s.note) + "</p>\n";
  return out + "</section>\n";
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

std::string fit(const std::string& text, int px) {
  size_t most = static_cast<size_t>(px / kCharPx);
  return text.size() <= most ? text : text.substr(0, most - 3) + "...";
}

std::string log_chart(const std::vector<Bar>& bars, const std::string& aria) {
  LogAxis axis;
  double lo = 1, hi = 1;
  for (auto& b : bars) {
    lo = std::min({lo, b.value, b.low.value_or(b.value)});
    hi = std::max({hi, b.value, b.high.value_or(b.value)});
  }
  axis.lo = lo / 1.3;
  axis.hi = hi * 1.3;
  int height = static_cast<int>(bars.size()) * kRow + kAxis;
  int bottom = static_cast<int>(bars.size()) * kRow;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLabelWidth + kBarArea + kRightWidth << "\" height=\""
    << height << "\" role=\"img\" aria-label=\"" << escape(aria) << "\">\n";
  // Grid lines at 1-2-5 steps under the bars; fewer (powers of ten, then every other one)
  // until their labels stand 60 px apart.
  std::vector<double> ticks;
  for (int e = -9; e <= 9; ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      double v = m * std::pow(10.0, e);
      if (v >= axis.lo && v <= axis.hi) ticks.push_back(v);
    }
  auto crowded = [&] {
    for (size_t i = 1; i < ticks.size(); ++i)
      if (axis.x(ticks[i]) - axis.x(ticks[i - 1]) < 60) return true;
    return false;
  };
  for (int step = 0; crowded() && step < 8; ++step) {
    std::vector<double> kept;
    for (double v : ticks) {
      double l = std::log10(v);
      bool power = std::abs(l - std::round(l)) < 1e-9;
      if (step == 0 ? power : (v == 1.0 || static_cast<long>(std::llround(l)) % (1L << step) == 0)) kept.push_back(v);
    }
    if (std::find(kept.begin(), kept.end(), 1.0) == kept.end() && 1.0 >= axis.lo && 1.0 <= axis.hi) kept.push_back(1.0);
    std::sort(kept.begin(), kept.end());
    ticks = kept;
  }
  for (double v : ticks) {
    double x = axis.x(v);
    if (v != 1.0)
      o << "<line x1=\"" << x << "\" y1=\"0\" x2=\"" << x << "\" y2=\"" << bottom << "\" stroke=\"#e5e7eb\"/>\n";
    o << "<text x=\"" << x << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\" class=\"axis\">" << format("%gx", v)
      << "</text>\n";
  }
  double one = axis.x(1.0);
  o << "<line x1=\"" << one << "\" y1=\"0\" x2=\"" << one << "\" y2=\"" << bottom + 4
    << "\" stroke=\"#6b7280\" stroke-dasharray=\"4 3\"/>\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    int y = static_cast<int>(i) * kRow + 2;
    double x = axis.x(b.value);
    bool faster = b.value >= 1;
    o << "<text x=\"" << kLabelWidth - 10 << "\" y=\"" << y + 13 << "\" text-anchor=\"end\"><title>"
      << escape(b.label_title.empty() ? b.label : b.label_title) << "</title>" << escape(fit(b.label, kLabelWidth - 14))
      << "</text>\n";
    double width = std::max(4.0, std::abs(x - one));  // 1.00x stays visible
    double x0 = faster ? one : one - width;
    o << "<rect x=\"" << x0 << "\" y=\"" << y << "\" width=\"" << width << "\" height=\"" << kBar
      << "\" fill=\"" << (faster ? colour::kFaster : colour::kSlower) << "\"/>\n";
    if (b.low && b.high) {
      double s0 = axis.x(*b.low), s1 = axis.x(*b.high);
      o << "<rect x=\"" << s0 << "\" y=\"" << y + kBar + 2 << "\" width=\"" << std::max(1.0, s1 - s0)
        << "\" height=\"" << kWhisker << "\" fill=\"" << colour::kSpread << "\"/>\n";
    }
    o << "<text x=\"" << kLabelWidth + kBarArea + 12 << "\" y=\"" << y + 13 << "\"><title>"
      << escape(b.right_title.empty() ? b.right : b.right_title) << "</title>" << escape(fit(b.right, kRightWidth - 16))
      << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string style() {
  return std::string(R"(body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:20px;color:#1f2937;font-size:14px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:26px 0 8px}h3{font-size:15px;margin:16px 0 6px}
.header{background:)") + colour::kHeader + R"(;padding:12px 18px;border-radius:4px}
.header dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:0}.header dt{font-weight:bold}.header dd{margin:0}
.warnings ul{background:#fef3c7;padding:8px 8px 8px 28px;border-radius:4px;margin:0}.warnings li{margin:2px 0}
.legend{color:#4b5563;max-width:1180px}svg{display:block}svg text{font-size:12px;fill:#374151}svg .axis{fill:#6b7280}
svg rect{shape-rendering:crispEdges}a{color:#1e40af}
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:4px 0;font-size:12px}
th,td{padding:3px 6px;border-bottom:1px solid #e5e7eb;text-align:left;white-space:nowrap}
.wrap{white-space:normal}th.wrap{overflow-wrap:anywhere;min-width:60px}
td.msg{white-space:normal;min-width:260px;max-width:460px;overflow-wrap:anywhere}
th{background:#f3f4f6}.n{text-align:right;font-variant-numeric:tabular-nums}
.swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px})";
}

}  // namespace pkb::report::doc
