"""pkb's builder for candidates in the original ParallelKernelBench's format.

    python build.py --source FILE --device cuda|cpu --arch 9.0 --cache DIR --manifest OUT
    python build.py --source FILE --list      # what it finds, as JSON; builds nothing

Runs in pkb's parent process's place, before any rank starts, and runs none of the
candidate's code: it reads the module with Python's parser, checks that it is an
original-format module that pkb can run (`solution` at module level; not a ParallelKittens
one), finds every call of `compile_cuda_extension` (utils.cuda_helpers) and works out its
arguments from what the file states as constants (module-level strings and lists, string
concatenation, f-strings and .format/.join/.replace over constants, a function's own local
constants). Each call it can read is built as the original's helper builds it (torch's
cpp_extension: main.cpp with torch/extension.h, cuda.cu with the source, nvcc -O3 plus the
call's flags, TORCH_CUDA_ARCH_LIST) into DIR/<key>/<name>.so, a folder keyed by the
arguments and the toolchain, unless it is there already. On the CPU device the source is
built as C++ (there is no GPU to run kernels on). OUT gets
{"extensions": {call_key: {"name", "path", "line"}}, "unresolved": [{"line", "why"}]}:
inside the sandbox the rank loads a build by its call's key and names the unresolved
call's reason when it finds none.

Exit 0 (stdout: one line per extension), or 2 with one line on stderr saying why the file
is not a candidate pkb can run, or 3 when an extension does not compile (the compiler's
output, then that line).
"""

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keys  # noqa: E402

HELPER = "compile_cuda_extension"
HELPER_MODULE = "utils.cuda_helpers"
PARALLELKITTENS = "utils.parallelkittens_runtime"


class Unknown(Exception):
    """A value pkb cannot know before the run."""


def _text(node):
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


