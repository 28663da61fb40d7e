"""Grade a class: ``make grade SUBMISSIONS=dir/ [RELEASE=build/student] [JOBS=2] [OUT=build/grades]``.

Each entry of SUBMISSIONS is one student: a folder (their copy of the course)
or a git bundle ``name.bundle`` (``git bundle create name.bundle --all`` in
their copy); the student's id is the folder's (or bundle's) name.  For each:

1. the tree is copied into a scratch folder (without ``.git``, ``.venv``,
   caches), and every file of the course a student must not change (tests,
   tools, ``conftest.py``, ``Makefile``, ``pyproject.toml``, ``student.json``,
   ``release.json``) is replaced by the release's own (RELEASE, the copy that
   was handed out; its ``release.json`` lists them): an edited test changes
   nothing, and the gradebook names the files that differed;
2. one fresh ``python -m pytest`` runs there, in a sandbox (below), for the
   tests of the graded exercises: those marked ``@pytest.mark.exercise("N.M")``
   and those that run its regions (``tools/dependencies.json``), within the
   graded chapters (MODE=fast: the marked ones only; MODE=full: every test of
   those chapters); a test past TEST_LIMIT seconds fails, the whole run is
   killed at LIMIT seconds (an endless loop costs its limit only);
3. an exercise scores 1 when every one of its tests that ran passed (at least
   one), 0 otherwise, the rule of ``make test``'s progress table.

The sandbox (bubblewrap, ``bwrap``; Debian's package ``bubblewrap``): the whole
file system read-only, the submission's working copy writable except the
course's files (tests, tools, ``conftest.py``, ``Makefile``, ``pyproject.toml``,
still read-only), a private ``/tmp``, the other submissions and the gradebook
hidden, no network, its own process tree; an unprivileged user of its own (when
the grader runs as root); limits on memory (MEMORY, address space), processes
and file size.  The results come back through a pipe, each line signed with a
key the run's code never sees before the grading plugin has taken it
(``tools/grade_plugin.py``): a line the submission writes, a replaced pytest
or NumPy function, a report that says "passed" for a test that raised, each
ends as a failure.  A run that ends before its last test (``os._exit``, a
signal, a killed process) is resumed after the test it ended in, which fails
with what happened ("exited early at 14 s").  Without bwrap, ``make grade``
says so on its output and in every student's status, and grades without it.

Up to JOBS students are graded at once.  Written to OUT:

* ``gradebook.csv``: one row per student, one column per released exercise
  (1/0), then total, max, status, changed course files, seconds;
* ``results/<student>/results.json``: Gradescope's autograder format (``tests``
  with name, number, score, max_score, status, output; top-level score,
  execution_time, output);
* ``junit.xml``: one test suite per student, one test case per exercise, the
  exercise id in its properties;
* ``logs/<student>.txt``: the run's output.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import csv
import json
import os
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):                       # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "tools"

from tools import exercises, grade_plugin, release  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# Files that change how Python or pytest start: never taken from a submission.
STARTUP_FILES = ("pytest.ini", "tox.ini", "setup.cfg", "sitecustomize.py",
                 "usercustomize.py", "student.json", release.MANIFEST)
# Tests that check the course's texts and tools, not the student's code.
NOT_GRADED = ("tests/site", "tests/docs", "tools/tests")


@dataclass
class Outcome:
    student: str
    scores: dict = field(default_factory=dict)       # exercise id -> 1 / 0
    details: dict = field(default_factory=dict)      # exercise id -> text
    status: str = "graded"
    changed: list = field(default_factory=list)      # course files the student changed
    seconds: float = 0.0
    tests_passed: int = 0
    tests_run: int = 0

    @property
    def total(self):
        return sum(self.scores.values())


# ------------------------------------------------------------ the sandbox

NO_SANDBOX = "NO SANDBOX"
# Each run of a submission: address space, processes of its user, bytes per file.
MEMORY = 4 * 2**30
PROCESSES = 256
FILE_SIZE = 2**30
MAX_RUNS = 8            # a run that ends early is resumed at most this often
_UIDS = list(range(61000, 61064))      # one unprivileged user per submission graded at once
_UIDS_LOCK = threading.Lock()


def sandbox_problem() -> str | None:
    """Why submissions cannot be sandboxed here (None: bwrap works)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return ("bubblewrap (bwrap) is not installed: install it with "
                "`apt-get install -y bubblewrap` (Debian, Ubuntu) or `dnf install bubblewrap`")
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--unshare-net", "--unshare-pid", "--die-with-parent", "true"]
    if os.geteuid() != 0:
        probe.insert(1, "--unshare-user")
    done = subprocess.run(probe, capture_output=True, text=True)
    if done.returncode:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        return f"bwrap cannot make a sandbox here ({first})"
    return None


