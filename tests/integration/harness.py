"""Test harness for the integration suite: starts the real ralphd in private temporary XDG
directories, talks to it with raw JSON-RPC over HTTP or WebSocket on its Unix socket and with the
real ralphctl, and inspects processes through /proc. Standard library only.

Environment (set by tests/integration/meson.build):
  RALPHD, RALPHCTL      the binaries under test
  RALPH_TEST_AGENTS     directory of the fake agents (tests/agents)
  RALPH_FIXTURES        tests/fixtures
  RALPH_TEST_TIMEOUT_SCALE  multiplies every wait (e.g. 2 under sanitizers)
  RALPH_TEST_KEEP       keep the temporary directories (for debugging)

Every wait polls with a deadline; nothing relies on a fixed sleep for correctness. Each Daemon
tags its environment with RALPH_IT_TAG=<its temp dir>, which every agent inherits, so cleanup
can find and kill whatever a failed test left running.
"""

import atexit
import base64
import datetime
import errno
import fcntl
import hashlib
import http.client
import http.server
import json
import os
import pty
import pwd
import re
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import unittest

SCALE = float(os.environ.get("RALPH_TEST_TIMEOUT_SCALE", "1") or "1")
RALPHD = os.environ.get("RALPHD", "")
RALPHCTL = os.environ.get("RALPHCTL", "")
AGENTS = os.environ.get(
    "RALPH_TEST_AGENTS",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agents"))
FIXTURES = os.environ.get(
    "RALPH_FIXTURES",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))

TERMINAL_STATES = ("completed", "exhausted", "failed", "cancelled", "stalled")
# The line flood.sh and slow-counter.sh repeat.
PATTERN_LINE = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
MAX_PAGE = 4 << 20  # loop.output's max_bytes bound


def scaled(seconds):
    return seconds * SCALE


# --------------------------------------------------------------------------- expected outputs

def pattern_bytes(n):
    """The first n bytes of the flood pattern (what `flood.sh n` prints)."""
    reps = n // len(PATTERN_LINE) + 1
    return (PATTERN_LINE * reps)[:n]


def count_to_complete_output(runs, n):
    """What `count-to-complete.sh n` prints over its first `runs` runs."""
    out = b""
    for k in range(1, runs + 1):
        out += b"count-to-complete: run %d of %d\n" % (k, n)
        if k >= n:
            out += b"<promise>COMPLETE</promise>\n"
    return out


def slow_counter_output(k, n, nbytes=0, finished=True):
    """What run k of `slow-counter.sh n SLEEP nbytes` prints (only its start if not finished)."""
    out = b"slow-counter: iteration %d of %d started\n" % (k, n) + pattern_bytes(nbytes)
    if finished:
        out += b"slow-counter: iteration %d of %d finished\n" % (k, n)
        if k >= n:
            out += b"<promise>COMPLETE</promise>\n"
    return out


def agent_path(name):
    return os.path.abspath(os.path.join(AGENTS, name))


def agent_command(name, *args):
    """A `command` template running a fake agent (quoted like a shell would need)."""
    return " ".join(shlex.quote(str(part)) for part in (agent_path(name),) + args)


def scripted(*actions):
    """The command of scripted-agent.py with these actions (see the agent's docstring)."""
    return agent_command("scripted-agent.py", *actions)


def parse_time(value):
    """ISO 8601 UTC string of the API ("2026-11-22T10:11:12.345Z") → epoch seconds (float)."""
    if value is None:
        return None
    text = value.rstrip("Z")
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            parsed = datetime.datetime.strptime(text, fmt)
            return parsed.replace(tzinfo=datetime.timezone.utc).timestamp()
        except ValueError:
            continue
    raise ValueError("not an ISO 8601 time: %r" % value)


def wait_until(predicate, timeout, what, interval=0.05):
    """Polls predicate() until it returns something truthy; fails the test after timeout."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (scaled(timeout), what))
        time.sleep(interval)


# --------------------------------------------------------------------------- processes (/proc)

def proc_stat(pid):
    """(state, ppid, pgid) of a process from /proc/PID/stat, or None if it does not exist."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name is in parentheses and may itself contain spaces and parentheses.
    fields = data[data.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[1]), int(fields[2])


def proc_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def all_pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def is_alive(pid):
    """True if the process exists and is not a zombie (a zombie no longer runs anything; in a
    container pid 1 may never reap reparented ones)."""
    stat = proc_stat(pid)
    return stat is not None and stat[0] != "Z"


def processes_in_group(pgid):
    """Live (non-zombie) processes of a process group: [(pid, cmdline)]."""
    found = []
    for pid in all_pids():
        stat = proc_stat(pid)
        if stat and stat[2] == pgid and stat[0] != "Z":
            found.append((pid, proc_cmdline(pid)))
    return found


def child_processes(pid, name=None):
    """Live (non-zombie) children of a process, those whose command name is `name` if given."""
    found = []
    for child in all_pids():
        stat = proc_stat(child)
        if stat and stat[1] == pid and stat[0] != "Z" and name in (None, process_name(child)):
            found.append(child)
    return found


def process_name(pid):
    """The command name of the process (/proc/<pid>/comm), or None when it is gone."""
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def processes_with_env(key, value):
    """Pids of processes whose environment holds KEY=VALUE (root may read every environ)."""
    needle = ("%s=%s" % (key, value)).encode() + b"\0"
    found = []
    for pid in all_pids():
        if pid == os.getpid():
            continue
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read() + b"\0"
        except OSError:
            continue
        if (b"\0" + env).find(b"\0" + needle) >= 0:
            found.append(pid)
    return found


