#include "build/builder.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "build/built_with.hpp"
#include "build/sha256.hpp"
#include "io/files.hpp"
#include "launch/subprocess.hpp"

namespace pkb::build {

namespace fs = std::filesystem;

namespace {

// The ABI headers are part of every key: a changed header rebuilds every candidate.
std::string headers_hash(const std::string& root) {
  std::string all;
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(root + "/include/pkb"))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (auto& f : files) all += f.filename().string() + "\n" + io::read_file(f.string());
  return sha256_hex(all);
}

std::string version_line(const std::string& compiler, bool last) {
  launch::ProcessResult r = launch::run_process({compiler, "--version"}, 30);
  std::istringstream in(r.out);
  std::string line, keep;
  while (std::getline(in, line))
    if (!line.empty()) {
      keep = line;
      if (!last) break;
    }
  return keep;
}

std::string first_lines(const std::string& text, int n) {
  std::istringstream in(text);
  std::string line, out;
  int k = 0;
  while (std::getline(in, line)) {
    if (k++ == n) {
      out += "... (more in the build log)\n";
      break;
    }
    out += line + "\n";
  }
  return out;
}

// ThunderKittens' include folder (holding kittens.cuh) from a checkout or the folder
// itself; "" when neither.
std::string tk_include(const std::string& dir) {
  for (std::string d : {dir + "/include", dir})
    if (!dir.empty() && fs::exists(d + "/kittens.cuh")) return fs::absolute(d).lexically_normal().string();
  return "";
}

// A .py candidate: Python's own parser checks it (no code of it runs here) and it must
// bind pkb_run at module level; then it is copied into the cache, where the rank imports it.
const char* const kPythonCheck = R"PY(
import ast, os, sys
try:
    tree = ast.parse(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1])
except SyntaxError as e:
    sys.exit(f"{type(e).__name__}: {e.msg} ({os.path.basename(sys.argv[1])}, line {e.lineno})")
bound = set()
for n in tree.body:
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): bound.add(n.name)
    elif isinstance(n, ast.Assign): bound.update(t.id for t in n.targets if isinstance(t, ast.Name))
    elif isinstance(n, (ast.Import, ast.ImportFrom)): bound.update((a.asname or a.name).split(".")[0] for a in n.names)
if "pkb_run" not in bound:
    sys.exit("it defines no pkb_run(ctx, inputs, outputs) at module level")
)PY";

}  // namespace

Toolchain Toolchain::from_build(const std::string& root) {
  Toolchain t;
  t.root = root;
  const BuiltWith& b = kBuiltWith;
  t.nvcc = b.nvcc;
  t.cuda_lib_dir = b.cuda_lib_dir;
  t.nccl_include = b.nccl_include;
  t.nccl_library = b.nccl_library;
  t.torch_root = b.torch_root;
  t.rpath = b.rpath;
  t.python = b.python;
  return t;
}

const char* name(Backend b) {
  switch (b) {
    case Backend::cuda: return "cuda";
    case Backend::cpu: return "cpu";
    case Backend::triton: return "triton";
    case Backend::tk: return "tk";
    case Backend::original: return "original";
    case Backend::none: break;
  }
  return "";
}

namespace {

Format g_format = Format::automatic;

// Whether a line of Python binds `name` at module level: `def name(`, `async def name(`,
// `name = ...`.
bool binds(const std::string& line, const std::string& name) {
  for (std::string head : {"def ", "async def "})
    if (line.rfind(head, 0) == 0) {
      size_t p = line.find_first_not_of(' ', head.size());
      if (p != std::string::npos && line.compare(p, name.size(), name) == 0) {
        size_t q = line.find_first_not_of(' ', p + name.size());
        return q != std::string::npos && line[q] == '(';
      }
    }
  if (line.rfind(name, 0) == 0) {
    size_t q = line.find_first_not_of(' ', name.size());
    return q != std::string::npos && line[q] == '=' && (q + 1 >= line.size() || line[q + 1] != '=');
  }
  return false;
}

}  // namespace

void force_format(Format f) { g_format = f; }
Format forced_format() { return g_format; }

bool is_original_format(const std::string& text) {
  bool solution = false, pkb_run = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    solution = solution || binds(line, "solution");
    pkb_run = pkb_run || binds(line, "pkb_run");
  }
  return solution && !pkb_run;
}

Backend backend_of(const std::string& source) {
  std::string ext = fs::path(source).extension().string();
  if (ext == ".py") {
    if (g_format != Format::automatic) return g_format == Format::original ? Backend::original : Backend::triton;
    std::error_code ec;
    return fs::is_regular_file(source, ec) && is_original_format(io::read_file(source)) ? Backend::original
                                                                                          : Backend::triton;
  }
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") return Backend::cpu;
  if (ext == ".cu") return io::read_file(source).find("kittens.cuh") != std::string::npos ? Backend::tk : Backend::cuda;
  return Backend::none;
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("PKB_CACHE_DIR")) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::string(x) + "/pkb";
  if (const char* h = std::getenv("HOME")) return std::string(h) + "/.cache/pkb";
  return "/tmp/pkb-cache";
}

