// pkb prompt: the prompt a model gets for a problem. pkb generate: asks models for
// candidates, many problems and samples at once, resuming where an earlier run stopped.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "cli/commands.hpp"
#include "cli/prompting.hpp"
#include "eval/verdict.hpp"
#include "gen/error.hpp"
#include "gen/prompt.hpp"
#include "gen/runner.hpp"
#include "spec/dtype.hpp"
#include "spec/hardware.hpp"

namespace pkb::cli {

namespace fs = std::filesystem;

PromptSetup setup_prompts(Globals& g, const PromptOptions& o) {
  PromptSetup p;
  try {
    p.profiles = spec::load_profiles(g.root + "/hardware/profiles.toml");
  } catch (const spec::SpecError& e) {
    throw UsageError(e.what());
  }
  p.book = gen::PromptBook::load(o.prompts_file.empty() ? g.root + "/prompts.toml" : o.prompts_file, p.profiles);
  p.backend = &p.book.backend(o.backend.empty() ? p.book.default_backend : o.backend);
  p.shots = o.shots.empty() ? p.backend->shots : o.shots;
  p.book.shot_option(p.shots);
  if (!o.precision.empty() && !spec::is_dtype_name(o.precision))
    throw UsageError("unknown --precision '" + o.precision + "'; use one of " + spec::dtype_names());

  auto by_name = [&](const std::string& name) -> const spec::HardwareProfile* {
    if (name == "none") return nullptr;
    if (auto* prof = spec::find_profile(p.profiles, name)) return prof;
    std::string list;
    for (auto& prof : p.profiles) list += prof.name + ", ";
    throw UsageError("unknown --hardware '" + name + "'; use " + list + "auto or none");
  };
  // A backend with a machine of its own (the CPU device) describes it unless told otherwise.
  std::string hw = !o.hardware.empty() ? o.hardware : !p.backend->hardware.empty() ? p.backend->hardware
                                                                                   : p.book.default_hardware;
  if (hw == "auto" && !p.backend->hardware.empty()) {
    p.hardware = by_name(p.backend->hardware);
  } else if (hw == "auto") {
    nlohmann::json probe = launch::probe_devices();
    auto devs = probe.value("devices", nlohmann::json::array());
    std::string fallback = p.book.default_hardware == "auto" ? "none" : p.book.default_hardware;
    if (devs.empty()) {
      warn("--hardware auto: no GPU visible (" +
           probe.value("note", probe.value("error", std::string("CUDA sees none"))) + "); using the profile " +
           fallback);
      p.hardware = by_name(fallback);
    } else {
      std::string gpu = devs[0].value("name", "");
      p.hardware = spec::pick_profile(p.profiles, gpu, static_cast<int>(devs.size()));
      if (!p.hardware) {
        warn("--hardware auto: no profile in hardware/profiles.toml matches '" + gpu + "'; using " + fallback);
        p.hardware = by_name(fallback);
      }
      p.detected = gen::describe_devices(probe);
    }
  } else {
    p.hardware = by_name(hw);
  }
  p.world = o.world                                     ? o.world
            : p.hardware && p.hardware->gpus >= 2 ? p.hardware->gpus
            : p.backend->world                    ? p.backend->world
                                                  : 8;
  return p;
}

gen::Prompt prompt_for(Globals& g, const PromptSetup& p, const PromptOptions& o, const spec::ProblemSpec& s) {
  check_size(s, o.size);
  gen::PromptRequest req;
  req.problem = &s;
  req.root = g.root;
  req.backend = p.backend->key;
  req.shots = p.shots;
  req.hardware = p.hardware;
  req.detected = p.detected;
  req.setting = {gen::nearest_world(s, p.world, o.size), o.size, o.precision};
  if (req.setting.world != p.world && o.world)
    warn(s.slug + " cannot run with W=" + std::to_string(p.world) +
         "; its prompt uses W=" + std::to_string(req.setting.world));
  return gen::assemble_prompt(p.book, g.registry(), req);
}

int model_outcome(const std::string& model, const std::string& stop_reason, int failed, int code) {
  if (!stop_reason.empty()) {
    fprintf(stderr, "pkb: error: %s stopped: %s\n", model.c_str(), stop_reason.c_str());
    return eval::kUsage;
  }
  return failed && code == eval::kOk ? eval::kWrong : code;
}

void finish_models(int64_t tokens_in, int64_t tokens_out, const std::string& fatal) {
  printf("tokens: %lld in, %lld out\n", static_cast<long long>(tokens_in), static_cast<long long>(tokens_out));
  if (!fatal.empty()) throw std::runtime_error(fatal);
}

std::vector<const spec::ProblemSpec*> select_problems(Globals& g, const std::vector<std::string>& keys) {
  std::vector<const spec::ProblemSpec*> out;
  std::set<std::string> seen;
  for (auto& key : keys) {
    if (key == "all" || !spec::category_name(key).empty()) {
      for (auto& s : g.registry().all()) {
        bool wanted = key == "all" ? s.category != "test" : s.category == key;  // "all": benchmark problems only
        if (wanted && seen.insert(s.slug).second) out.push_back(&s);
      }
    } else {
      const spec::ProblemSpec& s = g.problem(key);
      if (seen.insert(s.slug).second) out.push_back(&s);
    }
  }
  return out;
}

bool names_categories(const std::vector<std::string>& keys) {
  return std::any_of(keys.begin(), keys.end(), [](auto& k) { return k == "all" || !spec::category_name(k).empty(); });
}

namespace {

struct GenerateOptions {
  std::vector<std::string> models, problems = {"all"};
  int samples = 1, jobs = 4;
  bool force = false, dry_run = false;
  std::optional<double> temperature, top_p;
  std::optional<int64_t> seed, max_tokens;
  std::string out, run_name, models_file, base_url;
  gen::RetryPolicy policy;
  PromptOptions prompt;
};

// A prompt's tokens, estimated without a tokenizer: about four characters a token.
int64_t estimate_tokens(const gen::Prompt& p) { return static_cast<int64_t>((p.system.size() + p.user.size() + 3) / 4); }

std::string money(double usd) {
  char b[32];
  snprintf(b, sizeof b, "$%.2f", usd);
  return b;
}

// --dry-run: the prompts, their token estimates and the requests a run would send; nothing
// is sent, and nothing is written.
int dry_run(const std::vector<gen::Target>& targets, const std::vector<gen::Task>& tasks, const gen::RunSettings& rs) {
  int64_t prompt_tokens = 0;
  for (auto& t : tasks) {
    int64_t n = estimate_tokens(t.prompt);
    prompt_tokens += n;
    printf("===== %s: prompt %s, ~%lld tokens =====\n===== system =====\n%s\n===== user =====\n%s\n", t.problem.c_str(),
           t.prompt.hash().c_str(), static_cast<long long>(n), t.prompt.system.c_str(), t.prompt.user.c_str());
  }
  std::vector<int> pending = gen::pending_requests(targets, tasks, rs);
  int total = 0;
  printf("dry run: no request sent. %zu prompt%s, ~%lld tokens in all (about 4 characters a token)\n", tasks.size(),
         tasks.size() == 1 ? "" : "s", static_cast<long long>(prompt_tokens));
  for (size_t i = 0; i < targets.size(); ++i) {
    const gen::Model& m = targets[i].model;
    int asked = rs.samples * static_cast<int>(tasks.size());
    // Sample-major as run_generation asks: the prompts' mean stands for each request.
    int64_t in = tasks.empty() ? 0 : pending[i] * prompt_tokens / static_cast<int64_t>(tasks.size());
    int64_t out = static_cast<int64_t>(pending[i]) * m.max_tokens;
    std::optional<double> cost = m.cost_usd(in, out);
    printf("%s: %d request%s (%d samples, %d already there) to %s, ~%lld tokens in, at most %lld out%s -> %s\n",
           m.name.c_str(), pending[i], pending[i] == 1 ? "" : "s", asked, asked - pending[i], m.provider.base_url.c_str(),
           static_cast<long long>(in), static_cast<long long>(out),
           cost ? (", at most " + money(*cost)).c_str() : "", targets[i].run_dir.c_str());
    total += pending[i];
  }
  printf("requests: %d\n", total);
  return eval::kOk;
}

int generate(Globals& g, GenerateOptions& o) {
  gen::ModelTable table = gen::ModelTable::load(o.models_file.empty() ? g.root + "/models.toml" : o.models_file);
  if (!o.run_name.empty() && o.models.size() > 1)
    throw UsageError("--run-name names one model's run; give one --model");
  PromptSetup p = setup_prompts(g, o.prompt);
  std::string precision = o.prompt.precision.empty() ? "dt" : o.prompt.precision;
  std::string hardware = p.hardware ? p.hardware->name : "none";
  std::string solutions = (fs::path(o.out.empty() ? g.root : o.out) / ("solutions_" + p.backend->key)).string();

  std::vector<gen::Target> targets;
  for (auto& name : o.models) {
    gen::Target t;
    t.model = table.resolve(name, o.base_url);
    if (o.temperature) t.model.temperature = o.temperature;
    if (o.top_p) t.model.top_p = o.top_p;
    if (o.seed) t.model.seed = o.seed;
    if (o.max_tokens) t.model.max_tokens = *o.max_tokens;
    if (o.seed && !t.model.takes_seed())
      warn("--seed: " + name + " speaks " + gen::protocol_name(t.model.provider.protocol) +
           ", which takes no seed; its requests go without one");
    if (!o.dry_run) t.key = gen::api_key(t.model);  // a dry run needs no key
    t.run_name = o.run_name.empty() ? gen::run_name(name, p.backend->key, precision, hardware, p.shots) : o.run_name;
    t.run_dir = (fs::path(solutions) / t.run_name).string();
    targets.push_back(t);
  }
  std::vector<gen::Task> tasks;
  auto problems = select_problems(g, o.problems);
  for (auto* s : problems) {
    // The original's format, asked for many problems: those pkb cannot run such a module
    // for are left out, each with its reason (asked for alone, the prompt says why).
    if (p.backend->format == "original" && problems.size() > 1 &&
        (!s->original.declared || !s->original.unsupported.empty())) {
      fprintf(stderr, "pkb: left out %s: %s\n", s->slug.c_str(),
              s->original.declared ? s->original.unsupported.c_str() : "its spec has no [original] call");
      continue;
    }
    tasks.push_back({s->slug, prompt_for(g, p, o.prompt, *s)});
  }

  gen::RunSettings rs;
  rs.samples = o.samples;
  rs.jobs = o.jobs;
  rs.force = o.force;
  rs.policy = o.policy;
  rs.extension = p.backend->extension;
  rs.tags = p.backend->tags;
  rs.labels = {{"backend", p.backend->key}, {"shots", p.shots}, {"hardware", hardware}, {"precision", precision}};
  if (o.dry_run) return dry_run(targets, tasks, rs);
  gen::Progress progress(stderr, isatty(2));
  gen::RunSummary sum = gen::run_generation(targets, tasks, rs, progress);

  int code = eval::kOk;
  for (size_t i = 0; i < targets.size(); ++i) {
    const gen::ModelTally& m = sum.models[i];
    printf("%s: %d ok, %d without code, %d failed, %d already there, %d not asked -> %s\n",
           targets[i].model.name.c_str(), m.ok, m.no_code, m.failed, m.skipped, m.not_asked,
           targets[i].run_dir.c_str());
    if (m.requests)
      printf("  %d request%s: %lld tokens in, %lld out, %.1f s mean latency, cost %s\n", m.requests,
             m.requests == 1 ? "" : "s", static_cast<long long>(m.tokens_in), static_cast<long long>(m.tokens_out),
             m.latency_s / m.requests, m.cost_usd ? money(*m.cost_usd).c_str() : "unknown (no prices in the models table)");
    code = model_outcome(targets[i].model.name, m.stop_reason, m.failed, code);
  }
  finish_models(sum.tokens_in, sum.tokens_out, sum.fatal);
  if (sum.interrupted) {
    fprintf(stderr, "pkb: interrupted; finished samples are kept, and the same command resumes\n");
    return eval::kInterrupted;
  }
  return code;
}

}  // namespace

void add_generate_commands(CLI::App& app, Globals& g, Action& run) {
  static PromptOptions po;
  static std::string problem;
  auto* prompt = app.add_subcommand("prompt", "Print the prompt a model gets for a problem");
  prompt->add_option("-p,--problem", problem, "slug, original id or original stem")->required();
  po.add_to(prompt);
  prompt->callback([&] {
    run = [&] {
      try {
        PromptSetup p = setup_prompts(g, po);
        gen::Prompt text = prompt_for(g, p, po, g.problem(problem));
        printf("===== system =====\n%s\n===== user =====\n%s", text.system.c_str(), text.user.c_str());
      } catch (const io::InputError& e) {
        throw UsageError(e.what());
      }
      return int(eval::kOk);
    };
  });

  static GenerateOptions go;
  auto* gen_cmd = app.add_subcommand(
      "generate",
      "Ask models for candidates: every problem x sample not yet on disk (exit 1: some requests failed; 2: a "
      "model was refused; 130: interrupted, rerun to resume)");
  add_model_option(gen_cmd, go.models);
  add_problem_option(gen_cmd, go.problems);
  gen_cmd->add_option("-n,--samples", go.samples, "candidates per problem and model (default 1)")
      ->check(CLI::Range(1, 1000));
  gen_cmd->add_option("-j,--jobs", go.jobs, "requests in flight at once (default 4)")->check(CLI::Range(1, 256));
  gen_cmd->add_flag("--force", go.force, "ask again for samples that exist");
  gen_cmd->add_flag("--dry-run", go.dry_run,
                    "print the prompts, their token estimates and the requests a run would send; send nothing");
  // Unset unless given: the provider's defaults stay the provider's.
  gen_cmd->add_option_function<double>("--temperature", [](const double& v) { go.temperature = v; },
                                        "sampling temperature (default: the provider's)")
      ->check(CLI::Range(0.0, 2.0));
  gen_cmd->add_option_function<double>("--top-p", [](const double& v) { go.top_p = v; },
                                        "nucleus sampling mass (default: the provider's)")
      ->check(CLI::Range(0.0, 1.0));
  gen_cmd->add_option_function<int64_t>("--seed", [](const int64_t& v) { go.seed = v; },
                                         "sampling seed; sample k gets seed + k (OpenAI chat and Gemini only)");
  gen_cmd->add_option_function<int64_t>("--max-tokens", [](const int64_t& v) { go.max_tokens = v; },
                                         "output tokens per request, reasoning included (default: the table's)")
      ->check(CLI::Range(int64_t(1), int64_t(10000000)));
  gen_cmd->add_option("--output-dir", go.out, "where solutions_<backend>/ goes (default: the root)");
  gen_cmd->add_option("--run-name", go.run_name,
                      "the run's folder (default: <model>_<backend>_<precision>_<hardware>_<shots>)");
  gen_cmd->add_option("--models", go.models_file, "the models table (default: <root>/models.toml)");
  gen_cmd->add_option("--base-url", go.base_url,
                      "send every request here (else $PKB_<PROVIDER>_BASE_URL, else the table)");
  gen_cmd->add_option("--timeout", go.policy.timeout_s, "seconds one request may take, answer included (default 1800)")
      ->check(CLI::PositiveNumber);
  gen_cmd
      ->add_option("--retries", go.policy.retries, "retries after a 429, 5xx, timeout or malformed answer (default 8)")
      ->check(CLI::Range(0, 100));
  gen_cmd
      ->add_option("--retry-delay", go.policy.base_delay_s,
                   "seconds before the first retry, doubling after each (default 2)")
      ->check(CLI::NonNegativeNumber);
  po.add_to(gen_cmd);
  gen_cmd->callback([&] {
    run = [&] {
      go.prompt = po;
      try {
        return generate(g, go);
      } catch (const io::InputError& e) {
        throw UsageError(e.what());
      }
    };
  });
}

}  // namespace pkb::cli
