"""The box a submitted notebook's Jupyter kernel runs in (used by :mod:`course.grading.grade`).

Two levels, chosen per machine (``describe()`` says which one a run got; ``results.json`` records it):

``bwrap``
    bubblewrap is installed and can make namespaces here: the kernel runs in its own PID, network, IPC
    and mount namespaces. It sees the system and Python read-only, its own fresh read-only copy of the
    course, a private ``/tmp`` and one writable folder (its work folder); no repository, no other
    submission, no gradebook, no network; it cannot see (so cannot signal) any process outside its box;
    every process it starts dies with the box (``--unshare-pid --die-with-parent``).
``rlimits``
    no usable bubblewrap: resource limits only (address space, processes, file size, open files, no
    core dumps), the kernel dies with its grading process (``PR_SET_PDEATHSIG``), and the grading
    process, made a child subreaper, sweeps every process the notebook left behind, even ones that
    started their own session. Files are protected by permissions only.

When the grader runs as root, the kernel also runs as another user (``COURSE_GRADE_UID``, one uid per
grading slot from 1500000000 by default): inside bubblewrap as the user namespace's uid; without it as a
real uid (then it cannot write the course, the gradebook or the submissions, nor signal the grader),
which needs Python installed where other users can read it (``describe()`` says when it is not). This file is also the program that starts the kernel:
``python -I -B course/grading/sandbox.py CONFIG_JSON -- KERNEL ARGV`` (it imports nothing from the course).
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

#: First uid the kernels of a root grader run as (one per grading slot: kernels graded at once cannot
#: signal each other either, also those of two graders on one machine: see :func:`claim_uids`). Set
#: ``COURSE_GRADE_UID`` to choose another range.
UID_BASE = int(os.environ.get("COURSE_GRADE_UID", "1500000000"))

#: The kernel uids this grading process holds, by slot: (uid, the socket that holds it).
_claimed: list = []

#: Limits for the kernel and everything it starts (the rlimits level relies on them alone).
LIMITS = {
    "address_space": 16 * 1024**3,  # bytes; not set on the GPU backend (CUDA reserves huge address ranges)
    "processes": 512,  # a pids cgroup's pids.max where the grader can make one (root), else RLIMIT_NPROC per uid
    "file_size": 256 * 1024**2,  # bytes, largest file the kernel may write
    "open_files": 1024,
}

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

_probe_cache: dict = {}


def bwrap_path() -> str | None:
    """bubblewrap's path when it is installed and can create namespaces on this machine, else None."""
    if "bwrap" in _probe_cache:
        return _probe_cache["bwrap"]
    path = shutil.which("bwrap")
    ok = None
    if path and os.environ.get("COURSE_GRADE_SANDBOX", "") != "rlimits":
        try:
            # the same namespaces the kernel gets; as root also as an unprivileged uid, as the kernel runs
            cmd = [path, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid",
                   "--unshare-net", "--unshare-ipc", "--die-with-parent", "true"]
            if os.geteuid() == 0:  # as the kernels will run: another uid, in a user namespace
                cmd[1:1] = ["--unshare-user", "--uid", str(UID_BASE), "--gid", str(UID_BASE)]
            r = subprocess.run(cmd, capture_output=True, timeout=20)
            ok = path if r.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            ok = None
    _probe_cache["bwrap"] = ok
    return ok


def level() -> str:
    """'bwrap' or 'rlimits' (see the module docstring); ``COURSE_GRADE_SANDBOX=rlimits`` forces the fallback."""
    return "bwrap" if bwrap_path() else "rlimits"


def describe() -> dict:
    """What the sandbox of this run gives, for results.json and the README's table."""
    uid = uid_for(0)
    why = ""
    if uid is None:
        why = ("the grader is not root" if os.geteuid() != 0 else
               "Python is installed where other users cannot read it (e.g. under /root), and there is no bwrap")
    return {"level": level(), "other_uid": uid is not None, "other_uid_why_not": why,
            "pid_namespace": level() == "bwrap", "network": "none" if level() == "bwrap" else "the grader's",
            "filesystem": ("system and Python read-only, one writable work folder, private /tmp"
                           if level() == "bwrap" else "permissions only"),
            "process_limit": (f"pids cgroup, pids.max={LIMITS['processes']}" if pids_cgroup_root() else
                              f"RLIMIT_NPROC={LIMITS['processes']} for the kernel's own uid"
                              if uid is not None and level() == "rlimits" else "none (no cgroup to make, no uid)"),
            "limits": {k: v for k, v in LIMITS.items() if k != "processes"}}