def wait_group_gone(pgid, timeout=10):
    """Waits until no live process is left in the process group; fails listing the survivors."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        left = processes_in_group(pgid)
        if not left:
            return
        if time.monotonic() > deadline:
            raise AssertionError("process group %d still has live processes after %.1f s: %r"
                                 % (pgid, scaled(timeout), left))
        time.sleep(0.05)


# --------------------------------------------------------------------------- git workspaces

AGENT_NAMES = ("claude", "codex", "opencode", "gemini", "aider", "kiro-cli")


_agents_copy = None


def self_contained_agents():
    """The fake agents (tests/agents) with the recorded streams they replay (tests/fixtures/agents)
    inside their own directory, copied once per test process into the temporary directory: a
    sandbox shows a program in /tmp with its directory and nothing else of /tmp
    (sandbox::program_paths), so the agents run sandboxed wherever the tree is — a clone in /tmp
    included."""
    global _agents_copy
    if _agents_copy is None:
        root = tempfile.mkdtemp(prefix="ralph-agents-", dir=_short_tmp_parent())
        atexit.register(shutil.rmtree, root, True)
        copy = os.path.join(root, "agents")
        shutil.copytree(AGENTS, copy, symlinks=True)
        shutil.copytree(os.path.join(FIXTURES, "agents"), os.path.join(copy, "fixtures", "agents"))
        _agents_copy = copy
    return _agents_copy


def fake_agent_bin(parent, names=AGENT_NAMES):
    """A directory under `parent` with the replay agent (tests/agents/replay-agent.py, in its
    self-contained copy) installed under the names of the real agent CLIs; put it first on the
    daemon's PATH."""
    path = os.path.join(parent, "fake-bin")
    os.makedirs(path, exist_ok=True)
    for name in names:
        link = os.path.join(path, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(self_contained_agents(), "replay-agent.py"), link)
    return path


def command_agent(name):
    """A program of the user's own for `--agent command` (and `--judge command`): a copy of the
    replay agent called `name`, next to it in its self-contained copy, which replays
    tests/agents/streams/command/. Each name is a program of its own (its own file), as two
    programs of a user are."""
    path = os.path.join(self_contained_agents(), name)
    if not os.path.exists(path):
        shutil.copy(os.path.join(self_contained_agents(), "replay-agent.py"), path)
    return path