def sandbox_command(work: Path, hidden, read_only, uid) -> list[str]:
    """bwrap's command line: everything read-only but ``work``, which is writable
    except its ``read_only`` paths; ``hidden`` folders replaced by empty ones."""
    cmd = [shutil.which("bwrap"), "--die-with-parent", "--new-session", "--unshare-net",
           "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
           "--perms", "1777", "--tmpfs", "/tmp",
           "--perms", "1777", "--tmpfs", "/dev/shm"]     # MPI's shared memory (UCX)
    if os.geteuid() != 0:
        cmd.insert(1, "--unshare-user")
    emptied = [Path("/tmp")]
    for folder in hidden:
        if folder.is_dir() and not folder.resolve().is_relative_to("/tmp"):
            cmd += ["--tmpfs", str(folder.resolve())]
            emptied.append(folder.resolve())
    python = _python_behind_closed_folders() if uid is not None else {}
    for closed in sorted(set(python.values())):     # e.g. /root (0700) holding the Python
        cmd += ["--perms", "0755", "--tmpfs", str(closed)]
        emptied.append(closed)
    made = set()
    shown = [work] + [p for p in read_only if not p.is_relative_to(work)] + sorted(python)
    for target in shown:
        for parent in reversed(target.parents):    # bwrap would make them 0700
            if any(parent.is_relative_to(e) and parent != e for e in emptied) \
                    and parent not in made:
                cmd += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
    for folder in sorted(python):
        cmd += ["--ro-bind", str(folder), str(folder)]
    cmd += ["--bind", str(work), str(work)]
    for path in read_only:
        cmd += ["--ro-bind", str(path), str(path)]
    cmd += ["--chdir", str(work), "--setenv", "HOME", "/tmp", "--"]
    return cmd + _drop_privileges(uid)


def _python_behind_closed_folders() -> dict:
    """{folder of this Python: the first folder above it that other users cannot
    enter}: for a Python installed in /root (0700), say; the sandbox shows the
    Python's folders to its own user through an empty folder in its place."""
    found = {}
    for folder in {Path(os.path.realpath(sys.executable)).parent.parent,
                   Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}:
        for parent in reversed(folder.parents):
            if parent != Path("/") and not parent.stat().st_mode & 0o001:
                found[folder] = parent
                break
    return found


def _drop_privileges(uid) -> list[str]:
    setpriv = shutil.which("setpriv")
    if uid is None or setpriv is None:
        return []
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


def _limits(memory, processes, file_size):
    def apply():                      # in the child, before bwrap starts
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if processes is not None:     # counted per user: only for the sandbox's own
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _gib(n) -> str:
    return f"{n / 2**30:g} GiB"


@dataclass
class Run:
    """One pytest run of a submission: what came back."""
    returncode: int | None
    output: bytes
    records: list
    rejected: int
    seconds: float
    timed_out: bool
    stalled: bool = False
    crowded: bool = False         # killed while its user had all the processes it may