def pids_cgroup_root() -> str | None:
    """A cgroup folder (v1 ``pids`` hierarchy, or v2 with the pids controller) this process may create
    cgroups in, else None: a box's process count is then capped for every uid, root's included."""
    if os.geteuid() != 0:
        return None
    for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
        try:
            if root.endswith("pids"):
                ok = os.path.isfile(os.path.join(root, "cgroup.procs"))
            else:
                with open(os.path.join(root, "cgroup.subtree_control")) as f:  # enabled for children already
                    ok = "pids" in f.read().split()
            if ok and os.access(root, os.W_OK):
                return root
        except OSError:
            continue
    return None


def new_pids_cgroup(name: str, limit: int) -> str | None:
    """Make cgroup ``name`` with ``pids.max = limit``; its path, or None where the machine has none to give."""
    root = pids_cgroup_root()
    if root is None:
        return None
    path = os.path.join(root, name)
    try:
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "pids.max"), "w") as f:
            f.write(str(limit))
        return path
    except OSError:
        return None


def remove_cgroup(path: str | None):
    if path:
        try:
            os.rmdir(path)
        except OSError:
            pass


def remove_stale_cgroups():
    """Remove the empty cgroups of grading processes that are gone (one killed before it could clean up)."""
    root = pids_cgroup_root()
    for path in glob.glob(os.path.join(root, "course-grade-*-*")) if root else []:
        try:
            os.kill(int(os.path.basename(path).split("-")[2]), 0)
        except ProcessLookupError:
            remove_cgroup(path)
        except (ValueError, IndexError, OSError):
            pass


