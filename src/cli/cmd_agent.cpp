// pkb agent: models write, run and fix candidates over several turns, with pkb's feedback
// and no access to its files (docs/agent.md). The loop is agent/'s; this wires the flags,
// the prompts, the models and the device together.
#include <cstdio>
#include <filesystem>

#include "agent/loop.hpp"
#include "cli/commands.hpp"
#include "cli/prompting.hpp"
#include "eval/verdict.hpp"
#include "gen/error.hpp"
#include "gen/problem_facts.hpp"
#include "launch/signals.hpp"
#include "launch/subprocess.hpp"

namespace pkb::cli {

namespace {

namespace fs = std::filesystem;

struct AgentOptions {
  std::vector<std::string> models, problems;
  int samples = 1, jobs = 4;
  std::string out, run_name, models_file, base_url;
  agent::Budget budget;
  double until_speedup = -1;
  agent::EvalSettings eval;
  gen::RetryPolicy policy;
  PromptOptions prompt;
};

int run(Globals& g, AgentOptions& o) {
  gen::ModelTable table = gen::ModelTable::load(o.models_file.empty() ? g.root + "/models.toml" : o.models_file);
  if (!o.run_name.empty() && o.models.size() > 1)
    throw UsageError("--run-name names one model's run; give one --model");
  PromptSetup p = setup_prompts(g, o.prompt);
  agent::Book book = agent::Book::from(p.book);

  // The backend says where candidates run: .cpp on the CPU device, the rest on GPUs.
  agent::EvalSettings& e = o.eval;
  e.device = p.backend->key == "cpu" ? "cpu" : "cuda";
  int gpus = 0;
  if (e.device == "cuda") {
    gpus = static_cast<int>(launch::probe_devices().value("devices", nlohmann::json::array()).size());
    if (gpus == 0)
      throw UsageError("--backend " + p.backend->key +
                       " candidates run on GPUs, and none is visible; use --backend cpu for pkb's CPU device");
  }
  p.world = o.prompt.world ? o.prompt.world : e.device == "cpu" ? 4 : gpus;
  e.pkb = launch::self_exe();
  e.global_args = {"--root", g.root};
  for (auto& d : g.problem_dirs) e.global_args.insert(e.global_args.end(), {"--problem-dir", d});
  for (auto& l : g.reference_libs) e.global_args.insert(e.global_args.end(), {"--reference-lib", l});
  e.settings.size = o.prompt.size;
  e.settings.dtype = o.prompt.precision;

  std::vector<agent::Problem> problems;
  for (auto* s : select_problems(g, o.problems))
    problems.push_back({s, gen::nearest_world(*s, p.world, o.prompt.size), prompt_for(g, p, o.prompt, *s)});

  std::string precision = o.prompt.precision.empty() ? "dt" : o.prompt.precision;
  std::string hardware = p.hardware ? p.hardware->name : "none";
  fs::path solutions = fs::path(o.out.empty() ? g.root : o.out) / ("solutions_" + p.backend->key);
  std::vector<gen::Target> targets;
  for (auto& name : o.models) {
    gen::Target t;
    t.model = table.resolve(name, o.base_url);
    t.key = gen::api_key(t.model);
    t.run_name = o.run_name.empty() ? agent::run_name(name, p.backend->key, precision, hardware, p.shots) : o.run_name;
    t.run_dir = (solutions / t.run_name).string();
    targets.push_back(t);
  }

  agent::Settings s;
  s.samples = o.samples;
  s.jobs = o.jobs;
  s.budget = o.budget;
  if (o.until_speedup >= 0) s.budget.until_speedup = o.until_speedup;
  s.eval = e;
  s.policy = o.policy;
  s.backend = p.backend->key;
  s.backend_name = p.backend->name;
  s.extension = p.backend->extension;
  s.tags = p.backend->tags;
  s.root = g.root;
  s.registry = &g.registry();
  s.book = book;

  // Ctrl-C: the request or evaluation in flight is dropped (its children die with pkb) and
  // runs again on resume; every finished turn, and every answer received, is on disk.
  launch::Interrupts interrupts(launch::Interrupts::Mode::exit_now, false,
                                "\npkb: interrupted; run the same command again to resume (finished turns are kept)\n");
  agent::Summary sum = agent::run_agent(targets, problems, s, [](const std::string& line) {
    printf("%s\n", line.c_str());
    fflush(stdout);
  });

  int code = eval::kOk;
  for (size_t i = 0; i < targets.size(); ++i) {
    const agent::ModelTally& m = sum.models[i];
    printf("%s: %d sample%s finished (%d with a correct candidate), %d stopped by a failed request, %d not asked -> %s\n",
           targets[i].model.name.c_str(), m.finished, m.finished == 1 ? "" : "s", m.correct, m.failed, m.not_asked,
           targets[i].run_dir.c_str());
    code = model_outcome(targets[i].model.name, m.stop_reason, m.failed, code);
  }
  finish_models(sum.tokens_in, sum.tokens_out, sum.fatal);
  if (code == eval::kWrong) fprintf(stderr, "pkb: some requests failed; run the same command again to resume\n");
  return code;
}

}  // namespace

void add_agent_command(CLI::App& app, Globals& g, Action& action) {
  static AgentOptions o;
  auto* cmd = app.add_subcommand(
      "agent",
      "Let models write, run and fix candidates over several turns, with pkb's feedback (exit 1: some requests "
      "failed; 2: a model was refused; 130: interrupted; rerun to resume)");
  add_model_option(cmd, o.models);
  add_problem_option(cmd, o.problems)->required();
  cmd->add_option("-n,--samples", o.samples, "conversations per problem and model (default 1)")->check(CLI::Range(1, 1000));
  cmd->add_option("--turns", o.budget.turns, "answers per sample, tool requests included (default 10)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-tokens-total", o.budget.tokens,
                  "stop a sample once its requests used this many input and output tokens (default: no limit)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 50));
  cmd->add_option("--wall-time", o.budget.wall_s,
                  "stop a sample after this many seconds of its own requests, evaluations and tools (default: none)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--device-time", o.budget.device_s,
                  "stop a sample after this many seconds of evaluations and dryruns (default: none)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--until-speedup", o.until_speedup,
                  "stop a sample once a correct candidate is at least this fast (0: the first correct one)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-j,--jobs", o.jobs, "samples at once; evaluations still run one at a time (default 4)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--output-dir", o.out, "where solutions_<backend>/ goes (default: the root)");
  cmd->add_option("--run-name", o.run_name,
                  "the run's folder (default: <model>_<backend>_<precision>_<hardware>_<shots>_agent)");
  cmd->add_option("--models", o.models_file, "the models table (default: <root>/models.toml)");
  cmd->add_option("--base-url", o.base_url, "send every request here (else $PKB_<PROVIDER>_BASE_URL, else the table)");
  cmd->add_option("--request-timeout", o.policy.timeout_s,
                  "seconds one request may take, answer included (default 1800)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--retries", o.policy.retries, "retries after a 429, 5xx, timeout or malformed answer (default 8)")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--retry-delay", o.policy.base_delay_s, "seconds before the first retry, doubling after each (default 2)")
      ->check(CLI::NonNegativeNumber);
  add_settings(cmd, o.eval.settings, {"--size", "--dtype"});  // the prompt's, below
  cmd->add_option("--timeout", o.eval.timeout, "pkb eval --timeout: seconds per phase of an evaluation")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--eval-deadline", o.eval.deadline_s, "seconds one evaluation may take in all (default 3600)")
      ->check(CLI::PositiveNumber);
  o.prompt.add_to(cmd, "ranks the candidates run on, and the prompt's W (default: the visible GPUs; 4 on the CPU device)",
                  "size the candidates run at, and the prompt's (default: default)");
  cmd->callback([&] {
    action = [&] {
      try {
        return run(g, o);
      } catch (const io::InputError& e) {
        throw UsageError(e.what());
      }
    };
  });
}

}  // namespace pkb::cli
