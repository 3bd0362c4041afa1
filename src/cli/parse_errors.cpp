// What pkb says to a command line CLI11 rejected: one line naming the fix.
#include "cli/common.hpp"

#include <cctype>
#include <sstream>

#include "eval/verdict.hpp"
#include "io/text.hpp"

namespace pkb::cli {

namespace {

// The names a command takes, long (--name) and short (-n) apart: its flags and its parents'.
struct FlagNames {
  std::vector<std::string> longs, shorts;
};

FlagNames flag_names(const CLI::App* cmd) {
  FlagNames names;
  for (const CLI::App* at = cmd; at; at = at->get_parent())  // a command also takes its parents' flags
    for (const CLI::Option* opt : at->get_options()) {
      if (opt->get_group().empty()) continue;  // hidden spellings are never suggested
      for (auto& l : opt->get_lnames()) names.longs.push_back(l);
      for (auto& s : opt->get_snames()) names.shorts.push_back(s);
    }
  return names;
}

// The flag a mistyped one most likely meant, "" when none is near. A long flag is compared
// with long flags only (never "-h" for "--m"): by edit distance, else the shortest one it
// begins ("--m": --model). A one-letter flag only matches the same letter in the other case.
std::string nearest_flag(const std::string& typed, const FlagNames& names) {
  std::string bare = typed.substr(typed.find_first_not_of('-'));
  if (bare.empty()) return "";
  if (typed.rfind("--", 0) != 0 && bare.size() == 1) {
    for (auto& s : names.shorts)
      if (s.size() == 1 && std::tolower(s[0]) == std::tolower(bare[0])) return "-" + s;
    return "";
  }
  std::string near = io::nearest(bare, names.longs);
  if (!near.empty()) return "--" + near;
  std::string best;
  for (auto& l : names.longs)
    if (l.rfind(bare, 0) == 0 && (best.empty() || l.size() < best.size())) best = l;
  return best.empty() ? "" : "--" + best;
}

std::string command_path(const CLI::App* cmd) {
  std::string path;
  for (const CLI::App* at = cmd; at; at = at->get_parent())
    path = (at->get_parent() ? at->get_name() : std::string("pkb")) + (path.empty() ? "" : " " + path);
  return path;
}

bool has_command(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->check_name(word)) return true;
  return false;
}

// The first word of argv that is not a global flag (or its value): the command's name.
std::string command_word(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.empty() || a[0] != '-') return a;
    std::string name = a.substr(0, a.find('='));
    if (a.find('=') != std::string::npos) continue;
    for (const CLI::Option* opt : app.get_options())
      if (opt->check_name(name) && opt->get_type_size() != 0) ++i;  // skips the flag's value
  }
  return "";
}

// "0.000000" -> "0", "2.500000" -> "2.5".
std::string trimmed_number(std::string n) {
  if (n.find('.') == std::string::npos) return n;
  while (!n.empty() && n.back() == '0') n.pop_back();
  if (!n.empty() && n.back() == '.') n.pop_back();
  return n;
}

// CLI11's "--timeout: Value 0 not in range 0.000000 to 1797693134862315708145...": the
// range in words ("above 0", "0 or more", "1 to 100000"), or "" for any other message.
std::string range_in_words(const CLI::App* cmd, const std::string& what) {
  size_t colon = what.find(": Value "), range = what.find(" not in range "), to = what.rfind(" to ");
  if (colon == std::string::npos || range == std::string::npos || to == std::string::npos || to < range) return "";
  std::string flag = what.substr(0, colon);
  std::string value = what.substr(colon + 8, range - colon - 8);
  std::string lo = trimmed_number(what.substr(range + 14, to - range - 14)), hi = trimmed_number(what.substr(to + 4));
  std::string kind;
  if (const CLI::Option* opt = cmd->get_option_no_throw(flag)) {
    try {
      kind = const_cast<CLI::Option*>(opt)->get_validator()->get_description();
    } catch (const std::exception&) {
    }
  }
  std::string words = kind == "POSITIVE" ? "a number above 0"
                      : kind == "NONNEGATIVE" || hi.size() > 20 ? "a number of " + lo + " or more"
                                                                : lo + " to " + hi;
  return flag + " takes " + words + ", not " + value;
}