def python_paths() -> list:
    """The folders a kernel must read to start Python (the interpreter, the standard library, site-packages)."""
    import site
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths |= {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= set(getattr(site, "getsitepackages", lambda: [])())
    return sorted(p for p in paths if p and os.path.isdir(p))


def others_can_read(path: str) -> bool:
    """True when a user who is neither the owner nor in the group can reach and read ``path``."""
    import stat

    p = os.path.realpath(path)
    parts = p.split(os.sep)
    for i in range(1, len(parts) + 1):
        d = os.sep.join(parts[:i]) or os.sep
        try:
            mode = os.stat(d).st_mode
        except OSError:
            return False
        need = stat.S_IXOTH | (stat.S_IROTH if i == len(parts) else 0)
        if mode & need != need:
            return False
    return True


def others_can_enter(path: str) -> bool:
    """True when a user who is neither the owner nor in the group can reach the folder ``path``."""
    import stat

    parts = os.path.realpath(path).split(os.sep)
    for i in range(1, len(parts) + 1):
        try:
            if not os.stat(os.sep.join(parts[:i]) or os.sep).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def scratch_parent(default: str) -> str:
    """Where the kernels' work folders go: ``default`` (TMPDIR), unless kernels run as another real uid
    (no bubblewrap) that cannot reach it; then the first of /tmp, /var/tmp, /dev/shm it can reach."""
    if uid_for(0) is None or bwrap_path() or others_can_enter(default):
        return default
    return next((d for d in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(d) and others_can_enter(d)), default)


def claim_uids(n: int, tries: int = 4096) -> list:
    """Hold ``n`` kernel uids from ``UID_BASE`` up that no other grading process on this machine holds now.

    Two graders side by side (two shards of one class on one machine) would otherwise both run their slot 0
    kernels as ``UID_BASE``: without bubblewrap, one's notebook could then kill the other's kernel. A uid
    is held by binding an abstract Unix socket named after it (Linux): nothing is written anywhere, and it
    is released when the process (and the grading workers it forked) have closed it or exited."""
    import socket

    release_uids()
    if not sys.platform.startswith("linux"):
        return []
    for uid in range(UID_BASE, UID_BASE + tries):
        if len(_claimed) >= n:
            break
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(f"\0course-grade-uid-{uid}")
        except OSError:
            s.close()
            continue
        _claimed.append((uid, s))
    return [uid for uid, _s in _claimed]


def release_uids():
    while _claimed:
        _claimed.pop()[1].close()


def uid_for(slot: int) -> int | None:
    """The uid the kernel of grading slot ``slot`` runs as, or None (the grader's own).

    Only a root grader can give kernels another uid. Inside bubblewrap the uid is the user namespace's
    (the box has no other way out); without it the kernel really becomes that user, which works only
    when Python is readable by other users. The uid is the slot's of :func:`claim_uids` where this
    process claimed some, else ``UID_BASE + slot``."""
    if os.geteuid() != 0:
        return None
    if bwrap_path() or all(others_can_read(p) for p in python_paths()):
        return _claimed[slot][0] if slot < len(_claimed) else UID_BASE + slot
    return None


def become_subreaper():
    """Make this process the reaper of every orphan below it, so that :func:`sweep` finds them all."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def descendants(pid: int | None = None) -> list:
    """Every process below ``pid`` (this process by default), from /proc."""
    pid = os.getpid() if pid is None else pid
    parent = {}
    for d in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(d, "rb") as f:
                text = f.read().decode("ascii", "replace")
            fields = text[text.rindex(")") + 2:].split()
            parent[int(d.split("/")[2])] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def sweep(keep=()) -> int:
    """SIGKILL every descendant of this process (except ``keep``) until none is left; the number killed.

    With the process a child subreaper, a process that double-forked or started its own session is still
    a descendant, so nothing a notebook started outlives its grading."""
    killed = 0
    for _ in range(50):
        victims = [p for p in descendants() if p not in keep]
        if not victims:
            break
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:  # reap what we killed (we are their parent or reaper)
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.02)
    return killed


def bwrap_args(bwrap: str, work: str, ro_paths: list, env: dict) -> list:
    """bubblewrap's command line for a kernel: system and Python read-only, ``work`` writable, nothing else."""
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"):
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    args += ["--bind", work, work]
    for p in sorted(set(ro_paths)):  # after the work folder: the course copy inside it stays read-only
        if os.path.exists(p) and not p.startswith(tuple(os.path.join(os.sep, d, "") for d in ("usr", "etc", "opt"))):
            args += ["--ro-bind", p, p]
    for dev in sorted(glob.glob("/dev/nvidia*")):  # the GPU, where there is one (its driver reads /sys too)
        args += ["--dev-bind", dev, dev]
    if glob.glob("/dev/nvidia*"):
        args += ["--ro-bind-try", "/sys", "/sys"]
    args += ["--chdir", work]
    return args


def _set_limits(cfg):
    import resource

    def lim(which, value):
        try:
            soft, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    limits = cfg.get("limits", LIMITS)
    lim(resource.RLIMIT_CORE, 0)
    lim(resource.RLIMIT_FSIZE, limits["file_size"])
    lim(resource.RLIMIT_NOFILE, limits["open_files"])
    if cfg.get("uid") is not None and not cfg.get("bwrap"):  # a real uid of its own: count its processes
        lim(resource.RLIMIT_NPROC, limits["processes"])
    if cfg.get("address_space", True):
        lim(resource.RLIMIT_AS, limits["address_space"])


def _chown_tree(path, uid, skip=()):
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
        for name in [root] + [os.path.join(root, x) for x in files]:
            try:
                os.lchown(name, uid, uid)
            except OSError:
                pass


def main(argv) -> int:
    """Start a kernel in the box: ``sandbox.py CONFIG_JSON -- ARGV...`` (see the module docstring)."""
    cfg = json.loads(argv[0])
    cmd = argv[argv.index("--") + 1:]
    uid = cfg.get("uid")
    if cfg.get("cgroup"):  # every process of the box counts against its pids.max (root's too)
        try:
            with open(os.path.join(cfg["cgroup"], "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            pass
    if uid is not None and not cfg.get("bwrap"):
        # the work folder (connection file, home, tmp) becomes the kernel's; its course copy stays root's
        _chown_tree(cfg["work"], uid, skip=set(cfg.get("readonly", [])))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _set_limits(cfg)
    try:  # die with the grading process (set after setuid, which clears it)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if cfg.get("bwrap"):
        box = bwrap_args(cfg["bwrap"], cfg["work"], cfg.get("ro_paths", []), os.environ)
        if uid is not None:  # root: the kernel is another user in its own user namespace
            box[1:1] = ["--unshare-user", "--uid", str(uid), "--gid", str(uid)]
        cmd = box + ["--"] + cmd
        # in its own PID namespace the kernel's parent is pid 1, which ipykernel takes for "my parent died":
        # the box's --die-with-parent does that job instead
        os.environ.pop("JPY_PARENT_PID", None)
    os.execvp(cmd[0], cmd)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