GIT = ["git", "-c", "user.name=ralph tests", "-c", "user.email=tests@ralph.invalid",
       "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]


def git(ws, *args):
    """git -C ws ARGS with a test identity; its stdout."""
    return subprocess.run(GIT + ["-C", ws] + list(args), check=True, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL).stdout


def make_workspace(parent, name="ws"):
    """A fresh git repository with one (empty) commit, so it is clean."""
    path = tempfile.mkdtemp(prefix=name + "-", dir=parent)
    subprocess.run(GIT + ["init", "-q", path], check=True, stdin=subprocess.DEVNULL)
    git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


def commit_all(ws, message="setup"):
    """Commits everything in the work tree `ws` (git add -A) with the test identity."""
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", message)


def codex_gateway_config(base_url, model=""):
    """$CODEX_HOME/config.toml as codex's users configure a company gateway: a model provider of
    their own whose key is in MYGATEWAY_KEY and with a header from TEAM_TOKEN."""
    return ("# a company gateway, as codex's users configure it\n"
            'model_provider = "gateway"\n'
            + ('model = "%s"\n' % model if model else "")
            + "\n[model_providers.gateway]\n"
            'name = "Company gateway"\n'
            'base_url = "%s/v1"\n'
            'env_key = "MYGATEWAY_KEY"\n'
            'env_http_headers = { "X-Team" = "TEAM_TOKEN" }\n' % base_url)


def write_text(path, text):
    """Writes `text` (UTF-8) to `path`, creating its directory."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


# --------------------------------------------------------------------------- what a test needs

def skip_test(reason):
    """Skips the test for `reason` (something this machine lacks), except under CI (the CI
    variable set, as .ci/run has it: root, bubblewrap and every tool installed), where nothing may
    be left untested quietly: there it fails instead."""
    if os.environ.get("CI"):
        raise AssertionError("CI is set, so this test must run, but: " + reason)
    raise unittest.SkipTest(reason)


def require_root(why="to act as another user"):
    if os.geteuid() != 0:
        skip_test("needs root " + why)


class SmallDisk:
    """A tmpfs of `size` (e.g. "24m") mounted on the directory `path` (needs root): ralph's state
    on a disk that a test fills to its last byte (fill) and frees again (free)."""

    def __init__(self, path, size):
        self.path = path
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size, "tmpfs", path],
                       check=True)
        self.filler = os.path.join(path, "filler")

    def fill(self):
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size = 1 << 20
            while size >= 1:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    size //= 2
        finally:
            os.close(fd)

    def free(self):
        if os.path.exists(self.filler):
            os.unlink(self.filler)

    def unmount(self):
        subprocess.run(["umount", "-l", self.path], check=True)


def free_tcp_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SshServer:
    """A real OpenSSH server (Debian's sshd) on 127.0.0.1 and a free port, for one test: its host
    key and the client's key made here with ssh-keygen, its own sshd_config (public-key login of
    one user only, no PAM), and a client configuration that trusts that host key alone
    (StrictHostKeyChecking against the known_hosts written here). `session_env` is set in every
    session (sshd's SetEnv): e.g. PATH with the build's ralphctl and RALPH_SOCKET of a test
    daemon. `user`: who may log in, the current user by default; another one (a UnixUser) gets
    the client's key in its home's ~/.ssh/authorized_keys, which sshd reads as that user. For
    ralphctl: `address` (ssh://USER@127.0.0.1:PORT) and `ssh_command` (for RALPH_SSH_COMMAND);
    `host_block(NAME)`, this server as one host of a configuration naming several. Needs root
    (sshd's privilege separation) and /usr/sbin/sshd."""

    SSHD = "/usr/sbin/sshd"

    def __init__(self, parent, session_env, user=None):
        require_root("to run sshd")
        if not os.access(self.SSHD, os.X_OK):
            skip_test("needs %s (openssh-server)" % self.SSHD)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # its privilege separation dir
        self.dir = tempfile.mkdtemp(prefix="sshd-", dir=parent)
        for name in ("host_key", "client_key", "other_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f",
                            os.path.join(self.dir, name)], check=True, stdin=subprocess.DEVNULL)
        self.port = free_tcp_port()
        self.user = user or pwd_name()
        authorized_keys = os.path.join(self.dir, "authorized_keys")
        if self.user != pwd_name():
            authorized_keys = _authorize_in_home(self.user,
                                                 os.path.join(self.dir, "client_key.pub"))
        else:
            shutil.copy(os.path.join(self.dir, "client_key.pub"), authorized_keys)
        env = " ".join("%s=%s" % item for item in session_env.items())
        write_text(os.path.join(self.dir, "sshd_config"), "\n".join([
            "Port %d" % self.port, "ListenAddress 127.0.0.1",
            "HostKey " + os.path.join(self.dir, "host_key"),
            "AuthorizedKeysFile " + authorized_keys,
            "AllowUsers " + self.user, "PermitRootLogin prohibit-password", "UsePAM no",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "StrictModes no",
            "PidFile none", "LogLevel VERBOSE", "SetEnv " + env, ""]))
        with open(os.path.join(self.dir, "host_key.pub")) as f:
            host_key = " ".join(f.read().split()[:2])
        write_text(os.path.join(self.dir, "known_hosts"),
                   "[127.0.0.1]:%d %s\n" % (self.port, host_key))
        self.ssh_config = os.path.join(self.dir, "ssh_config")
        self.write_client_config("client_key")
        self.log = os.path.join(self.dir, "sshd.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([self.SSHD, "-D", "-e", "-f",
                                          os.path.join(self.dir, "sshd_config")],
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self._listening, 10, "sshd to listen on port %d" % self.port)
        self.address = "ssh://%s@127.0.0.1:%d" % (self.user, self.port)
        self.ssh_command = "ssh -F " + self.ssh_config

    def _client_options(self, key):
        return ["IdentityFile " + os.path.join(self.dir, key), "IdentitiesOnly yes",
                "UserKnownHostsFile " + os.path.join(self.dir, "known_hosts"),
                "GlobalKnownHostsFile /dev/null", "StrictHostKeyChecking yes", "LogLevel ERROR"]

    def write_client_config(self, key):
        """The client's configuration, logging in with `key` (client_key is authorized,
        other_key is not)."""
        write_text(self.ssh_config, "\n".join(["Host *"] + self._client_options(key) + [""]))

    def host_block(self, name):
        """This server as `Host NAME` of an ssh_config that names several (ssh://NAME then
        reaches it with the authorized key)."""
        return "\n".join(["Host " + name, "    HostName 127.0.0.1", "    Port %d" % self.port,
                          "    User " + self.user] +
                         ["    " + option for option in self._client_options("client_key")] +
                         [""])

    @staticmethod
    def command_for(servers, path):
        """An ssh command (for RALPH_SSH_COMMAND) that reaches every one of `servers`, each with
        its own client key and host key, through one configuration written at `path`: for a
        test of several hosts (a ralphctl or a ralphd that dials more than one)."""
        write_text(path, "\n".join(
            ["Host *"] + ["IdentityFile " + os.path.join(s.dir, "client_key") for s in servers] +
            ["IdentitiesOnly yes",
             "UserKnownHostsFile " + " ".join(os.path.join(s.dir, "known_hosts")
                                              for s in servers),
             "GlobalKnownHostsFile /dev/null", "StrictHostKeyChecking yes", "LogLevel ERROR",
             ""]))
        return "ssh -F " + path

    def _listening(self):
        if self.proc.poll() is not None:
            raise AssertionError("sshd exited: " + read_text(self.log))
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)


def _authorize_in_home(user, public_key):
    """`public_key` as the only key of `user`'s ~/.ssh/authorized_keys (theirs, 0600); its path."""
    entry = pwd.getpwnam(user)
    ssh_dir = os.path.join(entry.pw_dir, ".ssh")
    os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
    path = os.path.join(ssh_dir, "authorized_keys")
    shutil.copy(public_key, path)
    os.chmod(path, 0o600)
    for owned in (ssh_dir, path):
        os.chown(owned, entry.pw_uid, entry.pw_gid)
    return path


class UnixUser:
    """A Unix user made for one test (root only): a unique name, a home of its own under a new
    directory that every user may enter (`home`; `dir` is that directory), a shell, no password
    (sshd without PAM refuses a locked account: its password is `*`, not `!`). run() and popen()
    run a program as that user; remove() ends whatever the user still runs and deletes the user
    and its files."""

    def __init__(self):
        require_root("to create a user")
        if shutil.which("useradd") is None:
            skip_test("needs useradd (passwd)")
        self.dir = tempfile.mkdtemp(prefix="ralph-user-", dir=_short_tmp_parent())
        os.chmod(self.dir, 0o755)
        self.name = "ralph-it-" + os.urandom(4).hex()
        self.home = os.path.join(self.dir, "home")
        subprocess.run(["useradd", "--create-home", "--home-dir", self.home, "--shell", "/bin/sh",
                        "--password", "*", "--user-group", self.name],
                       check=True, capture_output=True, stdin=subprocess.DEVNULL)
        entry = pwd.getpwnam(self.name)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid

    def popen(self, argv, **kwargs):
        return subprocess.Popen(argv, user=self.uid, group=self.gid, extra_groups=[],
                                stdin=subprocess.DEVNULL, **kwargs)

    def run(self, argv, **kwargs):
        return subprocess.run(argv, user=self.uid, group=self.gid, extra_groups=[],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, **kwargs)

    def pids(self):
        """The live processes running as this user."""
        found = []
        for pid in all_pids():
            try:
                with open("/proc/%d/status" % pid) as f:
                    uids = next(line for line in f if line.startswith("Uid:")).split()[1:]
            except (OSError, StopIteration):
                continue
            if str(self.uid) in uids and is_alive(pid):
                found.append(pid)
        return found

    def remove(self):
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        wait_until(lambda: not self.pids(), 10, "the processes of %s to end" % self.name)
        removed = subprocess.run(["userdel", "--remove", self.name], capture_output=True,
                                 text=True, stdin=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)
        try:
            pwd.getpwnam(self.name)
        except KeyError:
            return
        raise AssertionError("userdel left the user %s: %s" % (self.name, removed.stderr))


def pwd_name():
    return pwd.getpwuid(os.geteuid()).pw_name


def require_bubblewrap():
    """Skips (or fails under CI) unless bwrap can sandbox here."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        skip_test("bubblewrap is not installed (scripts/install-deps.sh installs it)")
    proc = subprocess.run([bwrap, "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev",
                           "--proc", "/proc", "true"], capture_output=True, text=True)
    if proc.returncode != 0:
        skip_test("bwrap cannot create its namespaces on this machine: " + proc.stderr.strip())



# --------------------------------------------------------------------------- ralphctl top on a pty

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Screen:
    """ralphctl top ARGS on the slave side of a pty of rows x columns, with `daemon`'s ralphctl
    environment (and `env`, as Daemon.ctl takes it); reads what it draws, presses keys."""

    def __init__(self, daemon, *args, rows=30, columns=120, env=None):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execve(RALPHCTL, [RALPHCTL, "top", *args], daemon.ctl_env(env))
            finally:
                os._exit(127)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.raw = b""
        self.seen = 0  # wait_for looks at what came after this position
        self.exit_status = None

    def read_some(self, timeout):
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the program ended and closed the terminal
            return False
        self.raw += data
        return bool(data)

    def text(self, since=0):
        return ESCAPES.sub("", self.raw[since:].decode(errors="replace"))

    def wait_for(self, *needles, timeout=15):
        """Until every needle shows on the screen after the last key press."""
        deadline = time.time() + scaled(timeout)
        while True:
            shown = self.text(self.seen)
            if all(n in shown for n in needles):
                return shown
            if time.time() > deadline:
                raise AssertionError("top did not show %r; it showed: %r"
                                     % (needles, shown[-3000:]))
            self.read_some(0.05)

    def mark(self):
        """From now on wait_for looks only at what top draws after this point."""
        self.seen = len(self.raw)

    def press(self, keys):
        self.mark()
        os.write(self.fd, keys)

    def wait_exit(self, timeout=10):
        deadline = time.time() + scaled(timeout)
        while time.time() < deadline:
            self.read_some(0.05)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while self.read_some(0.05):
                    pass
                self.exit_status = os.waitstatus_to_exitcode(status)
                return self.exit_status
        raise AssertionError("top did not exit; it showed: %r" % self.text()[-2000:])

    def close(self):
        if self.exit_status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        os.close(self.fd)


# --------------------------------------------------------------------------- HTTP over AF_UNIX

class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a Unix stream socket (the host name only fills the Host header)."""

    def __init__(self, path, timeout=30):
        super().__init__("ralph", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.unix_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class RpcError(Exception):
    def __init__(self, error):
        super().__init__("JSON-RPC error %s: %s" % (error.get("code"), error.get("message")))
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


def http_post(socket_path, body, timeout=30, path="/rpc", headers=None):
    """POSTs body (bytes) and returns (status, headers dict (lower-case names), body bytes)."""
    conn = UnixHTTPConnection(socket_path, timeout=scaled(timeout))
    try:
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        conn.request("POST", path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def post_raw_streaming(socket_path, body, timeout=30, path="/rpc"):
    """Like http_post, for bodies the server may refuse before reading them all (413): the body
    is sent from a thread while this one reads the response, so neither side can block the
    other. Returns (status, headers, body); status None if the connection closed without one."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(scaled(timeout))
        sock.connect(socket_path)
    except BaseException:
        sock.close()
        raise
    head = ("POST %s HTTP/1.1\r\nHost: ralph\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (path, len(body))).encode()

    def send():
        try:
            sock.sendall(head + body)
        except OSError:
            pass  # the server stopped reading: expected for a refused body

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        resp = http.client.HTTPResponse(sock, method="POST")
        try:
            resp.begin()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            return None, {}, b""
        try:
            data = resp.read()
        except (http.client.IncompleteRead, ConnectionResetError) as e:
            data = getattr(e, "partial", b"")
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
        sender.join(timeout=scaled(10))


# --------------------------------------------------------------------------- WebSocket client

def _xor_mask(payload, mask):
    n = len(payload)
    if n == 0:
        return b""
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


class WebSocket:
    """A minimal RFC 6455 client for `GET /rpc` sessions: sends text frames, masked as a client
    must; receives text and binary messages, answers pings, understands fragmented messages and
    close frames."""

    GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def __init__(self, address, path="/rpc", timeout=30, headers=None):
        """`address`: a Unix socket's path, or (host, port) for TCP (ralphd --listen), which then
        is the Host header; `headers`: more of them (a Cookie, an Origin)."""
        tcp = isinstance(address, tuple)
        self.sock = socket.socket(socket.AF_INET if tcp else socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(scaled(timeout))
            self.sock.connect(address)
        except BaseException:
            self.sock.close()
            raise
        self.buf = b""
        self.closed = False
        self.masked = True  # a client masks its frames
        self.data_frames = 0  # text, binary and continuation frames received
        key = base64.b64encode(os.urandom(16))
        host = ("%s:%d" % address) if tcp else "ralph"
        extra = "".join("%s: %s\r\n" % item for item in (headers or {}).items())
        self.sock.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() +
                          b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
                          extra.encode() + b"Sec-WebSocket-Key: " + key +
                          b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = lines[0].split(" ")
        if len(status) < 2 or status[1] != "101":
            raise AssertionError("WebSocket upgrade refused: %r" % lines[0])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        expected = base64.b64encode(hashlib.sha1(key + self.GUID).digest()).decode()
        if headers.get("sec-websocket-accept") != expected:
            raise AssertionError("bad Sec-WebSocket-Accept: %r" % headers)

    @classmethod
    def accepted(cls, sock, headers):
        """The server's side of a session on `sock`, a connection just accepted: reads the
        client's upgrade request and answers it, with `headers` (a dict) besides."""
        ws = cls.__new__(cls)
        ws.sock, ws.buf, ws.closed, ws.masked, ws.data_frames = sock, b"", False, False, 0
        while b"\r\n\r\n" not in ws.buf:
            ws._fill()
        head, ws.buf = ws.buf.split(b"\r\n\r\n", 1)
        key = [line.split(":", 1)[1].strip() for line in head.decode("latin-1").split("\r\n")
               if line.lower().startswith("sec-websocket-key:")][0]
        accept = base64.b64encode(hashlib.sha1(key.encode() + cls.GUID).digest()).decode()
        extra = "".join("%s: %s\r\n" % item for item in headers.items())
        sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n"
                      % (accept, extra)).encode())
        return ws

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("WebSocket connection closed by the daemon")
        self.buf += chunk

    def _read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _send_frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        mask_bit = 0x80 if self.masked else 0
        if n < 126:
            header += bytes([mask_bit | n])
        elif n < 65536:
            header += bytes([mask_bit | 126]) + struct.pack("!H", n)
        else:
            header += bytes([mask_bit | 127]) + struct.pack("!Q", n)
        if not self.masked:
            self.sock.sendall(header + payload)
            return
        mask = os.urandom(4)
        self.sock.sendall(header + mask + _xor_mask(payload, mask))

    def _read_frame(self):
        b0, b1 = self._read_exact(2)
        fin, opcode = bool(b0 & 0x80), b0 & 0x0F
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._read_exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._read_exact(8))[0]
        mask = self._read_exact(4) if b1 & 0x80 else None
        payload = self._read_exact(n)
        if mask:
            payload = _xor_mask(payload, mask)
        return fin, opcode, payload

    def send_text(self, text):
        self._send_frame(0x1, text.encode())

    def send_json(self, obj):
        self.send_text(json.dumps(obj))

    def send_binary(self, payload):
        self._send_frame(0x2, payload)

    def recv_text(self):
        """The next text (or binary) message as str; None once the daemon closed the session."""
        message = self.recv_message()
        return None if message is None else message[1].decode()

    def recv_message(self):
        """The next message as (binary, payload bytes); None once the daemon closed the
        session."""
        if self.closed:
            return None
        message, message_opcode = b"", None
        while True:
            fin, opcode, payload = self._read_frame()
            if opcode == 0x9:  # ping
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:  # pong
                continue
            if opcode == 0x8:  # close: echo it and stop
                self.closed = True
                try:
                    self._send_frame(0x8, payload[:2])
                except OSError:
                    pass
                return None
            self.data_frames += 1
            if opcode in (0x1, 0x2):
                message_opcode, message = opcode, payload
            elif opcode == 0x0:
                message += payload
            if fin and message_opcode is not None:
                return message_opcode == 0x2, message

    def recv_json(self):
        text = self.recv_text()
        return None if text is None else json.loads(text)

    def close(self):
        if not self.closed:
            try:
                self._send_frame(0x8, struct.pack("!H", 1000))
            except OSError:
                pass
            self.closed = True
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Receiver:
    """A webhook receiver: an HTTP(S) server on 127.0.0.1 that records every POST ralphd makes as a
    dict (path, headers, body as JSON) and answers 200, after calling `before_answer` (if given)
    with that dict. stop() closes its socket (connections are refused); start() listens again on
    the same port."""

    def __init__(self, tls=None, answer=b"ok", before_answer=None):
        self.tls = tls
        self.answer = answer
        self.before_answer = before_answer
        self.port = 0
        self.posts = []
        self.lock = threading.Lock()
        self.server = None
        self.start()

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                post = {"path": self.path, "headers": dict(self.headers),
                        "body": json.loads(body)}
                with receiver.lock:
                    receiver.posts.append(post)
                if receiver.before_answer:
                    receiver.before_answer(post)
                self.send_response(200)
                self.send_header("Content-Length", str(len(receiver.answer)))
                self.end_headers()
                try:
                    self.wfile.write(receiver.answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # ralphd reads 64 KiB of an answer at most

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        if self.tls:
            self.server.socket = self.tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def url(self, path, format_prefix=""):
        scheme = "https" if self.tls else "http"
        return "%s%s://127.0.0.1:%d%s" % (format_prefix, scheme, self.port, path)

    def received(self, path_start=""):
        with self.lock:
            return [p for p in self.posts if p["path"].startswith(path_start)]


class FakeDaemon:
    """A ralphd played by the test, to make it misbehave: a socket (`socket_path`, in the folder
    `directory` made under `parent`) where accept() takes the next connection and answers its
    WebSocket handshake; the test then speaks JSON-RPC on it (recv_json, send_text,
    send_binary...) as it likes."""

    def __init__(self, parent, name="fake-daemon"):
        self.directory = _private_dir(os.path.join(parent, name))
        self.socket_path = os.path.join(self.directory, "ralphd.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.socket_path)
        self.listener.listen(4)

    def accept(self, timeout=20):
        """The next session, its upgrade answered (with the protocol version ralphd and ralphctl
        check)."""
        self.listener.settimeout(scaled(timeout))
        conn, _ = self.listener.accept()
        conn.settimeout(scaled(timeout))
        return WebSocket.accepted(conn, {"Ralph-Protocol": "1"})

    def close(self):
        self.listener.close()


class FakePeer(FakeDaemon):
    """A peer of `ralphd --peer` played by the test: `ssh_command` (for RALPH_SSH_COMMAND)
    ignores its host and runs the real `ralphctl dial-stdio` against this fake daemon's socket,
    where accept() takes the link's connection."""

    def __init__(self, parent):
        super().__init__(parent, "fake-peer")
        self.ssh_command = os.path.join(self.directory, "ssh")
        write_text(self.ssh_command, "#!/bin/sh\nRALPH_SOCKET=%s exec %s dial-stdio\n"
                   % (self.socket_path, RALPHCTL))
        os.chmod(self.ssh_command, 0o755)

    def link(self, host="evil", holds=(), timeout=20):
        """accept(), then the answer to the daemon's peer.link: `holds`; the session and the
        request."""
        ws = self.accept(timeout)
        request = ws.recv_json()
        ws.send_json({"jsonrpc": "2.0", "id": request["id"],
                      "result": {"host": host, "holds": list(holds)}})
        return ws, request


# --------------------------------------------------------------------------- the daemon

def _private_dir(path):
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def _short_tmp_parent():
    """A temp parent short enough for Unix socket paths (108 bytes)."""
    parent = tempfile.gettempdir()
    return parent if len(parent) < 40 else "/tmp"


class Daemon:
    """A real ralphd in its own temporary XDG directories.

    with Daemon() as d:
        d.call("daemon.info")
        d.ctl("list")

    Paths: d.root (temp dir), d.socket, d.db, d.runtime_dir, d.state_dir, d.config_dir, d.home.
    default_paths=True starts ralphd without --socket/--db, so it must pick them from the XDG
    variables (then d.socket and d.db are where the README's "The daemon" puts them). `parent`:
    where d.root is made (default: the temporary directory).
    """

    def __init__(self, extra_args=(), env=None, kill_grace=1, default_paths=False,
                 socket_path=None, start=True, parent=None, program=None):
        self.root = tempfile.mkdtemp(prefix="ralph-it-", dir=parent or _short_tmp_parent())
        os.chmod(self.root, 0o700)
        self.runtime_dir = _private_dir(os.path.join(self.root, "run"))
        self.state_dir = _private_dir(os.path.join(self.root, "state"))
        self.config_dir = _private_dir(os.path.join(self.root, "config"))
        self.home = _private_dir(os.path.join(self.root, "home"))
        self.work_dir = _private_dir(os.path.join(self.root, "work"))
        self.default_paths = default_paths
        if default_paths:
            self.socket = os.path.join(self.runtime_dir, "ralph", "ralphd.sock")
            self.db = os.path.join(self.state_dir, "ralph", "ralph.db")
        else:
            self.socket = socket_path or os.path.join(self.runtime_dir, "ralphd.sock")
            _private_dir(os.path.join(self.state_dir, "ralph"))
            self.db = os.path.join(self.state_dir, "ralph", "ralph.db")
        self.kill_grace = kill_grace
        self.program = program or RALPHD  # another ralphd binary: an upgrade
        self.extra_args = list(extra_args)
        self.env = self._make_env(env or {})
        self.proc = None
        self.killed = False  # set by kill9(): the exit status of the current process is ours
        self.starts = 0
        self.logs = []
        if start:
            self.start()

    def _make_env(self, extra):
        env = dict(os.environ)
        # Never let the daemon under test talk to a real service manager or a real daemon.
        for name in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
                     "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "INVOCATION_ID",
                     "RALPH_SOCKET"):
            env.pop(name, None)
        env.update({
            "XDG_RUNTIME_DIR": self.runtime_dir,
            "XDG_STATE_HOME": self.state_dir,
            "XDG_CONFIG_HOME": self.config_dir,
            "HOME": self.home,
            "NO_COLOR": "1",
            "RALPH_IT_TAG": self.root,
        })
        env.update(extra)
        return env

    # ---- lifecycle

    def argv(self):
        args = [self.program]
        if not self.default_paths:
            args += ["--socket", self.socket, "--db", self.db]
        args += ["--kill-grace", str(self.kill_grace)] + self.extra_args
        return args

    def start(self, wait=True):
        if not self.program or not os.access(self.program, os.X_OK):
            skip_test("RALPHD is not set to an executable (run through meson test)")
        self.starts += 1
        self.killed = False
        log_path = os.path.join(self.root, "ralphd.%d.log" % self.starts)
        self.logs.append(log_path)
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(self.argv(), env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         cwd=self.root, start_new_session=True)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=10):
        deadline = time.monotonic() + scaled(timeout)
        last_error = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("ralphd exited with %s while starting:\n%s"
                                     % (self.proc.returncode, self.log_text()))
            try:
                body = self.rpc("daemon.info", timeout=2)
                if "result" in body:
                    return body["result"]
                last_error = body
            except (OSError, http.client.HTTPException, ValueError) as e:
                last_error = e
            time.sleep(0.05)
        raise AssertionError("ralphd did not answer daemon.info within %.1f s (%r):\n%s"
                             % (scaled(timeout), last_error, self.log_text()))

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        """kill -9 of ralphd (its agents are left behind, as after a crash)."""
        self.killed = True
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=scaled(10))

    def restart(self):
        """Starts a new ralphd on the same socket and database."""
        if self.running():
            self.stop()
        return self.start()

    def stop(self, timeout=20, leave_running=False):
        """Stops ralphd and waits; it must exit 0. SIGINT ends the agents (as `ralphctl daemon
        stop` does); leave_running=True sends SIGTERM, systemd's stop and restart, which leaves
        them running for the next ralphd to adopt."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        sig = signal.SIGTERM if leave_running else signal.SIGINT
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=scaled(timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("ralphd did not exit within %.1f s of %s:\n%s"
                                 % (scaled(timeout), sig.name, self.log_text()))
        if rc != 0:
            raise AssertionError("ralphd exited with %d after %s:\n%s"
                                 % (rc, sig.name, self.log_text()))
        return rc

    def finish(self):
        """End of a test: a ralphd still running must stop cleanly on SIGTERM (exit 0, which
        under the sanitizers also means no leak and no error at shutdown); one that ended by
        itself (e.g. `ralphctl daemon stop`) must have exited 0, unless kill9() ended it; and no
        loop state change may have been refused by the state machine."""
        if self.proc is None:
            return
        if self.running():
            self.stop()
        if "the state machine has no" in self.log_text():
            raise AssertionError("ralphd tried a loop state change its state machine does not "
                                 "allow:\n%s" % self.log_text())
        elif not self.killed and self.proc.returncode != 0:
            raise AssertionError("ralphd exited with %s during the test:\n%s"
                                 % (self.proc.returncode, self.log_text()))

    def leftover_processes(self):
        """Processes (agents and their children) that carry this daemon's tag, ralphd excluded."""
        me = self.proc.pid if self.running() else None
        return [pid for pid in processes_with_env("RALPH_IT_TAG", self.root) if pid != me]

    def kill_everything(self):
        """Ends ralphd and every process that inherited its environment (after a failure)."""
        if self.running():
            self.proc.kill()
            self.proc.wait()
        # A shim ends its agent and everything the agent started when asked (SIGTERM); SIGKILL
        # would leave them running without it.
        shims = [pid for pid in all_pids()
                 if process_name(pid) == "ralph-shim" and self.root in proc_cmdline(pid)]
        for pid in shims:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + scaled(self.kill_grace + 3)
        while time.monotonic() < deadline and any(is_alive(pid) for pid in shims):
            time.sleep(0.05)
        own_group = os.getpgrp()
        for pid in self.leftover_processes():
            stat = proc_stat(pid)
            try:
                if stat and stat[2] > 1 and stat[2] != own_group:
                    os.killpg(stat[2], signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def cleanup(self, keep=False):
        self.kill_everything()
        if not keep and not os.environ.get("RALPH_TEST_KEEP"):
            shutil.rmtree(self.root, ignore_errors=True)

    def log_text(self):
        parts = []
        for path in self.logs:
            try:
                with open(path, "rb") as f:
                    text = f.read().decode(errors="replace")
            except OSError:
                text = "(no log)"
            parts.append("----- %s -----\n%s" % (path, text[-20000:]))
        return "\n".join(parts)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            sys.stderr.write("\n" + self.log_text() + "\n")
        self.cleanup()

    # ---- raw JSON-RPC

    def post_raw(self, body, timeout=30, path="/rpc", headers=None):
        """POSTs raw bytes to /rpc: (status, headers, body bytes)."""
        if isinstance(body, str):
            body = body.encode()
        return http_post(self.socket, body, timeout=timeout, path=path, headers=headers)

    def rpc(self, method, params=None, id=1, timeout=30):
        """One JSON-RPC request over HTTP POST; returns the parsed response object."""
        request = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            request["params"] = params
        status, _, body = self.post_raw(json.dumps(request).encode(), timeout=timeout)
        if not body:
            raise AssertionError("HTTP %s with an empty body for %s" % (status, method))
        return json.loads(body)

    def call(self, method, params=None, timeout=30):
        """The result of a JSON-RPC call; raises RpcError on an error response."""
        body = self.rpc(method, params, timeout=timeout)
        if "error" in body:
            raise RpcError(body["error"])
        return body["result"]

    def websocket(self, timeout=30):
        return WebSocket(self.socket, timeout=timeout)

    # ---- the real client

    def ctl_env(self, extra=None):
        env = dict(self.env)
        env["RALPH_SOCKET"] = self.socket
        for name, value in (extra or {}).items():
            if value is None:
                env.pop(name, None)  # None removes a variable
            else:
                env[name] = value
        return env

    def ctl(self, *args, check=True, timeout=60, text=True, env=None):
        """Runs the real ralphctl against this daemon; returns the CompletedProcess."""
        if not RALPHCTL or not os.access(RALPHCTL, os.X_OK):
            skip_test("RALPHCTL is not set to an executable (run through meson test)")
        try:
            proc = subprocess.run([RALPHCTL] + [str(a) for a in args], env=self.ctl_env(env),
                                  stdin=subprocess.DEVNULL, capture_output=True, text=text,
                                  timeout=scaled(timeout), cwd=self.work_dir)
        except subprocess.TimeoutExpired as e:
            raise AssertionError("ralphctl %s did not finish within %.1f s; stderr: %r"
                                 % (" ".join(map(str, args)), scaled(timeout), e.stderr))
        if check and proc.returncode != 0:
            raise AssertionError("ralphctl %s exited %d\nstdout: %r\nstderr: %r"
                                 % (" ".join(map(str, args)), proc.returncode,
                                    proc.stdout, proc.stderr))
        return proc

    def ctl_json(self, *args, check=True, timeout=60):
        """`ralphctl --json ARGS`, parsed; checks schema_version."""
        proc = self.ctl("--json", *args, check=check, timeout=timeout)
        try:
            out = json.loads(proc.stdout)
        except ValueError:
            raise AssertionError("ralphctl --json %s printed no JSON: %r (stderr %r)"
                                 % (" ".join(map(str, args)), proc.stdout, proc.stderr))
        if out.get("schema_version") != 1:
            raise AssertionError("--json output without schema_version 1: %r" % out)
        return out

    def ctl_popen(self, *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=None):
        """Starts ralphctl in the background (e.g. tail -f, submit --wait)."""
        if not RALPHCTL or not os.access(RALPHCTL, os.X_OK):
            skip_test("RALPHCTL is not set to an executable (run through meson test)")
        return subprocess.Popen([RALPHCTL] + [str(a) for a in args], env=self.ctl_env(env),
                                stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                cwd=self.work_dir)

    def ctl_first_stderr_line(self, *args):
        """Starts ralphctl ARGS (e.g. tail -f), returns the first line it writes to stderr, then
        ends it."""
        proc = self.ctl_popen(*args)
        try:
            return proc.stderr.readline().decode()
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    # ---- loops

    def workspace(self, name="ws"):
        return make_workspace(self.work_dir, name)

    def submit(self, workspace, command, **params):
        """loop.submit over raw JSON-RPC with fast defaults; returns the loop object."""
        request = {
            "name": params.pop("name", "it-loop"),
            "workspace": workspace,
            "agent": "command",
            "command": command,
            "prompt": "integration test prompt",
            "max_iterations": 10,
            "delay_s": 0,
            "timeout_s": 60,
            "max_retries": 0,
            "retry_backoff_s": 0.1,
            # Fake agents leave files behind; tests of the dirty check ask for it themselves.
            "allow_dirty": True,
        }
        request.update(params)
        return self.call("loop.submit", request)

    def ctl_submit(self, workspace, prompt, *options, name="it-loop", delay="0s", retries="0"):
        """`ralphctl --json submit` with fast defaults (no delay, no retries; None leaves the
        option out) and `options`; returns the loop object it printed."""
        defaults = ["--workspace", workspace, "--name", name, "--allow-dirty"]
        if delay is not None:
            defaults += ["--delay", delay]
        if retries is not None:
            defaults += ["--retries", retries]
        out = self.ctl_json("submit", *defaults, *options, prompt)
        if "loop" not in out or "id" not in out["loop"]:
            raise AssertionError("submit --json printed no loop: %r" % out)
        return out["loop"]

    def find_loop(self, name):
        """The loop with this name (loop.list), or None."""
        for loop in self.call("loop.list", {})["loops"]:
            if loop["name"] == name:
                return loop
        return None

    def get(self, loop_id):
        return self.call("loop.get", {"id": loop_id})

    def attempts(self, loop_id):
        return self.call("loop.iterations", {"id": loop_id})["attempts"]

    def wait_state(self, loop_id, states, timeout=30):
        """Polls loop.get until the loop is in one of `states`; returns the loop object."""
        if isinstance(states, str):
            states = (states,)
        deadline = time.monotonic() + scaled(timeout)
        loop = None
        while True:
            loop = self.get(loop_id)
            if loop["state"] in states:
                return loop
            if time.monotonic() > deadline:
                break
            if loop["state"] in TERMINAL_STATES:
                break  # it will never get there
            time.sleep(0.05)
        try:
            attempts = self.attempts(loop_id)
        except Exception as e:  # noqa: BLE001 - only for the message
            attempts = repr(e)
        raise AssertionError("loop %s is %r, not one of %r (waited up to %.1f s)\nloop: %s\n"
                             "attempts: %s" % (loop_id, loop["state"], states, scaled(timeout),
                                               json.dumps(loop, indent=1),
                                               json.dumps(attempts, indent=1)))

    def output(self, loop_id, offset=0):
        """All persisted output of a loop from `offset`, as exact bytes (base64 pages)."""
        data = b""
        while True:
            page = self.call("loop.output", {"id": loop_id, "offset": offset,
                                             "max_bytes": MAX_PAGE, "encoding": "base64"})
            if page["offset"] != offset:
                raise AssertionError("loop.output answered offset %r for offset %r"
                                     % (page["offset"], offset))
            chunk = base64.b64decode(page["data"])
            if page["next_offset"] != offset + len(chunk):
                raise AssertionError("loop.output: next_offset %r after %d bytes from %d"
                                     % (page["next_offset"], len(chunk), offset))
            data += chunk
            offset = page["next_offset"]
            if offset >= page["end_offset"] or not chunk:
                return data

    def wait_output_contains(self, loop_id, needle, timeout=20):
        return wait_until(lambda: needle in self.output(loop_id), timeout,
                          "loop %s output to contain %r" % (loop_id, needle), interval=0.05)

    def running_attempt(self, loop_id, timeout=20):
        """The attempt currently running (with its pid known)."""
        def find():
            for attempt in self.attempts(loop_id):
                if attempt["termination"] == "running" and attempt.get("pid"):
                    return attempt
            return None
        return wait_until(find, timeout, "a running attempt of loop %s" % loop_id)


class DaemonTestCase(unittest.TestCase):
    """Base class: self.daemon(...) starts a Daemon that is cleaned up after the test (its log
    is printed when the test failed)."""

    def run(self, result=None):
        self._daemons = []
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        try:
            return super().run(result)
        finally:
            failed = len(result.failures) + len(result.errors) > before
            for d in self._daemons:
                if failed:
                    sys.stderr.write("\n===== ralphd log of %s (%s) =====\n%s\n"
                                     % (self.id(), d.root, d.log_text()))
                d.cleanup(keep=failed and bool(os.environ.get("RALPH_TEST_KEEP")))

    def daemon(self, **kwargs):
        d = Daemon(start=False, **kwargs)
        self._register(d)
        d.start()
        return d

    def new_daemon_unstarted(self, **kwargs):
        d = Daemon(start=False, **kwargs)
        self._register(d)
        return d

    def _register(self, d):
        self._daemons.append(d)
        # Cleanups run last-in first-out: first a clean SIGTERM stop that must exit 0, then
        # (always, even if that failed) SIGKILL of whatever is left: never leak agents.
        self.addCleanup(d.kill_everything)
        self.addCleanup(d.finish)


def main():
    """Runs the tests of the calling module; exits non-zero on failure."""
    unittest.main(module="__main__", verbosity=2)