def run_once(cmd, work: Path, env: dict, *, timeout: float, sandboxed: bool, uid, stall=None,
             memory=MEMORY, processes=PROCESSES, file_size=FILE_SIZE, hidden=(),
             read_only=()) -> Run:
    """Run ``cmd`` (pytest with tools.grade_plugin) for ``work``; its report
    comes back through a pipe, signed with a key of this run.  Killed at
    ``timeout`` seconds, or when the report stays silent ``stall`` seconds
    after its first line (a test that ignores the per-test limit)."""
    key = secrets.token_bytes(32)
    report_r, report_w = os.pipe()
    key_r, key_w = os.pipe()
    os.write(key_w, key)
    os.close(key_w)
    env = dict(env, MINIGRAD_GRADE_FD=str(report_w), MINIGRAD_GRADE_KEY_FD=str(key_r))
    full = (sandbox_command(work, hidden, read_only, uid) if sandboxed
            else _drop_privileges(uid)) + cmd
    chunks = []
    reader = threading.Thread(target=_drain, args=(report_r, chunks), daemon=True)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(full, cwd=work, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                pass_fds=(report_w, key_r),
                                preexec_fn=_limits(memory, processes if uid is not None
                                                   else None, file_size))
    finally:
        os.close(report_w)
        os.close(key_r)
    reader.start()
    output = []
    collector = threading.Thread(target=lambda: output.append(proc.stdout.read()), daemon=True)
    collector.start()
    timed_out, stalled, crowded = False, False, False
    while proc.poll() is None:
        now = time.monotonic()
        if now - start > timeout:
            timed_out = True
        # a test silent past its three phases' limits ignored the per-test alarm
        elif stall and chunks and now - chunks[-1][0] > stall:
            stalled = True
        if timed_out or stalled:
            crowded = uid is not None and _processes_of(uid) >= processes - 2
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(0.1)
    collector.join(timeout=10)
    seconds = time.monotonic() - start
    reader.join(timeout=10)
    records, rejected = grade_plugin.read_records(b"".join(c for _, c in chunks), key)
    return Run(proc.returncode, b"".join(output), records, rejected, seconds, timed_out,
               stalled, crowded)