class Evaluator:
    """Values of expressions over constants and names whose values are known."""

    STR_METHODS = {"join", "format", "strip", "lstrip", "rstrip", "replace", "upper", "lower"}

    def __init__(self, env):
        self.env = env  # name -> value, or Unknown (why)

    def __call__(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                raise Unknown(f"{node.id} is not a constant of the file")
            v = self.env[node.id]
            if isinstance(v, Unknown):
                raise v
            return v
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self(e) for e in node.elts]
        if isinstance(node, ast.JoinedStr):
            out = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    out.append(str(part.value))
                else:  # FormattedValue
                    v = self(part.value)
                    if part.conversion == ord("r"):
                        v = repr(v)
                    elif part.conversion == ord("s"):
                        v = str(v)
                    elif part.conversion == ord("a"):
                        v = ascii(v)
                    spec = self(part.format_spec) if part.format_spec is not None else ""
                    out.append(format(v, spec))
            return "".join(out)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod, ast.Mult)):
            a, b = self(node.left), self(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Mult):
                return a * b
            return a % (tuple(b) if isinstance(b, list) else b)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr in self.STR_METHODS and not any(isinstance(a, ast.Starred) for a in node.args):
                base = self(f.value)
                if isinstance(base, str):
                    args = [self(a) for a in node.args]
                    kwargs = {k.arg: self(k.value) for k in node.keywords if k.arg}
                    return getattr(base, f.attr)(*args, **kwargs)
            if (f.attr == "dedent" and isinstance(f.value, ast.Name) and f.value.id == "textwrap"
                    and len(node.args) == 1):
                import textwrap
                return textwrap.dedent(self(node.args[0]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("str", "int") \
                and len(node.args) == 1 and not node.keywords:
            return {"str": str, "int": int}[node.func.id](self(node.args[0]))
        raise Unknown(f"{_text(node)} (line {getattr(node, 'lineno', '?')}) is computed when the module runs")


def assigned_names(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in assigned_names(e)]
    return []


def bind_assignment(stmt, env):
    """Updates `env` with what `stmt` binds, as a value or as Unknown."""
    ev = Evaluator(env)
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                try:
                    env[target.id] = ev(stmt.value)
                except Unknown as e:
                    env[target.id] = e
                except Exception as e:  # noqa: BLE001 (a constant expression that fails)
                    env[target.id] = Unknown(f"{target.id}: {e}")
            else:
                for n in assigned_names(target):
                    env[n] = Unknown(f"{n} is unpacked when the module runs")
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        if stmt.value is None:
            return
        try:
            env[stmt.target.id] = ev(stmt.value)
        except Exception as e:  # noqa: BLE001
            env[stmt.target.id] = e if isinstance(e, Unknown) else Unknown(str(e))
    elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        name = stmt.target.id
        try:
            if not isinstance(stmt.op, ast.Add):
                raise Unknown(f"{name} is changed when the module runs")
            env[name] = ev(ast.BinOp(left=ast.Name(id=name, ctx=ast.Load()), op=stmt.op, right=stmt.value))
        except Exception as e:  # noqa: BLE001
            env[name] = e if isinstance(e, Unknown) else Unknown(str(e))
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        env[stmt.name] = Unknown(f"{stmt.name} is a {'class' if isinstance(stmt, ast.ClassDef) else 'function'}")
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names:
            n = (a.asname or a.name).split(".")[0]
            env[n] = Unknown(f"{n} is a module")


def sub_bodies(stmt):
    for field in ("body", "orelse", "finalbody"):
        yield getattr(stmt, field, None) or []
    for h in getattr(stmt, "handlers", None) or []:
        yield h.body
    for c in getattr(stmt, "cases", None) or []:
        yield c.body


def module_env(body, env):
    """Module-level bindings, in order, descending into if/try/with blocks."""
    for stmt in body:
        bind_assignment(stmt, env)
        if isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ in ("TryStar", "Match"):
            for b in sub_bodies(stmt):
                module_env(b, env)
    return env


class Finder:
    """The helper's calls, each with the values its arguments have where it stands."""

    def __init__(self, tree):
        self.names, self.modules = set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == HELPER_MODULE:
                for a in node.names:
                    if a.name == HELPER:
                        self.names.add(a.asname or a.name)
            elif isinstance(node, ast.ImportFrom) and node.module == "utils":
                for a in node.names:
                    if a.name == "cuda_helpers":
                        self.modules.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == HELPER_MODULE:
                        self.modules.add(a.asname or a.name)
        self.found = []  # (lineno, args dict | None, why)

    def is_helper(self, call):
        f = call.func
        if isinstance(f, ast.Name):
            return f.id in self.names
        if isinstance(f, ast.Attribute) and f.attr == HELPER:
            return _text(f.value) in self.modules
        return False

    def calls_in(self, node, env):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and self.is_helper(sub):
                self.record(sub, env)

    def record(self, call, env):
        ev = Evaluator(env)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            self.found.append((call.lineno, None, "its arguments are unpacked (*args, **kwargs) when the module runs"))
            return
        if len(call.args) > len(keys.PARAMETERS) or any(k.arg not in keys.PARAMETERS for k in call.keywords):
            return  # a TypeError in the rank, as with the original's helper
        args = dict(zip(keys.PARAMETERS, call.args))
        args.update({k.arg: k.value for k in call.keywords})
        if "name" not in args or "cuda_src" not in args:
            return  # a TypeError in the rank too
        try:
            values = {k: ev(v) for k, v in args.items()}
        except Unknown as e:
            self.found.append((call.lineno, None, str(e)))
            return
        except Exception as e:  # noqa: BLE001
            self.found.append((call.lineno, None, f"its arguments fail before the run: {e}"))
            return
        self.found.append((call.lineno, values, ""))

    def walk(self, body, env):
        """Statements in order: assignments update `env` (a function's locals over the
        module's constants), calls are recorded where they stand."""
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local = dict(env)
                a = stmt.args
                for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
                    local[p.arg] = Unknown(f"{p.arg} is a parameter of {stmt.name}()")
                for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
                    self.calls_in(d, env)
                self.walk(stmt.body, local)
                continue
            if isinstance(stmt, ast.ClassDef):
                self.walk(stmt.body, dict(env))
                continue
            compound = bool(list(sub_bodies(stmt))) and not isinstance(stmt, (ast.Assign, ast.Expr))
            if compound:
                for field in ("test", "iter", "target", "subject"):
                    if getattr(stmt, field, None) is not None:
                        self.calls_in(getattr(stmt, field), env)
                for item in getattr(stmt, "items", None) or []:
                    self.calls_in(item.context_expr, env)
                for b in sub_bodies(stmt):
                    self.walk(b, env)
            else:
                self.calls_in(stmt, env)
                if env is not self.module:
                    bind_assignment(stmt, env)

    def run(self, tree):
        self.module = module_env(tree.body, {})
        self.walk(tree.body, self.module)
        return self.found


def check_module(tree, path):
    """Why `tree` is no original-format candidate pkb can run, or None."""
    bound = set()
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                bound.update(assigned_names(t))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
    for node in ast.walk(tree):
        mods = []
        if isinstance(node, ast.ImportFrom) and node.module:
            mods = [node.module] + [node.module + "." + a.name for a in node.names]
        elif isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        if any(m == PARALLELKITTENS for m in mods):
            return ("a ParallelKittens candidate: it needs the original's utils.parallelkittens_runtime "
                    "(TKParallelTensor and its barriers, set up by ThunderKittens' own IPC broker) and ThunderKittens "
                    "built into its extension, and it assumes 8 GPUs; pkb provides neither: port it to a "
                    "ThunderKittens candidate of pkb's C ABI (solutions_tk/, --tk-dir)")
    if "solution" not in bound:
        return ("it defines no solution(*inputs) at module level (an original-format candidate does; a pkb Python "
                "candidate defines pkb_run(ctx, inputs, outputs))")
    return None


def toolchain(device, arch):
    import torch
    parts = [f"torch {torch.__version__} cuda {torch.version.cuda}", sys.version, device, arch]
    if device == "cuda":
        home = os.environ.get("CUDA_HOME", "")
        nvcc = os.path.join(home, "bin", "nvcc") if home else "nvcc"
        try:
            parts.append(subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout)
        except (OSError, subprocess.SubprocessError) as e:
            parts.append(f"no nvcc: {e}")
    cxx = os.environ.get("CXX", "c++")
    try:
        parts.append(subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout)
    except (OSError, subprocess.SubprocessError) as e:
        parts.append(f"no {cxx}: {e}")
    return "\n".join(parts)


def build_one(values, device, arch, folder):
    """Builds one extension as the original's helper would, into `folder` (made here,
    atomically: a folder of its own renamed into place)."""
    from torch.utils import cpp_extension as ce
    name = values["name"]
    cflags = list(values.get("extra_cuda_cflags") or [])
    includes = list(values.get("extra_include_paths") or [])
    ldflags = list(values.get("extra_ldflags") or [])
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".build-", dir=parent)
    try:
        main = os.path.join(tmp, "main.cpp")
        if device == "cuda":
            os.environ["TORCH_CUDA_ARCH_LIST"] = arch
            with open(main, "w") as f:
                f.write("#include <torch/extension.h>\n")
            cu = os.path.join(tmp, "cuda.cu")
            with open(cu, "w") as f:
                f.write("\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>",
                                   values["cuda_src"]]))
            sources, cuda_flags, host_flags, with_cuda = [main, cu], ["-O3"] + cflags, [], True
        else:
            with open(main, "w") as f:
                f.write("#include <torch/extension.h>\n" + values["cuda_src"])
            sources, cuda_flags, host_flags, with_cuda = [main], [], ["-O3"] + cflags, False
        ce._write_ninja_file_and_build_library(
            name=name, sources=sources, extra_cflags=host_flags, extra_cuda_cflags=cuda_flags,
            extra_sycl_cflags=[], extra_ldflags=ldflags, extra_include_paths=includes, build_directory=tmp,
            verbose=False, with_cuda=with_cuda, with_sycl=False, is_standalone=False)
        if not os.path.isfile(os.path.join(tmp, name + ".so")):
            raise RuntimeError(f"torch's build left no {name}.so")
        try:
            os.rename(tmp, folder)
        except OSError:
            if not os.path.isfile(os.path.join(folder, name + ".so")):  # not a concurrent build's
                raise
    finally:
        if os.path.isdir(tmp):
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--arch", default="9.0")
    ap.add_argument("--cache")
    ap.add_argument("--manifest")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if not a.list and not (a.cache and a.manifest):
        ap.error("--cache and --manifest are needed to build")
    base = os.path.basename(a.source)
    try:
        with open(a.source, encoding="utf-8") as f:
            text = f.read()
        tree = ast.parse(text, a.source)
    except SyntaxError as e:
        sys.exit(f"{type(e).__name__}: {e.msg} ({base}, line {e.lineno})")
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"cannot read {base}: {e}")
    why = check_module(tree, a.source)
    if why:
        sys.exit(why)

    found = Finder(tree).run(tree)
    if a.list:
        print(json.dumps([{"line": line, "name": v["name"] if v else None, "key": keys.call_key(**v) if v else None,
                           "why": why} for line, v, why in found]))
        return
    manifest = {"extensions": {}, "unresolved": []}
    fingerprint = None
    for line, values, why in found:
        if values is None:
            manifest["unresolved"].append({"line": line, "why": why})
            print(f"line {line}: not built before the run: {why}")
            continue
        if not isinstance(values.get("name"), str) or not isinstance(values.get("cuda_src"), str):
            manifest["unresolved"].append({"line": line, "why": "its name and source are not strings"})
            continue
        k = keys.call_key(**values)
        if k in manifest["extensions"]:
            continue
        if fingerprint is None:
            import shutil
            if not shutil.which("ninja"):
                print(f"extension {values['name']!r} (compile_cuda_extension at {base} line {line}) needs ninja, which "
                      "torch's cpp_extension builds with and which is not on PATH: install ninja-build (apt) or "
                      "ninja (pip)", file=sys.stderr)
                sys.exit(3)
            fingerprint = toolchain(a.device, a.arch)
        import hashlib
        folder = os.path.join(a.cache, hashlib.sha256((k + "\n" + fingerprint).encode()).hexdigest()[:32])
        so = os.path.join(folder, values["name"] + ".so")
        t0 = time.time()
        if os.path.isfile(so):
            state = "cached"
        else:
            try:
                build_one(values, a.device, a.arch, folder)
            except Exception as e:  # noqa: BLE001 (the compiler's output is in the message)
                print(str(e), file=sys.stderr)
                print(f"extension {values['name']!r} (compile_cuda_extension at {base} line {line}) does not compile",
                      file=sys.stderr)
                sys.exit(3)
            state = f"built in {time.time() - t0:.1f} s"
        manifest["extensions"][k] = {"name": values["name"], "path": so, "line": line}
        print(f"line {line}: extension {values['name']}: {state}")
    with open(a.manifest, "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