// The first word of argv that looks like a flag (not a number) that neither `cmd` nor its
// parents take, "" when every one is known: CLI11 may complain of something else first (a
// required flag missing) when the real mistake is a flag it did not recognise.
std::string first_unknown_flag(const CLI::App* cmd, int argc, char** argv) {
  auto find = [&](const std::string& name) -> const CLI::Option* {
    for (const CLI::App* at = cmd; at; at = at->get_parent())
      if (const CLI::Option* o = at->get_option_no_throw(name)) return o;
    return nullptr;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.') continue;
    std::string name = a.substr(0, a.find('='));
    if (a.rfind("--", 0) != 0 && name.size() > 2 && a.find('=') == std::string::npos) {
      // -w4 or -abc: a short flag with its value, or several; CLI11 judges those.
      if (find(name.substr(0, 2))) continue;
    }
    const CLI::Option* o = find(name);
    if (!o) return name;
    if (a.find('=') == std::string::npos && o->get_type_size() != 0) ++i;  // its value
  }
  return "";
}

// The original ParallelKernelBench's flags that pkb spells another way, and the pkb way.
struct OriginalFlag {
  const char* flag;
  const char* commands;  // the pkb commands the answer is for (space-separated), "*" for any
  const char* answer;
};

const OriginalFlag kOriginalFlags[] = {
    {"--measure-perf", "*",
     "pkb always times both sides after the correctness trials (--no-timing turns timing off); drop --measure-perf"},
    {"--mode", "*",
     "pkb has a command per mode: `pkb eval` checks and times a candidate against the reference (--mode eval), "
     "`pkb dryrun` runs the reference alone (--mode dryrun)"},
    {"--download", "*",
     "pkb eval --save-outputs DIR writes the failing trial's (else trial 0's) rank_<r>.pt files; pkb dryrun "
     "--save-outputs DIR writes the reference's"},
    {"--solutions-dir", "*",
     "pkb eval -s takes the candidate file itself (-s solutions_cuda/coll_allreduce.cu); `pkb sweep --solutions DIR` "
     "evaluates a folder of them"},
    {"--m", "eval dryrun validate sweep",
     "problems name their own sizes: give them with --size M=4096,N=1024 (pkb show PROBLEM lists a problem's)"},
    {"--n", "eval dryrun validate sweep",
     "problems name their own sizes: give them with --size M=4096,N=1024 (pkb show PROBLEM lists a problem's); "
     "pkb's -n is --trials"},
    {"--atol", "eval dryrun sweep",
     "tolerances come from each problem's spec (pkb show PROBLEM); `pkb compare --atol --rtol` compares saved "
     "outputs with your own"},
    {"--rtol", "eval dryrun sweep",
     "tolerances come from each problem's spec (pkb show PROBLEM); `pkb compare --atol --rtol` compares saved "
     "outputs with your own"},
    {"--profile", "*", "pkb records no profiler traces; run pkb under nsys or ncu for those"},
    {"--logs-dir", "*", "pkb eval --json FILE writes the result and --save-outputs DIR the tensors"},
    {"--print-prompt", "*", "`pkb prompt -p PROBLEM --backend cuda` prints the prompt"},
    {"--paths-to-prompts-template", "*", "prompt templates are --prompts FILE (default prompts.toml)"},
    {"--step-limit", "agent", "pkb agent's turns are --turns N"},
    {"--remote-eval-command", "agent", "pkb agent evaluates every answer itself, as pkb eval does"},
    {"--remote-dryrun-command", "agent", "pkb agent evaluates every answer itself, as pkb eval does"},
};

// Flags of the original that a command line given to no command holds: pkb wants a
// command first ("pkb eval ..."), which --mode names.
std::string mode_answer(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value = a.rfind("--mode=", 0) == 0 ? a.substr(7) : a == "--mode" && i + 1 < argc ? argv[i + 1] : "";
    if (value == "eval" || value == "dryrun")
      return "pkb takes the mode as its command: `pkb " + value + " -p PROBLEM" +
             (value == "eval" ? " -s FILE -w N ...`" : " -w N ...`") + " (docs/migrating.md maps the original's flags)";
  }
  return "";
}

}  // namespace