def _processes_of(uid) -> int:
    """How many processes (threads count too) the sandbox's user has now."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def _drain(fd, chunks):
    with open(fd, "rb", buffering=0) as f:
        while True:
            data = f.read(65536)
            if not data:
                return
            chunks.append((time.monotonic(), data))


def _how_it_ended(run: Run, at: float) -> str:
    if run.returncode is not None and run.returncode < 0:
        name = signal.Signals(-run.returncode).name
        return f"killed by {name} at {at:.0f} s" + (
            " (memory limit?)" if name in ("SIGKILL", "SIGSEGV", "SIGABRT", "SIGBUS") else "")
    if run.returncode is not None and run.returncode > 128 and \
            run.returncode - 128 in signal.valid_signals():
        name = signal.Signals(run.returncode - 128).name
        return f"killed by {name} at {at:.0f} s" + (
            " (memory limit?)" if name in ("SIGKILL", "SIGSEGV", "SIGABRT", "SIGBUS") else "")
    return f"exited early at {at:.0f} s (exit status {run.returncode})"


# ------------------------------------------------------------ one student

def grade_one(submission: Path, release_dir: Path, manifest: dict, *, work_root: Path,
              log_dir: Path, limit: float, test_limit: float, only=None,
              mode: str = "exercises", paths=("tests",), sandboxed: bool = True,
              memory: int = MEMORY, processes: int = PROCESSES, hidden=()) -> Outcome:
    """Grade one submission (a folder or a git bundle) in fresh processes."""
    name = student_id(submission)
    outcome = Outcome(name)
    start = time.monotonic()
    work = work_root / name
    try:
        outcome.changed = prepare(submission, work, release_dir, manifest)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        outcome.status = f"error: cannot read the submission ({e})"
        outcome.scores = {i: 0 for i in only or manifest["released"]}
        outcome.seconds = time.monotonic() - start
        return outcome
    control = work_root / f"{name}.control"          # read-only in the sandbox
    control.mkdir(exist_ok=True)
    graded = only or manifest["released"]
    chapters = ["--chapter", f"1-{max(exercises.chapter_of(i) for i in graded)}"]
    selection = {"full": chapters,
                 "exercises": chapters + ["--grade-exercises", ",".join(graded)],
                 "fast": ["--exercise", ",".join(graded)]}[mode]
    cmd = [sys.executable, "-m", "pytest", *test_paths(work, paths), "-q",
           "-p", "no:cacheprovider", "-c", str(work / "pyproject.toml"),
           "--rootdir", str(work), "-p", "tools.grade_plugin",
           "--grade-skip", str(control / "skip.json"),
           "--grade-test-limit", str(test_limit), "--tb=short", *selection]
    env = dict(os.environ, PYTHONPATH=str(work), PYTHONDONTWRITEBYTECODE="1",
               MINIGRAD_HYPOTHESIS_PROFILE="ci", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    for variable in ("PYTHONSTARTUP", "PYTHONINSPECT", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(variable, None)
    read_only = [work / rel for rel in list(release.PROTECTED) + ["student.json",
                                                                  release.MANIFEST]
                 if (work / rel.rstrip("/")).exists()] + [control]
    read_only = [Path(str(p).rstrip("/")) for p in read_only]
    uid = _take_uid() if sandboxed and os.geteuid() == 0 and shutil.which("setpriv") \
        else None
    notes, records, skip, outputs = [], [], set(), []
    broken = False          # the run ended early, or its report was forged
    try:
        if uid is not None:
            _give(work, uid)
        for attempt in range(MAX_RUNS):
            left = limit - (time.monotonic() - start)
            if left <= 0:
                break
            if attempt:
                _sanitize(work, release_dir)          # what the last run wrote at the top
            (control / "skip.json").write_text(json.dumps(sorted(skip)), encoding="utf-8")
            run = run_once(cmd, work, env, timeout=left, sandboxed=sandboxed, uid=uid,
                           stall=3 * test_limit + 5 if test_limit else None,
                           memory=memory, processes=processes, hidden=hidden,
                           read_only=read_only)
            outputs.append(run.output)
            at = time.monotonic() - start
            if run.rejected:
                notes.append(f"{run.rejected} forged report line(s) rejected")
                broken = True
            started, finished, tampered = None, False, None
            for record in run.records:
                if "start" in record:
                    started = record["start"]
                    skip.add(started)
                elif "finished" in record:
                    finished = True
                elif "tampered" in record:
                    tampered = record
                else:
                    records.append(record)
            if run.timed_out:
                outcome.status = f"time limit: killed after {limit:g} s"
                if run.crowded:
                    notes.append(f"process limit ({processes}) reached")
                break
            if finished:
                if run.returncode not in (0, 1, 5):
                    notes.append(f"pytest ended with exit status {run.returncode}")
                break
            broken = True
            if tampered is not None:
                what = ", ".join(tampered["tampered"])
                if tampered.get("nodeid") is None:
                    notes.append(f"tampered with the test runner while it loaded the "
                                 f"submission ({what}): no result counts")
                    records = [r for r in records if "collected" in r]
                    break
                notes.append(f"tampered with the test runner in {tampered['nodeid']} "
                             f"({what}): that test fails")
                records.append(_blame(tampered["nodeid"], "forged: the test runner was "
                                      f"tampered with ({what})"))
                continue
            if started is None:
                notes.append(_how_it_ended(run, at) + " before any test ran")
                break
            how = (f"time limit: killed at {at:.0f} s, silent for {3 * test_limit + 5:g} s"
                   if run.stalled else _how_it_ended(run, at))
            if run.crowded:
                how = f"process limit ({processes}) reached; {how}"
            notes.append(f"{how} in {started}; the tests after it ran in a new process")
            records.append(_blame(started, f"the test process ended during this test: {how}"))
        else:
            notes.append(f"gave up after {MAX_RUNS} runs that ended early")
    finally:
        if uid is not None:
            _release_uid(uid)
    output = b"\n".join(outputs)
    (log_dir / f"{name}.txt").write_bytes(output)
    score(outcome, records, graded, output.decode("utf-8", "replace"), stubs_left(work))
    notes += _limit_notes(records, memory, processes)
    if not sandboxed:
        notes.insert(0, f"{NO_SANDBOX}: graded without bubblewrap")
    if broken and outcome.status == "graded":
        outcome.status = "error (graded anyway)"
    if notes:
        outcome.status += ": " if broken else "; "
        outcome.status += "; ".join(dict.fromkeys(notes))
    outcome.seconds = time.monotonic() - start
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(control, ignore_errors=True)
    return outcome


def _blame(nodeid, message) -> dict:
    return {"nodeid": nodeid, "when": "call", "outcome": "failed", "message": message,
            "stub": None}


def _limit_notes(records, memory, processes) -> list[str]:
    notes = []
    failed = [r for r in records if r.get("outcome") == "failed"]
    hit = [r["nodeid"] for r in failed if "MemoryError" in (r.get("message") or "")]
    if hit:
        notes.append(f"killed: memory limit ({_gib(memory)}) in {len(hit)} test(s): {hit[0]}")
    hit = [r["nodeid"] for r in failed if "Resource temporarily unavailable"
           in (r.get("message") or "") or "BlockingIOError" in (r.get("message") or "")]
    if hit:
        notes.append(f"process limit ({processes}) reached in {len(hit)} test(s): {hit[0]}")
    hit = [r["nodeid"] for r in failed if "Read-only file system" in (r.get("message") or "")]
    if hit:
        notes.append(f"a write outside the working copy was refused in {hit[0]}")
    hit = [r["nodeid"] for r in failed if "ran past the time limit" in (r.get("message") or "")]
    if hit:
        notes.append(f"time limit per test in {len(hit)} test(s): {hit[0]}")
    return notes


def _take_uid():
    with _UIDS_LOCK:
        return _UIDS.pop(0)


def _release_uid(uid):
    with _UIDS_LOCK:
        _UIDS.append(uid)


def _give(work: Path, uid: int) -> None:
    """The working copy belongs to the sandbox's user (the course's files too:
    they are mounted read-only)."""
    os.chown(work, uid, uid)
    for folder, dirs, files in os.walk(work):
        for entry in dirs + files:
            with contextlib.suppress(OSError):
                os.chown(os.path.join(folder, entry), uid, uid, follow_symlinks=False)


def _sanitize(work: Path, release_dir: Path) -> None:
    """Remove what a run left at the top of the working copy that the release
    does not have (a ``pytest.py`` or ``numpy/`` there would shadow the real one
    in the next run) and the startup files."""
    allowed = {p.name for p in release_dir.iterdir()}
    for path in work.iterdir():
        if path.name not in allowed or path.name in STARTUP_FILES and \
                path.name not in ("student.json", release.MANIFEST):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def student_id(submission: Path) -> str:
    name = submission.name[:-len(".bundle")] if submission.name.endswith(".bundle") \
        else submission.name
    return re.sub(r"[^A-Za-z0-9._@-]", "_", name) or "student"


def prepare(submission: Path, work: Path, release_dir: Path, manifest: dict) -> list[str]:
    """The student's tree at ``work`` with the release's course files; returns
    the course files the submission had changed (or lacked)."""
    if work.exists():
        shutil.rmtree(work)
    if submission.is_file():
        if not submission.name.endswith(".bundle"):
            raise ValueError(f"{submission.name} is neither a folder nor a .bundle")
        clone = work.with_name(work.name + ".clone")
        shutil.rmtree(clone, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", str(submission), str(clone)], check=True,
                       capture_output=True)
        source = clone
    else:
        source = submission
    shutil.copytree(source, work, symlinks=True,
                    ignore=shutil.ignore_patterns(*release.SKIPPED_DIRS, "*.pyc"))
    if source is not submission:
        shutil.rmtree(source, ignore_errors=True)
    files = manifest["files"]
    changed = [rel for rel in manifest["protected"]
               if not (work / rel).is_file() or release.sha256(work / rel) != files[rel]]
    changed += [rel for rel in release.release_files(work)
                if release.is_protected(rel) and rel not in files]
    for rel in ("tests", "tools"):
        shutil.rmtree(work / rel, ignore_errors=True)
    for rel in release.PROTECTED + STARTUP_FILES:
        path = work / rel
        if path.is_file() or path.is_symlink():
            path.unlink()
    for rel in manifest["protected"] + ["student.json", release.MANIFEST]:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(release_dir / rel, work / rel)
    _sanitize(work, release_dir)
    return sorted(changed)


def test_paths(work: Path, paths=("tests",)) -> list[str]:
    """``paths`` without the checks of the course's own texts and tools."""
    return list(paths) + [f"--ignore={p}" for p in NOT_GRADED if (work / p).exists()]