std::string arch_for(int major, int minor) {
  std::string sm = "sm_" + std::to_string(major) + std::to_string(minor);
  return major >= 9 ? sm + "a" : sm;  // the 'a' targets unlock wgmma/TMA (Hopper) and tcgen05 (Blackwell)
}

namespace {

Result build_python(const Request& req, const Toolchain& tc, Result res, const std::string& source,
                    std::chrono::steady_clock::time_point t0) {
  res.compiler = version_line(tc.python, false);
  // The user's file is part of the key: the rank names it in tracebacks (kSourcePathFile).
  std::string user_file = fs::absolute(req.source).lexically_normal().string();
  res.key = sha256_hex(res.source_sha256 + "\npython " + tc.python + "\n" + res.compiler + "\nabi 1\n" + user_file)
                .substr(0, 32);
  fs::path dir = fs::path(req.cache_dir.empty() ? default_cache_dir() + "/build" : req.cache_dir) / res.key;
  res.library = (dir / fs::path(req.source).filename()).string();
  auto done = [&] {
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  };
  if (fs::exists(res.library)) {
    res.ok = res.cached = true;
    return done();
  }
  launch::ProcessResult r = launch::run_process({tc.python, "-c", kPythonCheck, fs::absolute(req.source).string()}, 120);
  if (!r.ok()) {
    std::string why = r.err.empty() ? r.out : r.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    res.error = r.timed_out ? "the Python syntax check ran over 120 s"
                            : "the candidate is not a pkb Python candidate: " + why.substr(why.rfind('\n') + 1);
    res.log = first_lines(why, 40);
    return done();
  }
  fs::create_directories(dir);
  io::write_file_atomically((dir / kSourcePathFile).string(), user_file + "\n");
  io::write_file_atomically(res.library, source);
  res.ok = true;
  return done();
}

// TORCH_CUDA_ARCH_LIST for a target: "9.0" for sm_90a (the original's own default).
std::string torch_arch(const std::string& arch) {
  std::string num = arch.substr(3);
  while (!num.empty() && !std::isdigit(static_cast<unsigned char>(num.back()))) num.pop_back();
  if (num.size() < 2) return "9.0";
  return num.substr(0, num.size() - 1) + "." + num.substr(num.size() - 1);
}

// Whether every extension a manifest names is still in the cache.
bool extensions_present(const fs::path& manifest) {
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec)) return false;
  try {
    nlohmann::json m = nlohmann::json::parse(io::read_file(manifest.string()));
    for (auto& [k, e] : m.at("extensions").items())
      if (!fs::is_regular_file(e.at("path").get<std::string>(), ec)) return false;
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

// A module in the original's format: pkb's builder (python/pkb/original/build.py, which
// reads the file with Python's parser and runs none of it) checks it and builds every
// compile_cuda_extension call whose arguments it can read there into the cache, keyed by
// their content; then the module is copied beside the list of what was built.
Result build_original(const Request& req, const Toolchain& tc, Result res, const std::string& source,
                      std::chrono::steady_clock::time_point t0) {
  res.compiler = version_line(tc.python, false);
  bool cuda = req.device == launch::Device::cuda;
  if (cuda && tc.nvcc.empty()) {
    res.error = "pkb was built without the CUDA toolkit, so it cannot build the CUDA extensions of an original-format "
                "candidate on the CUDA device";
    return res;
  }
  std::string nvcc = cuda ? version_line(tc.nvcc, true) : "";
  std::string arch = std::getenv("TORCH_CUDA_ARCH_LIST") ? std::getenv("TORCH_CUDA_ARCH_LIST") : torch_arch(req.arch);
  std::string helpers = tc.root + "/python/pkb/original";
  std::string user_file = fs::absolute(req.source).lexically_normal().string();
  res.key = sha256_hex(res.source_sha256 + "\noriginal " + tc.python + "\n" + res.compiler + "\n" + nvcc + "\n" +
                       launch::name(req.device) + " " + arch + "\n" + io::read_file(helpers + "/build.py") +
                       io::read_file(helpers + "/keys.py") + "\nabi 1\n" + user_file)
                .substr(0, 32);
  fs::path root = req.cache_dir.empty() ? default_cache_dir() + "/build" : req.cache_dir;
  fs::path dir = root / res.key;
  res.library = (dir / fs::path(req.source).filename()).string();
  auto done = [&] {
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  };
  if (fs::exists(res.library) && extensions_present(dir / eval::kExtensionsFile)) {
    res.ok = res.cached = true;
    return done();
  }
  fs::create_directories(dir);
  std::string manifest = (dir / (std::string(eval::kExtensionsFile) + "." + std::to_string(getpid()))).string();
  std::vector<std::pair<std::string, std::string>> env;
  if (cuda) env.push_back({"CUDA_HOME", fs::path(tc.nvcc).parent_path().parent_path().string()});
  launch::ProcessResult r = launch::run_process(
      {tc.python, helpers + "/build.py", "--source", user_file, "--device", launch::name(req.device), "--arch", arch,
       "--cache", (root / "ext").string(), "--manifest", manifest},
      1800, env);
  std::ofstream(dir / "build.log") << r.err << r.out;
  if (!r.ok()) {
    fs::remove(manifest);
    std::string why = r.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    size_t cut = why.rfind('\n');
    std::string last = why.substr(cut == std::string::npos ? 0 : cut + 1);
    why = cut == std::string::npos ? "" : why.substr(0, cut);  // the log: what came before the line
    res.error = r.timed_out      ? "building the candidate's extensions ran over 1800 s"
                : !last.empty() ? last
                                : "pkb's builder for original-format candidates failed (exit " +
                                      std::to_string(r.exit_code) + ")";
    res.log = first_lines(why, 40);
    return done();
  }
  fs::rename(manifest, dir / eval::kExtensionsFile);
  io::write_file_atomically((dir / kSourcePathFile).string(), user_file + "\n");
  io::write_file_atomically((dir / eval::kFormatFile).string(), "original\n");
  io::write_file_atomically(res.library, source);
  res.ok = true;
  return done();
}

}  // namespace

