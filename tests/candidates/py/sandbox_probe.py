# BAD CANDIDATE for coll_allreduce (CPU device, Python), a pkb sandbox test.
# Expected verdict: integrity_violation (its Unix-domain socket, the first call seccomp denies)
#
# The Python twin of cpu/sandbox_probe.cpp: on its first call it tries, printing one line
# per attempt ("probe <what> <target>: allowed | denied (<error>) | failed (<error>)"), to
# leave a file in /dev/shm, /tmp, /var/tmp, the user's real home, pkb's cache, its own
# folder, the current folder and the folder that holds every candidate's Triton cache (its
# own TRITON_CACHE_DIR is its to write); to read /etc/shadow, ~/.ssh/*, cloud and git
# credentials, pkb's and another rank's /proc/<pid>/environ and cmdline; to open a
# Unix-domain socket; to signal pkb and get a handle on it. PKB_PROBE picks groups (files,
# secrets, unix, signal). Its outputs are right.
import os
import pwd
import socket

import torch


def _wanted(group):
    only = os.environ.get("PKB_PROBE")
    return not only or group in only.split(",")


def _report(what, target, attempt):
    try:
        attempt()
        print(f"probe {what} {target}: allowed", flush=True)
    except OSError as e:
        kind = "denied" if isinstance(e, PermissionError) else "failed"
        print(f"probe {what} {target}: {kind} ({e.strerror})", flush=True)


def _write(path):
    def attempt():
        with open(path, "x") as f:
            f.write("written by a candidate\n")
    _report("write", path, attempt)


def _read(path):
    def attempt():
        with open(path, "rb") as f:
            f.read(64)
    _report("read", path, attempt)


def _homes():
    out = [pwd.getpwuid(os.getuid()).pw_dir]
    if os.environ.get("PKB_TEST_HOME"):
        out.append(os.environ["PKB_TEST_HOME"])
    return out


def _probe_files(rank):
    name = f"pkb-probe-{os.environ.get('PKB_TEST_TAG', 'gallery')}-r{rank}-py"
    dirs = ["/dev/shm", "/tmp", "/var/tmp", *_homes(),
            os.environ.get("PKB_CACHE_DIR") or os.path.join(_homes()[0], ".cache", "pkb"),
            os.path.dirname(os.path.abspath(__file__)), os.getcwd()]
    cache = os.environ.get("TRITON_CACHE_DIR")
    if cache:
        print(f"probe triton-cache {cache}", flush=True)
        dirs.append(os.path.dirname(cache))
    for d in dirs:
        _write(os.path.join(d, name))


def _probe_secrets(rank):
    _read("/etc/shadow")
    for h in _homes():
        keys = ["id_rsa", "id_ed25519"]
        try:
            keys += [n for n in os.listdir(os.path.join(h, ".ssh")) if n not in keys]
        except OSError:
            pass
        for k in keys:
            _read(os.path.join(h, ".ssh", k))
        for f in (".aws/credentials", ".git-credentials", ".netrc", ".docker/config.json"):
            _read(os.path.join(h, f))
    for pid in [_pkb_pid()] + ([os.getpgrp()] if rank > 0 else []):
        _read(f"/proc/{pid}/environ")
        _read(f"/proc/{pid}/cmdline")


def _pkb_pid():
    """The process running the evaluation: the parent, or pkb's fork server's parent."""
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/cmdline", "rb") as f:
            if f.read().split(b"\0")[1:2] != [b"__fork_server"]:
                return parent
        with open(f"/proc/{parent}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return parent


def _probe_unix():
    _report("socket", "AF_UNIX", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())


def _probe_signal():
    parent = _pkb_pid()
    _report("kill", f"pid {parent}", lambda: os.kill(parent, 0))
    _report("pidfd_open", f"pid {parent}", lambda: os.close(os.pidfd_open(parent)))


def pkb_run(ctx, inputs, outputs):
    if ctx.user is None:
        ctx.user = "probed"
        if _wanted("files"):
            _probe_files(ctx.rank)
        if _wanted("secrets"):
            _probe_secrets(ctx.rank)
        if _wanted("unix"):
            _probe_unix()
        if _wanted("signal"):
            _probe_signal()
    x, y = inputs.x, outputs.y
    ctx.barrier()
    acc = torch.zeros(x.shape, dtype=torch.float32)
    for p in range(ctx.world):
        acc += ctx.peer(x, p)
    y.copy_(acc)
    ctx.barrier()