def stubs_left(work: Path) -> set:
    """The exercises whose stub is still in the submission's library."""
    found = set()
    for path in (work / "minigrad").rglob("*.py"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = release.STUB_RE.match(line)
            if match:
                found.add(match.group("id"))
    return found


def score(outcome: Outcome, log, released, output: str, stubs=frozenset()) -> None:
    """Per exercise: 1 when every collected test of it passed, at least one.
    ``log``: the runs' records (or a file of JSON lines).

    A test that stopped at the stub of *another* exercise, still unanswered in
    the submission (``stubs``), proves nothing about this one: it is left out
    (it counts once that exercise is answered).  So is a failed test of a later
    chapter than this exercise's while an exercise of the chapters in between
    (up to the test's) is unanswered: a chapter's tests may use any exercise
    of its chapter and the earlier ones, and a stub can be caught on the way
    (the command line turns one into a message and an exit status)."""
    collected, results = {}, {}
    if isinstance(log, (str, Path)):
        log = Path(log)
        log = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] \
            if log.is_file() else []
    for record in log:                  # the runs' records (a resumed run adds more)
        if "collected" in record:
            collected.update((t["nodeid"], t) for t in record["collected"])
        elif "outcome" in record and (record["outcome"] != "passed"
                                      or record["nodeid"] not in results):
            results[record["nodeid"]] = record
    collected = list(collected.values())
    if not collected and outcome.status == "graded" and stubs and set(released) <= set(stubs):
        outcome.status = "graded: no exercise started"     # every test was held back
    elif not collected and outcome.status == "graded":
        last = [line for line in output.strip().splitlines() if line.strip()]
        outcome.status = "error: no test ran (" + (last[-1][:200] if last else "no output") + ")"
    outcome.tests_run = sum(1 for r in results.values() if r["outcome"] != "skipped")
    outcome.tests_passed = sum(1 for r in results.values() if r["outcome"] == "passed")
    for ident in released:
        tests = [t["nodeid"] for t in collected if ident in t["exercises"]]
        states = [results.get(t, {"outcome": "not run", "message": "not run (time limit)"})
                  for t in tests]
        chapter_of_test = {t["nodeid"]: t.get("chapter") for t in collected}
        waiting = {}
        for t, s in zip(tests, states):
            if s["outcome"] in ("passed", "skipped", "not run"):
                continue
            if s.get("stub") and s["stub"] != ident and s["stub"] in stubs:
                waiting[t] = s["stub"]
            elif not s.get("stub") and chapter_of_test.get(t) is not None:
                between = sorted((x for x in stubs if x != ident and exercises.chapter_of(ident)
                                  < exercises.chapter_of(x) <= chapter_of_test[t]),
                                 key=exercises.sort_key)
                if between:
                    waiting[t] = between[0]
        bad = [(t, s) for t, s in zip(tests, states)
               if s["outcome"] not in ("passed", "skipped") and t not in waiting]
        ran = [s for s in states if s["outcome"] == "passed"]
        outcome.scores[ident] = int(bool(ran) and not bad)
        later = sorted(set(waiting.values()), key=exercises.sort_key)
        if ident in stubs and not ran:
            outcome.details[ident] = ("not started: its stub (NotImplementedError) is "
                                      "still in the library")
        elif not tests:
            outcome.details[ident] = "no test of this exercise ran"
        elif not bad and not ran and waiting:
            outcome.details[ident] = f"its tests wait for exercise(s) {', '.join(later)}"
        elif bad:
            outcome.details[ident] = f"{len(bad)} of {len(tests)} tests failed:\n" + "\n".join(
                f"{t}: {s.get('message', '')}" for t, s in bad[:5])
        elif not ran:
            outcome.details[ident] = f"all {len(tests)} tests were skipped here"
        else:
            outcome.details[ident] = f"all {len(ran)} tests that ran passed" + (
                f"; {len(waiting)} more wait for exercise(s) {', '.join(later)}"
                if waiting else "")


