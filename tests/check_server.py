"""Runs the tests' Python checks (check_problem.py, check_dryrun.py, check_api.py) in
children forked from one process that imported torch once: a check's own start would spend
most of its time on that import (~5 s on the 2-core box), and ctest runs ~90 of them.

ctest starts it before the tests that use it and stops it after them (the python_checks
fixture, tests/CMakeLists.txt); a test finds it by its socket (support.cpp,
run_python_check) and runs the check itself, the same way, where it is not there. A child
runs one check as `python SCRIPT ARGS...` would (sys.argv, sys.path[0], __main__), its
output written back over the connection, then a last line with its exit code.

usage: check_server.py start SOCKET   (returns once it listens; it exits when stopped, or
                                       after 10 minutes without a request)
       check_server.py stop SOCKET
"""
import json
import os
import signal
import socket
import sys
import time

IDLE_S = 600
EXIT_MARK = b"\n\0pkb-check-exit "


def run_check(conn, req):
    """In the forked child: the check, its output into the connection. Never returns."""
    fd = conn.fileno()
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.alarm(max(1, int(req.get("timeout", 900))))  # a check past its time dies, unanswered
    argv = [str(a) for a in req["argv"]]
    os.chdir(req.get("cwd", os.getcwd()))
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    code = 0
    try:
        import runpy

        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if isinstance(e.code, int):
            code = e.code
        elif e.code is not None:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(fd, EXIT_MARK + str(code).encode() + b"\n")
    os._exit(0)


def serve(path, ready):
    # numpy's OpenBLAS would start a thread on import: forking needs the process alone.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # One OpenMP thread a check: ctest already runs a test a core, and two threads of a check
    # spin (libgomp waits busily between parallel regions) on the core another test needs:
    # 5% of the suite's CPU time on the 2-core box (perf, bench/results/fresh_clone_cpu.md).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch  # noqa: F401  (what every check imports; the children inherit it)

    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        os.write(ready, f"not started: {threads} threads after importing torch\n".encode())
        os._exit(0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    srv.bind(path)
    srv.listen(64)
    srv.settimeout(IDLE_S)
    os.write(ready, b"ready\n")
    os.close(ready)
    while True:
        try:
            conn, _ = srv.accept()
        except (socket.timeout, OSError):
            break
        conn.settimeout(30)
        try:
            line = conn.makefile("rb").readline()
            req = json.loads(line)
        except (OSError, ValueError):
            conn.close()
            continue
        if req.get("stop"):
            conn.close()
            break
        conn.settimeout(None)
        if os.fork() == 0:
            srv.close()
            run_check(conn, req)
        conn.close()
    srv.close()
    if os.path.exists(path):
        os.unlink(path)


def start(path):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the server: its own session, no terminal, nothing of ctest's output
        os.close(r)
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            serve(path, w)
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)  # the first child, gone once the server is forked
    said = b""
    deadline = time.time() + 300
    while time.time() < deadline and not said.endswith(b"\n"):
        chunk = os.read(r, 256)
        if not chunk:
            break
        said += chunk
    # Without the server every check still runs, each in its own interpreter.
    print(f"check server at {path}: {said.decode().strip() or 'not started'}")


def stop(path):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
            s.sendall(b'{"stop": true}\n')
        print(f"check server at {path}: stopped")
    except OSError:
        print(f"check server at {path}: not running")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    (start if sys.argv[1] == "start" else stop)(sys.argv[2])