Result build(const Request& req, const Toolchain& tc) {
  auto t0 = std::chrono::steady_clock::now();
  Result res;
  if (!fs::is_regular_file(req.source)) {
    res.error = "no such candidate file: " + req.source;
    return res;
  }
  res.backend = backend_of(req.source);
  std::string source = io::read_file(req.source);
  res.source_sha256 = sha256_hex(source);

  std::string compiler;
  std::vector<std::string> flags;
  bool torch_bridge = source.find("pkb/torch_bridge.hpp") != std::string::npos;
  std::vector<std::string> rpath_dirs;
  if (res.backend == Backend::cuda) {
    if (req.device != launch::Device::cuda) {
      res.error = "a .cu candidate runs on the CUDA device; this run uses the CPU device (CPU candidates are .cpp files)";
      return res;
    }
    if (tc.nvcc.empty()) {
      res.error = "pkb was built without the CUDA toolkit, so it cannot build .cu candidates";
      return res;
    }
    compiler = tc.nvcc;
    std::string num = req.arch.substr(3);
    flags = {"-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-gencode",
             "arch=compute_" + num + ",code=" + req.arch, "-I" + tc.root + "/include", "-I" + tc.nccl_include,
             "-Xlinker", "--as-needed", tc.nccl_library, "-L" + tc.cuda_lib_dir, "-L" + tc.cuda_lib_dir + "/stubs",
             "-lcublas", "-lcublasLt", "-lcufft", "-lcuda"};
    rpath_dirs.push_back(fs::path(tc.nccl_library).parent_path().string());
  } else if (res.backend == Backend::cpu) {
    if (req.device != launch::Device::cpu) {
      res.error = "a .cpp candidate runs on the CPU device (--device cpu); CUDA candidates are .cu files";
      return res;
    }
    compiler = "c++";
    flags = {"-std=c++17", "-O3", "-shared", "-fPIC", "-pthread", "-I" + tc.root + "/include"};
  } else if (res.backend == Backend::tk) {
    if (req.device != launch::Device::cuda) {
      res.error = "a ThunderKittens candidate runs on the CUDA device; this run uses the CPU device";
      return res;
    }
    if (tc.nvcc.empty()) {
      res.error = "pkb was built without the CUDA toolkit, so it cannot build ThunderKittens candidates";
      return res;
    }
    std::string dir = !req.tk_dir.empty() ? req.tk_dir : (std::getenv("PKB_TK_DIR") ? std::getenv("PKB_TK_DIR") : "");
    std::string inc = tk_include(dir);
    if (inc.empty()) {
      res.error = dir.empty() ? "a ThunderKittens candidate needs ThunderKittens' headers: set PKB_TK_DIR (or pass "
                                "--tk-dir) to a ThunderKittens checkout, the folder holding include/kittens.cuh"
                              : "PKB_TK_DIR/--tk-dir '" + dir + "' holds no kittens.cuh (nor include/kittens.cuh); "
                                "point it at a ThunderKittens checkout";
      return res;
    }
    int sm = std::atoi(req.arch.c_str() + 3);
    if (sm < 90) {
      res.error = "ThunderKittens candidates need a Hopper (sm_90a) or newer GPU; this one is " + req.arch;
      return res;
    }
    compiler = tc.nvcc;
    std::string num = req.arch.substr(3);
    // ThunderKittens' own flags: C++20 concepts, its extended lambdas, the architecture macro.
    flags = {"-std=c++20", "-O3", "-shared", "-Xcompiler", "-fPIC", "--expt-extended-lambda",
             "--expt-relaxed-constexpr", "-Xcompiler=-Wno-psabi", "-Xcompiler=-fno-strict-aliasing",
             sm >= 100 ? "-DKITTENS_BLACKWELL" : "-DKITTENS_HOPPER", "-gencode",
             "arch=compute_" + num + ",code=" + req.arch, "-I" + inc, "-I" + tc.root + "/include",
             "-I" + tc.nccl_include, "-Xlinker", "--as-needed", tc.nccl_library, "-L" + tc.cuda_lib_dir,
             "-L" + tc.cuda_lib_dir + "/stubs", "-lcublas", "-lcublasLt", "-lcuda"};
    rpath_dirs.push_back(fs::path(tc.nccl_library).parent_path().string());
    // Its headers are part of the key: another checkout rebuilds.
    flags.push_back("-DPKB_TK_HEADERS=" + sha256_hex(io::read_file(inc + "/kittens.cuh")).substr(0, 16));
  } else if (res.backend == Backend::triton) {
    if (tc.python.empty()) {
      res.error = "this pkb was built without embedded Python (no Python.h or shared libpython for its torch's "
                  "interpreter), so it cannot run .py candidates; install the interpreter's development files and "
                  "rebuild";
      return res;
    }
    return build_python(req, tc, res, source, t0);
  } else if (res.backend == Backend::original) {
    if (tc.python.empty()) {
      res.error = "this pkb was built without embedded Python (no Python.h or shared libpython for its torch's "
                  "interpreter), so it cannot run .py candidates; install the interpreter's development files and "
                  "rebuild";
      return res;
    }
    return build_original(req, tc, res, source, t0);
  } else {
    res.error = "unknown candidate kind '" + fs::path(req.source).extension().string() +
                "': use .cu (CUDA or ThunderKittens), .py (Triton, or torch on the CPU device) or .cpp (CPU device)";
    return res;
  }
  if (torch_bridge) {
    for (std::string inc : {"/include", "/include/torch/csrc/api/include"}) flags.push_back("-I" + tc.torch_root + inc);
    flags.push_back(res.backend != Backend::cpu ? "-Xcompiler=-D_GLIBCXX_USE_CXX11_ABI=1" : "-D_GLIBCXX_USE_CXX11_ABI=1");
    flags.push_back("-L" + tc.torch_root + "/lib");
    for (std::string lib : {"-ltorch_cpu", "-lc10"}) flags.push_back(lib);
    if (res.backend != Backend::cpu)
      for (std::string lib : {"-ltorch_cuda", "-lc10_cuda"}) flags.push_back(lib);
    std::stringstream rp(tc.rpath);
    for (std::string d; std::getline(rp, d, ':');) rpath_dirs.push_back(d);
  }
  for (auto& d : rpath_dirs) flags.push_back(res.backend != Backend::cpu ? "-Xlinker=-rpath," + d : "-Wl,-rpath," + d);

  res.compiler = version_line(compiler, res.backend != Backend::cpu);
  std::string flag_text;
  for (auto& f : flags) flag_text += f + " ";
  res.key = sha256_hex(res.source_sha256 + "\n" + compiler + " " + flag_text + "\n" + res.compiler + "\nabi 1\n" +
                       headers_hash(tc.root)).substr(0, 32);
  fs::path dir = fs::path(req.cache_dir.empty() ? default_cache_dir() + "/build" : req.cache_dir) / res.key;
  res.library = (dir / "candidate.so").string();
  if (fs::exists(res.library)) {
    res.ok = res.cached = true;
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  }
  fs::create_directories(dir);
  // Built under a private name and renamed: concurrent builds of one key never see half a file.
  std::string tmp = (dir / ("candidate." + std::to_string(getpid()) + ".so")).string();
  std::vector<std::string> argv = {compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-o", tmp, fs::absolute(req.source).string()});
  launch::ProcessResult r = launch::run_process(argv, 600);
  std::ofstream(dir / "build.log") << flag_text << "\n" << r.out << r.err;
  if (!r.ok()) {
    fs::remove(tmp);
    res.error = r.timed_out ? "the compiler ran over 600 s" : "the candidate does not compile";
    res.log = first_lines(r.err.empty() ? r.out : r.err, 40);
    return res;
  }
  fs::rename(tmp, res.library);
  res.ok = true;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace pkb::build