# ------------------------------------------------------------ the class

def grade(submissions: Path, release_dir: Path, out: Path, *, jobs: int = 2,
          limit: float = 600, test_limit: float = 60, only=None,
          mode: str = "exercises", paths=("tests",), sandbox: bool | None = None,
          memory: int = MEMORY, processes: int = PROCESSES) -> list[Outcome]:
    """Grade every submission; write the gradebook, results.json files, JUnit XML.

    ``only``: grade these exercise ids (default: every released one).  ``mode``
    chooses the tests run: "exercises" (default) every test of the graded
    chapters that exercises a graded exercise (marked with it, or running its
    regions by ``tools/dependencies.json``); "fast" only the tests marked with
    one (``--exercise``); "full" every test of the graded chapters.  The rule
    is the same in each: an exercise scores when all its tests that ran passed.
    ``paths``: where pytest looks (a subset such as ``tests/exercises`` is faster).
    ``sandbox``: None runs each submission in bubblewrap when it works here and
    says loudly when it does not; False grades without it (said in every status).
    ``memory`` (bytes) and ``processes``: the sandbox's limits per run."""
    if mode not in ("exercises", "fast", "full"):
        raise ValueError(f"grade: mode must be exercises, fast or full, not {mode!r}")
    release_dir, out = Path(release_dir).resolve(), Path(out).resolve()
    manifest = release.read_manifest(release_dir)
    if manifest is None:
        raise SystemExit(f"make grade: RELEASE={release_dir} is not a release: it has no "
                         f"{release.MANIFEST}; make it with `make student` (the copy you "
                         "handed out) or point RELEASE at it")
    broken = release.check_manifest(release_dir)
    if broken:
        raise SystemExit(f"make grade: the release {release_dir} was changed since it was "
                         f"made ({', '.join(broken[:5])}); make it again with `make student`")
    entries = sorted(p for p in Path(submissions).iterdir()
                     if not p.name.startswith(".") and (p.is_dir() or p.name.endswith(".bundle")))
    if not entries:
        raise SystemExit(f"make grade: no submission in {submissions} (expected one folder "
                         "or .bundle per student)")
    unknown = sorted(set(only or []) - set(manifest["released"]), key=exercises.sort_key)
    if unknown:
        raise SystemExit(f"make grade: EXERCISES names {', '.join(unknown)}, not released in "
                         f"{release_dir} (released: {', '.join(manifest['released'])})")
    names = [student_id(p) for p in entries]
    if len(set(names)) != len(names):
        raise SystemExit(f"make grade: two submissions have the same student id in {names}")
    (out / "logs").mkdir(parents=True, exist_ok=True)
    problem = sandbox_problem() if sandbox is not False else "turned off (--no-sandbox)"
    if problem:
        warn_no_sandbox(problem)
    with tempfile.TemporaryDirectory(prefix="minigrad-grade-") as tmp:
        os.chmod(tmp, 0o755)          # the sandbox's user reaches its working copy
        kept = [Path(sys.prefix).resolve(), release_dir, Path(tmp).resolve()]
        hidden = [f for f in (Path(submissions).resolve(), out, Path(tmp).resolve())
                  if not any(k.is_relative_to(f) for k in kept[:2])]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(grade_one, p, release_dir, manifest, work_root=Path(tmp),
                                   log_dir=out / "logs", limit=limit, test_limit=test_limit,
                                   only=only, mode=mode, paths=paths, sandboxed=not problem,
                                   memory=memory, processes=processes, hidden=hidden)
                       for p in entries]
            outcomes = [f.result() for f in futures]
    if problem:
        warn_no_sandbox(problem)
    write_gradebook(out / "gradebook.csv", outcomes, only or manifest["released"])
    for outcome in outcomes:
        write_gradescope(out / "results" / outcome.student / "results.json", outcome)
    write_junit(out / "junit.xml", outcomes)
    return outcomes