std::string original_flag_answer(const std::string& command, const std::string& flag) {
  for (auto& f : kOriginalFlags) {
    if (flag != f.flag) continue;
    std::string cmds = std::string(" ") + f.commands + " ";
    if (cmds == " * " || cmds.find(" " + command + " ") != std::string::npos) return f.answer;
  }
  return "";
}

int explain_parse_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (e.get_exit_code() == 0) return app.exit(e);
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  if (cmd == &app) {
    std::string mode = mode_answer(argc, argv);
    if (!mode.empty()) {
      fprintf(stderr, "pkb: error: %s\n", mode.c_str());
      return eval::kUsage;
    }
    std::string word = command_word(app, argc, argv);
    if (!word.empty() && !has_command(app, word)) {
      std::vector<std::string> names;
      std::string list;
      for (const CLI::App* sub : static_cast<const CLI::App&>(app).get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->get_name().empty() || sub->get_group().empty()) continue;
        names.push_back(sub->get_name());
        list += (list.empty() ? "" : ", ") + sub->get_name();
      }
      std::string near = io::nearest(word, names);
      fprintf(stderr, "pkb: error: unknown command '%s'%s; the commands are %s\n", word.c_str(),
              near.empty() ? "" : (" (did you mean " + near + "?)").c_str(), list.c_str());
      return eval::kUsage;
    }
  }
  // An unknown flag is the mistake, whatever CLI11 met first.
  std::string flag = first_unknown_flag(cmd, argc, argv);
  if (!flag.empty()) {
    std::string answer = original_flag_answer(cmd->get_name(), flag);
    if (flag == "--mode" && !mode_answer(argc, argv).empty()) {
      fprintf(stderr, "pkb: error: %s\n", mode_answer(argc, argv).c_str());
      return eval::kUsage;
    }
    if (!answer.empty()) {
      fprintf(stderr, "pkb: error: %s is the original ParallelKernelBench's flag: %s\n", flag.c_str(), answer.c_str());
      return eval::kUsage;
    }
    std::string near = nearest_flag(flag, flag_names(cmd));
    fprintf(stderr, "pkb: error: unknown flag %s for %s; %s\n", flag.c_str(), command_path(cmd).c_str(),
            near.empty() ? (command_path(cmd) + " --help lists them").c_str() : ("did you mean " + near + "?").c_str());
    return eval::kUsage;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // CLI11 lists the unexpected arguments in reverse.
    std::string what = e.what();
    std::vector<std::string> extras;
    std::stringstream words(what.substr(what.find(':') + 1));
    for (std::string w; words >> w;) extras.insert(extras.begin(), w);
    if (!extras.empty()) {
      fprintf(stderr, "pkb: error: unexpected argument '%s' for %s; %s --help says what it takes\n",
              extras.front().c_str(), command_path(cmd).c_str(), command_path(cmd).c_str());
      return eval::kUsage;
    }
  }
  if (dynamic_cast<const CLI::ValidationError*>(&e)) {
    std::string what = e.what();
    // pkb dryrun --solution cuda: the original ran a candidate alone in dryrun mode.
    if (cmd->get_name() == "dryrun" && what.rfind("--solution:", 0) == 0) {
      fprintf(stderr,
              "pkb: error: pkb dryrun runs the reference alone (--solution reference); to run a candidate, `pkb eval -p "
              "PROBLEM -s FILE` (--save-outputs DIR keeps its outputs)\n");
      return eval::kUsage;
    }
    std::string words = range_in_words(cmd, what);
    if (!words.empty()) {
      fprintf(stderr, "pkb: error: %s; %s --help says what each flag takes\n", words.c_str(), command_path(cmd).c_str());
      return eval::kUsage;
    }
  }
  // Anything else (a missing value, a value not among the choices): CLI11's words, on one line.
  fprintf(stderr, "pkb: error: %s; %s --help says what each flag takes\n", e.what(), command_path(cmd).c_str());
  return eval::kUsage;
}

}  // namespace pkb::cli