def warn_no_sandbox(problem: str) -> None:
    """Loud, on stderr: grading without the sandbox trusts the students' code."""
    bar = "!" * 78
    print(f"{bar}\nmake grade: {NO_SANDBOX}: {problem}.\n"
          "The students' code runs with your rights: it can read and write your files, "
          "reach the\nnetwork and forge its report.  Every student's status says "
          f"'{NO_SANDBOX}'.\n{bar}", file=sys.stderr, flush=True)


def write_gradebook(path: Path, outcomes, released) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *released, "total", "max", "status",
                         "changed course files", "seconds"])
        for o in outcomes:
            writer.writerow([o.student, *(o.scores.get(i, 0) for i in released), o.total,
                             len(released), o.status, " ".join(o.changed), f"{o.seconds:.1f}"])


def write_gradescope(path: Path, outcome: Outcome) -> None:
    """Gradescope's results.json (github.com/gradescope/autograder_samples, docs/specs.md)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    notes = [f"{outcome.total} of {len(outcome.scores)} exercises pass "
             f"({outcome.tests_passed} of {outcome.tests_run} tests passed); {outcome.status}"]
    if outcome.changed:
        notes.append("course files you changed were replaced by the release's: "
                     + ", ".join(outcome.changed))
    tests = [{"name": f"Exercise {i} — {exercises.EXERCISES.get(i, '')}", "number": i,
              "score": outcome.scores[i], "max_score": 1,
              "status": "passed" if outcome.scores[i] else "failed",
              "output": outcome.details.get(i, ""), "visibility": "visible"}
             for i in outcome.scores]
    results = {"score": outcome.total, "execution_time": round(outcome.seconds),
               "output": "\n".join(notes), "visibility": "visible",
               "stdout_visibility": "hidden", "tests": tests}
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def write_junit(path: Path, outcomes) -> None:
    suites = ET.Element("testsuites", name="minigrad grades")
    for o in outcomes:
        failed = sum(1 for v in o.scores.values() if not v)
        suite = ET.SubElement(suites, "testsuite", name=o.student, tests=str(len(o.scores)),
                              failures=str(failed), errors="0", time=f"{o.seconds:.1f}")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="status", value=o.status)
        ET.SubElement(props, "property", name="changed course files", value=" ".join(o.changed))
        for ident, value in o.scores.items():
            case = ET.SubElement(suite, "testcase", classname=f"{o.student}.exercises",
                                 name=f"exercise {ident} — {exercises.EXERCISES.get(ident, '')}")
            case_props = ET.SubElement(case, "properties")
            ET.SubElement(case_props, "property", name="exercise", value=ident)
            if not value:
                detail = o.details.get(ident, "")
                failure = ET.SubElement(case, "failure", message=detail.splitlines()[0]
                                        if detail else "failed")
                failure.text = detail
    ET.indent(suites)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make grade", description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", required=True,
                        help="folder with one student copy (folder or .bundle) per student")
    parser.add_argument("--release", default=str(ROOT / "build" / "student"),
                        help="the copy that was handed out (default: build/student)")
    parser.add_argument("--out", default=str(ROOT / "build" / "grades"),
                        help="where to write the gradebook (default: build/grades)")
    parser.add_argument("--jobs", type=int, default=2, help="students graded at once")
    parser.add_argument("--limit", type=float, default=600,
                        help="seconds per student before the run is killed (default 600)")
    parser.add_argument("--test-limit", type=float, default=60,
                        help="seconds per test before it fails (default 60)")
    parser.add_argument("--exercises", default=None,
                        help="grade only these exercises: 3.1,3.2 (default: all released)")
    parser.add_argument("--mode", choices=("exercises", "fast", "full"), default="exercises",
                        help="the tests run: every test that exercises a graded exercise "
                             "(default), only the tests marked with one (fast), or every "
                             "test of the graded chapters (full)")
    parser.add_argument("--memory", type=float, default=MEMORY / 2**30,
                        help="GiB of address space per run in the sandbox (default 4)")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="grade without bubblewrap (every status says so)")
    args = parser.parse_args(argv)
    only = [i.strip() for i in args.exercises.split(",") if i.strip()] if args.exercises \
        else None
    if not Path(args.submissions).is_dir():
        raise SystemExit(f"make grade: SUBMISSIONS={args.submissions} is not a folder")
    start = time.monotonic()
    outcomes = grade(Path(args.submissions), Path(args.release), Path(args.out),
                     jobs=args.jobs, limit=args.limit, test_limit=args.test_limit,
                     only=only, mode=args.mode, sandbox=False if args.no_sandbox else None,
                     memory=int(args.memory * 2**30))
    for o in outcomes:
        print(f"{o.student:20} {o.total:3}/{len(o.scores)}  {o.seconds:6.1f} s  {o.status}"
              + (f"  (changed: {', '.join(o.changed)})" if o.changed else ""))
    print(f"make grade: {len(outcomes)} submission(s) in {time.monotonic() - start:.1f} s; "
          f"{args.out}/gradebook.csv, junit.xml, results/<student>/results.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
