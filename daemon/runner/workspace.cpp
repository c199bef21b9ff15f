// Workspace snapshots, comparison, dirty check, commit and worktrees (see workspace.hpp). Everything here
// blocks; nothing is shared between calls. git is run by run_git() below and nowhere else.
#include "daemon/runner/workspace.hpp"

#include "common/paths.hpp"
#include "common/unique_fd.hpp"
#include "daemon/runner/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <system_error>
#include <utility>

extern char** environ;

namespace ralph::workspace {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using std::chrono::steady_clock;
using env_list = std::vector<std::pair<std::string, std::string>>;

// A git command that takes longer is killed (with the hooks it started) and reported.
constexpr auto git_timeout = 60s;
// Bounds what one git command may make us hold in memory; the stderr beyond its bound is read
// and dropped so that git never blocks on a full pipe.
constexpr std::size_t max_git_output = 16u << 20;
constexpr std::size_t max_git_stderr = 64u << 10;
constexpr std::size_t shown_changes = 20;

// run_git's result when git did not run to an exit status of its own.
constexpr int git_missing = -2;  // not installed: the callers fall back to the non-git path
constexpr int git_failed = -1;   // could not start, timed out, killed, output too large

// The top-level .ralph/ is ralph's bookkeeping; `:(exclude)` keeps it out of snapshots and stats.
constexpr std::array<std::string_view, 3> workspace_pathspec = {"--", ".", ":(exclude).ralph"};

// Variables that would make git use another repository, work tree or index than the one that
// `-C dir` finds: the daemon may have been started with them (e.g. from inside a git hook).
constexpr std::array<std::string_view, 8> repository_variables = {
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX"};

bool make_pipe(unique_fd& read_end, unique_fd& write_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
    return true;
}

// strerror() may share a buffer between threads; the category's message does not.
std::string system_message(int error) { return std::generic_category().message(error); }

std::string trim(std::string_view text) {
    auto begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string_view::npos) return "";
    auto end = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(begin, end - begin + 1));
}

std::vector<std::string> split_lines(std::string_view text) {
    std::vector<std::string> lines;
    while (!text.empty()) {
        auto newline = text.find('\n');
        lines.emplace_back(text.substr(0, newline));
        if (newline == std::string_view::npos) break;
        text.remove_prefix(newline + 1);
    }
    return lines;
}

void append_error(std::string& into, const std::string& message) {
    if (message.empty()) return;
    if (!into.empty()) into += "; ";
    into += message;
}

// git's stderr made into one line for an error message: its hints dropped, bounded.
std::string summarize_stderr(const std::string& text) {
    std::string summary;
    for (const auto& line : split_lines(text)) {
        std::string trimmed = trim(line);
        if (trimmed.empty() || trimmed.rfind("hint:", 0) == 0) continue;
        append_error(summary, trimmed);
    }
    if (summary.size() > 1000) {
        // Cut on a character boundary: the message may end up in JSON, which must be UTF-8.
        std::size_t cut = 1000;
        while (cut > 0 && (static_cast<unsigned char>(summary[cut]) & 0xC0) == 0x80) --cut;
        summary = summary.substr(0, cut) + "...";
    }
    return summary;
}

// "git <subcommand>" for messages: the first argument that is not a `-c name=value` option.
std::string describe(const std::vector<std::string>& args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "-c") {
            ++i;
            continue;
        }
        return "git " + args[i];
    }
    return "git";
}

std::vector<std::string> git_environment(const env_list& extra_env) {
    env_list overrides = {{"GIT_TERMINAL_PROMPT", "0"},  // never wait for a password
                          {"GIT_OPTIONAL_LOCKS", "0"},   // status must not take index.lock
                          {"LC_ALL", "C"}};              // messages we can recognise
    overrides.insert(overrides.end(), extra_env.begin(), extra_env.end());
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        std::string_view variable(*entry);
        std::string_view name = variable.substr(0, variable.find('='));
        bool dropped = std::find(repository_variables.begin(), repository_variables.end(), name) !=
                           repository_variables.end() ||
                       std::any_of(overrides.begin(), overrides.end(),
                                   [&](const auto& override) { return override.first == name; });
        if (!dropped) env.emplace_back(variable);
    }
    for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
    return env;
}

// What the monitor needs, prepared by the parent: between clone and _exit the monitor must not
// allocate or take a lock (another thread may have held one at the moment of the clone).
struct monitor_setup {
    const char* program = nullptr;
    char* const* argv = nullptr;
    char* const* envp = nullptr;
    int stdin_fd = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
    int report_fd = -1;  // the monitor writes its monitor_report here
    int max_fd = 1024;   // for the fallback when close_range is not available
    int exec_errno = 0;  // set by git's vfork child in the monitor's memory if execve fails
};

// What the monitor tells the parent before it exits.
struct monitor_report {
    int kind = 0;   // report_exited or report_not_started
    int value = 0;  // git's wait status, or the errno of the failed start
};
constexpr int report_exited = 1;
constexpr int report_not_started = 2;

// Closes every descriptor from `first` up, except `keep`.
void close_all_from(int first, int keep, int max_fd) {
    bool closed = (keep == first || ::close_range(unsigned(first), unsigned(keep - 1), 0) == 0) &&
                  ::close_range(unsigned(keep + 1), ~0u, 0) == 0;
    if (closed) return;
    for (int fd = first; fd < max_fd; ++fd)
        if (fd != keep) ::close(fd);
}

// The monitor: a copy of this process (no exec) that starts git, waits for it and reports its
// status. Async-signal-safe calls only. See start_monitor for why it exists.
int monitor_git(void* data) {
    monitor_setup& setup = *static_cast<monitor_setup*>(data);
    monitor_report report;
    report.kind = report_not_started;
    // A new process group that git and its hooks join, so that a timeout kills them together.
    ::setpgid(0, 0);
    // Default dispositions and an empty mask for git, whatever the daemon ignores (SIGPIPE) or
    // the calling thread blocks.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int signal = 1; signal < NSIG; ++signal) ::sigaction(signal, &default_action, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::dup2(setup.stdin_fd, STDIN_FILENO) < 0 || ::dup2(setup.stdout_fd, STDOUT_FILENO) < 0 ||
        ::dup2(setup.stderr_fd, STDERR_FILENO) < 0) {
        report.value = errno;
    } else {
        // git gets stdin/stdout/stderr and nothing else of the daemon's (sockets, the database,
        // other commands' pipes, which must see end of file when their own git exits).
        close_all_from(STDERR_FILENO + 1, setup.report_fd, setup.max_fd);
        pid_t git = ::vfork();
        if (git == 0) {
            ::execve(setup.program, setup.argv, setup.envp);
            setup.exec_errno = errno;  // vfork: this is the monitor's memory
            ::_exit(127);
        }
        int start_errno = errno;
        // Only git holds the output pipes now: the parent sees end of file when git is done.
        ::close(STDIN_FILENO);
        ::close(STDOUT_FILENO);
        ::close(STDERR_FILENO);
        int status = 0;
        if (git > 0)
            while (::waitpid(git, &status, 0) < 0 && errno == EINTR) {
            }
        if (git < 0) {
            report.value = start_errno;
        } else if (setup.exec_errno != 0) {
            report.value = setup.exec_errno;
        } else {
            report.kind = report_exited;
            report.value = status;
        }
    }
    ssize_t written = ::write(setup.report_fd, &report, sizeof report);
    ::_exit(written == sizeof report ? 0 : 1);
}

// Starts the monitor of one git command, returning its pid.
//
// Why a monitor rather than posix_spawn of git itself: the daemon's child_reaper collects
// *every* child with waitpid(-1, ...) on the io thread, so the exit status of a git started
// directly from this thread could be taken before our waitpid(pid) sees it. git is instead the
// child of the monitor, which waits for it and writes the status into the report pipe. The
// monitor is a "clone child" that sends no signal when it exits (exit signal 0): waitpid(-1)
// without __WCLONE does not see it, so only we collect it, and its pid (also the group id of git
// and its hooks) stays ours to kill until we do. It never calls exec, which would make it an
// ordinary child again. No CLONE_VM: it has its own copy of memory, as after fork.
pid_t start_monitor(monitor_setup& setup, int& start_errno) {
    std::vector<char> stack(64 * 1024);
    auto top = reinterpret_cast<std::uintptr_t>(stack.data() + stack.size()) & ~std::uintptr_t(15);
    pid_t pid = ::clone(monitor_git, reinterpret_cast<void*>(top), 0, &setup);
    start_errno = pid < 0 ? errno : 0;
    return pid;
}

// Reads what `fd` holds now into `into` (beyond `limit` it is dropped, and `overflow` set).
// Returns false once the stream has ended.
bool read_available(int fd, std::string& into, std::size_t limit, bool& overflow) {
    std::array<char, 16384> buffer;
    while (true) {
        ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n > 0) {
            std::size_t room = limit > into.size() ? limit - into.size() : 0;
            if (std::size_t(n) > room) overflow = true;
            into.append(buffer.data(), std::min(std::size_t(n), room));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

// Collects the monitor once it has written its report or been killed: it exits right away.
void reap_monitor(pid_t monitor) {
    int status = 0;
    while (::waitpid(monitor, &status, __WCLONE) < 0 && errno == EINTR) {
    }
}

// Kills the monitor's group (the monitor, git, git's hooks) and collects the monitor.
void kill_monitor(pid_t monitor) {
    ::kill(-monitor, SIGKILL);
    ::kill(monitor, SIGKILL);  // in case its setpgid failed
    reap_monitor(monitor);
}

// Runs `git -C dir args...` with the process environment minus repository_variables plus
// GIT_TERMINAL_PROMPT=0, GIT_OPTIONAL_LOCKS=0, LC_ALL=C and `extra_env`; stdin /dev/null; no
// shell. Returns git's exit status with its stdout in `output` (up to max_git_output) and, when
// the status is not 0, `error` describing the failure from its stderr. Returns git_missing or
// git_failed (with `error`) when git did not run to an exit status of its own.
int run_git(const fs::path& dir, const std::vector<std::string>& args, const env_list& extra_env,
            std::string& output, std::string& error) {
    output.clear();
    error.clear();
    const std::string what = describe(args);
    std::vector<std::string> env = git_environment(extra_env);
    fs::path program = paths::find_executable("git", search_path_of(env));
    if (program.empty()) {
        error = "git is not installed (not found on PATH)";
        return git_missing;
    }

    std::vector<std::string> argv_storage = {"git", "-C", dir.string()};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (auto& arg : argv_storage) argv.push_back(arg.data());
    argv.push_back(nullptr);
    for (auto& entry : env) envp.push_back(entry.data());
    envp.push_back(nullptr);

    unique_fd out_read, out_write, err_read, err_write, report_read, report_write;
    unique_fd null_input(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (null_input.get() < 0 || !make_pipe(out_read, out_write) ||
        !make_pipe(err_read, err_write) || !make_pipe(report_read, report_write)) {
        error = "cannot run " + what + ": " + system_message(errno);
        return git_failed;
    }

    monitor_setup setup;
    setup.program = program.c_str();
    setup.argv = argv.data();
    setup.envp = envp.data();
    setup.stdin_fd = null_input.get();
    setup.stdout_fd = out_write.get();
    setup.stderr_fd = err_write.get();
    setup.report_fd = report_write.get();
    struct rlimit files {};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0)
        setup.max_fd = int(std::min<rlim_t>(files.rlim_cur, 1 << 20));

    int start_errno = 0;
    pid_t monitor = start_monitor(setup, start_errno);
    if (monitor < 0) {
        error = "cannot run " + what + ": " + system_message(start_errno);
        return git_failed;
    }
    out_write.reset();
    err_write.reset();
    report_write.reset();
    null_input.reset();

    ::fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
    ::fcntl(err_read.get(), F_SETFL, O_NONBLOCK);
    std::string errors;
    bool output_overflow = false, stderr_overflow = false;
    monitor_report report;
    ssize_t reported = -1;  // bytes of the report read; 0: the monitor died without one
    const auto deadline = steady_clock::now() + git_timeout;
    std::array<pollfd, 3> fds = {pollfd{out_read.get(), POLLIN, 0},
                                 pollfd{err_read.get(), POLLIN, 0},
                                 pollfd{report_read.get(), POLLIN, 0}};
    auto read_streams = [&] {
        if (fds[0].fd >= 0 && !read_available(fds[0].fd, output, max_git_output, output_overflow))
            fds[0].fd = -1;  // poll ignores negative descriptors
        if (fds[1].fd >= 0 && !read_available(fds[1].fd, errors, max_git_stderr, stderr_overflow))
            fds[1].fd = -1;
    };
    // Until the report: it comes once git has exited, when all git wrote is in the pipes. (Their
    // end of file could come later: a hook or helper git started may still hold them.)
    while (reported < 0 && !output_overflow) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady_clock::now());
        if (left <= 0ms) break;
        int ready = ::poll(fds.data(), fds.size(), int(left.count()));
        if (ready < 0 && errno != EINTR)
            break;  // cannot watch git: stop it rather than wait blindly
        if (ready <= 0) continue;
        read_streams();
        if (fds[2].revents != 0) {
            // 8 bytes, below PIPE_BUF: written and read whole.
            do {
                reported = ::read(report_read.get(), &report, sizeof report);
            } while (reported < 0 && errno == EINTR);
            if (reported < 0) reported = 0;
        }
    }
    if (reported < 0) {
        kill_monitor(monitor);
        if (output_overflow) {
            error = what + " printed more than " + std::to_string(max_git_output >> 20) + " MiB";
        } else {
            error = what + " did not finish within " + std::to_string(git_timeout.count()) +
                    " s in " + dir.string() + " and was killed";
        }
        return git_failed;
    }
    reap_monitor(monitor);
    read_streams();  // what git wrote last
    if (output_overflow) {
        error = what + " printed more than " + std::to_string(max_git_output >> 20) + " MiB";
        return git_failed;
    }
    if (reported != sizeof report) {
        error = "lost the exit status of " + what + " (its monitor process was killed)";
        return git_failed;
    }
    if (report.kind == report_not_started) {
        error = "cannot run " + program.string() + ": " + system_message(report.value);
        return git_failed;
    }
    if (WIFSIGNALED(report.value)) {
        error = what + " was killed by signal " + std::to_string(WTERMSIG(report.value));
        return git_failed;
    }
    int code = WIFEXITED(report.value) ? WEXITSTATUS(report.value) : git_failed;
    if (code != 0) {
        std::string detail = summarize_stderr(errors);
        error = what + " failed in " + dir.string() + (detail.empty() ? "" : ": " + detail);
    }
    return code;
}

struct repository {
    bool found = false;
    fs::path index;     // this work tree's index file (worktrees have their own)
    fs::path top;       // the top of the work tree
    std::string prefix; // `dir` relative to top, "" at the top
    std::string error;  // git could not tell; "not a repository" is not an error
};

// Whether `dir` or a directory above it has a .git entry (a directory, or a file in a linked
// worktree). Without one git cannot find a repository, and saying so needs no git process:
// that keeps snapshots of a plain directory cheap (they run twice per iteration).
bool has_git_entry(const fs::path& dir) {
    std::error_code ec;
    for (fs::path p = fs::absolute(dir, ec).lexically_normal(); !p.empty(); p = p.parent_path()) {
        if (fs::exists(p / ".git", ec)) return true;
        if (p == p.root_path()) break;
    }
    return false;
}

repository find_repository(const fs::path& dir) {
    repository repo;
    if (!has_git_entry(dir)) return repo;
    std::string output, error;
    int code = run_git(dir,
                       {"rev-parse", "--is-inside-work-tree", "--git-path", "index",
                        "--show-toplevel", "--show-prefix"},
                       {}, output, error);
    if (code == git_missing) return repo;
    if (code != 0) {
        if (error.find("not a git repository") == std::string::npos) repo.error = error;
        return repo;
    }
    auto lines = split_lines(output);
    // "false": inside a .git directory or a bare repository, which have no work to snapshot.
    if (lines.size() < 3 || lines[0] != "true") return repo;
    fs::path index = lines[1];
    repo.index = index.is_absolute() ? index : dir / index;  // relative to -C dir
    repo.top = lines[2];
    if (lines.size() > 3) repo.prefix = lines[3];  // "sub/dir/", or an empty line at the top
    while (!repo.prefix.empty() && repo.prefix.back() == '/') repo.prefix.pop_back();
    repo.found = true;
    return repo;
}

std::string read_head(const fs::path& dir, std::string& error) {
    std::string output, git_error;
    int code =
        run_git(dir, {"rev-parse", "--verify", "-q", "HEAD^{commit}"}, {}, output, git_error);
    if (code == 0) return trim(output);
    if (code != 1) append_error(error, git_error);  // 1: no commit yet, HEAD is unborn
    return "";
}

struct temporary_directory {
    fs::path path;
    ~temporary_directory() {
        std::error_code ignored;
        if (!path.empty()) fs::remove_all(path, ignored);
    }
};

// The tree of the working tree as `git add -A` would stage it, written through a private copy
// of the index so that the user's index (and what they staged) is never touched.
std::string write_working_tree(const fs::path& dir, const fs::path& index, std::string& error) {
    std::error_code ec;
    fs::path temp = fs::temp_directory_path(ec);
    if (ec) temp = "/tmp";
    std::string name = (temp / "ralph-index-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr) {
        int saved = errno;
        append_error(error, "cannot create a temporary directory in " + temp.string() + ": " +
                                system_message(saved));
        return "";
    }
    temporary_directory private_dir{name};
    fs::path private_index = private_dir.path / "index";

    // The copy keeps the original's modification time: git re-reads the content of entries
    // not older than the index file, and a newer copy would let it trust the cached stat data
    // of a file changed in the instant the index was written. (Time read before copying, so a
    // concurrent rewrite of the index can only make the copy look older, which is safe.)
    auto index_time = fs::last_write_time(index, ec);
    if (!ec) {
        fs::copy_file(index, private_index, ec);
        if (!ec) fs::last_write_time(private_index, index_time, ec);
        if (ec) {
            append_error(error, "cannot copy the index " + index.string() + ": " + ec.message());
            return "";
        }
    } else if (ec != std::errc::no_such_file_or_directory) {
        append_error(error, "cannot read the index " + index.string() + ": " + ec.message());
        return "";
    }  // no index yet (a new repository): git starts from an empty one

    env_list env = {{"GIT_INDEX_FILE", private_index.string()}};
    std::vector<std::string> add = {"add", "-A"};
    add.insert(add.end(), workspace_pathspec.begin(), workspace_pathspec.end());
    std::string output, git_error;
    if (run_git(dir, add, env, output, git_error) != 0) {
        append_error(error, git_error);
        return "";
    }
    if (run_git(dir, {"write-tree"}, env, output, git_error) != 0) {
        append_error(error, git_error);
        return "";
    }
    return trim(output);
}

std::string hex(std::uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

// FNV-1a 64: fast, good enough to notice a change, not meant against an adversary.
constexpr std::uint64_t fnv_offset = 14695981039346656037ull;
std::uint64_t fnv1a(std::uint64_t hash, const char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
        hash ^= static_cast<unsigned char>(data[i]);
        hash *= 1099511628211ull;
    }
    return hash;
}

std::string identify_file(const fs::path& path, fs::file_type type, std::uintmax_t max_content_size,
                          std::string& error) {
    if (type == fs::file_type::symlink) {
        std::error_code ec;
        std::string target = fs::read_symlink(path, ec).string();
        if (ec) {
            append_error(error, "cannot read the link " + path.string() + ": " + ec.message());
            return "unreadable";
        }
        return "link:" + hex(fnv1a(fnv_offset, target.data(), target.size()));
    }
    // O_NONBLOCK: a file replaced by a FIFO since the directory was read must not block us.
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0) {
        append_error(error, "cannot read " + path.string() + ": " + system_message(errno));
        return "unreadable";
    }
    if (!S_ISREG(info.st_mode)) return "unreadable";
    if (std::uintmax_t(info.st_size) > max_content_size)
        return "size:" + std::to_string(info.st_size) + ":" +
               std::to_string(std::int64_t(info.st_mtim.tv_sec) * 1000000000 +
                              info.st_mtim.tv_nsec);
    std::uint64_t hash = fnv_offset;
    std::array<char, 65536> buffer;
    while (true) {
        ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            append_error(error, "cannot read " + path.string() + ": " + system_message(errno));
            return "unreadable";
        }
        hash = fnv1a(hash, buffer.data(), std::size_t(n));
    }
    return "content:" + hex(hash);
}

// Adds the files below `root / relative` ("" is the root) to `snap.files`, in the byte order of
// their keys, until limits.max_files: so a truncated map holds exactly the smallest keys, which
// is what compare() relies on. Symbolic links are recorded, never followed.
void hash_directory(const fs::path& root, const std::string& relative, const file_limits& limits,
                    snapshot& snap) {
    struct child {
        std::string key;
        std::string order;  // a directory sorts as its key plus '/', as its files' keys do
        fs::file_type type;
    };
    std::vector<child> children;
    std::error_code ec;
    fs::directory_iterator it(root / relative, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::string name = it->path().filename().string();
        // Git's internals change on every git command; .ralph/ is ralph's own bookkeeping.
        if (name == ".git" || (relative.empty() && name == ".ralph")) continue;
        std::error_code type_ec;
        fs::file_type type = it->symlink_status(type_ec).type();
        if (type_ec) continue;  // gone since it was listed
        std::string key = relative.empty() ? name : relative + "/" + name;
        std::string order = type == fs::file_type::directory ? key + "/" : key;
        children.push_back({std::move(key), std::move(order), type});
    }
    if (ec) {
        append_error(snap.error, "cannot list " + (root / relative).string() + ": " + ec.message());
    }
    std::sort(children.begin(), children.end(),
              [](const child& a, const child& b) { return a.order < b.order; });
    for (const auto& entry : children) {
        if (snap.files_truncated) return;
        if (entry.type == fs::file_type::directory) {
            hash_directory(root, entry.key, limits, snap);
        } else if (entry.type == fs::file_type::regular || entry.type == fs::file_type::symlink) {
            if (snap.files.size() == limits.max_files) {
                snap.files_truncated = true;
                append_error(snap.error, "more than " + std::to_string(limits.max_files) +
                                             " files: only the first are compared");
                return;
            }
            snap.files[entry.key] =
                identify_file(root / entry.key, entry.type, limits.max_content_size, snap.error);
        }
        // Sockets, FIFOs and devices are not work.
    }
}

void compare_files(const snapshot& before, const snapshot& after, change_stats& stats) {
    // A truncated side only knows the keys up to its last one; beyond, nothing is compared.
    std::optional<std::string> limit;
    for (const snapshot* side : {&before, &after}) {
        if (!side->files_truncated || side->files.empty()) continue;
        const std::string& last = side->files.rbegin()->first;
        if (!limit || last < *limit) limit = last;
    }
    auto a = before.files.begin();
    auto b = after.files.begin();
    auto within = [&](const std::string& key) { return !limit || key <= *limit; };
    while (a != before.files.end() || b != after.files.end()) {
        if (b == after.files.end() || (a != before.files.end() && a->first < b->first)) {
            if (within(a->first)) ++stats.files_changed;  // removed
            ++a;
        } else if (a == before.files.end() || b->first < a->first) {
            if (within(b->first)) ++stats.files_changed;  // added
            ++b;
        } else {
            if (a->second != b->second) ++stats.files_changed;
            ++a;
            ++b;
        }
    }
    stats.tree_changed = stats.files_changed > 0;
}

void compare_git(const fs::path& dir, const snapshot& before, const snapshot& after,
                 change_stats& stats) {
    // An empty HEAD is a repository without commits, unless the snapshot failed: then unknown.
    bool before_head_known = !before.head.empty() || before.error.empty();
    bool after_head_known = !after.head.empty() || after.error.empty();
    stats.head_moved = before_head_known && after_head_known && before.head != after.head;
    if (before.tree.empty() || after.tree.empty()) {
        stats.error = "no working tree to compare";
        append_error(stats.error, before.error);
        append_error(stats.error, after.error);
        return;
    }
    if (before.tree == after.tree) return;
    stats.tree_changed = true;

    // Renames found whatever diff.renames says, so that statistics do not depend on the user's
    // configuration; paths are not parsed, so the default line format is enough.
    std::vector<std::string> args = {"diff",          "--numstat",     "--find-renames",
                                     "--no-ext-diff", "--no-textconv", before.tree,
                                     after.tree};
    args.insert(args.end(), workspace_pathspec.begin(), workspace_pathspec.end());
    std::string output, error;
    if (run_git(dir, args, {}, output, error) != 0) {
        stats.error = error;
        return;
    }
    for (const auto& line : split_lines(output)) {
        // "<insertions>\t<deletions>\t<path>", "-\t-\t<path>" for a binary file.
        auto first_tab = line.find('\t');
        auto second_tab = line.find('\t', first_tab == std::string::npos ? 0 : first_tab + 1);
        if (first_tab == std::string::npos || second_tab == std::string::npos) continue;
        ++stats.files_changed;
        std::int64_t added = 0, deleted = 0;
        std::from_chars(line.data(), line.data() + first_tab, added);
        std::from_chars(line.data() + first_tab + 1, line.data() + second_tab, deleted);
        stats.insertions += added;
        stats.deletions += deleted;
    }
}

// `relative_path` as a key of snapshot::files ("a/b.md"), or nothing when it is not inside `dir`.
std::optional<std::string> workspace_key(const fs::path& dir, std::string_view relative_path) {
    fs::path path(relative_path);
    if (path.is_absolute()) path = path.lexically_relative(dir);
    path = path.lexically_normal();
    std::string key = path.generic_string();
    while (!key.empty() && key.back() == '/') key.pop_back();
    if (key.empty() || key == "." || key == ".." || key.rfind("../", 0) == 0) return std::nullopt;
    return key;
}

// The blob id of `key` in `tree`, "" when the tree has no such file.
std::string blob_id(const fs::path& dir, const std::string& tree, const std::string& key,
                    bool& failed) {
    std::string output, error;
    // "./" makes the path relative to `dir`, which may be a subdirectory of the work tree.
    int code = run_git(dir, {"rev-parse", "--verify", "-q", tree + ":./" + key}, {}, output, error);
    if (code == 0) return trim(output);
    if (code != 1) failed = true;
    return "";
}

}  // namespace

snapshot take_snapshot(const std::filesystem::path& dir, const file_limits& limits) {
    snapshot snap;
    repository repo = find_repository(dir);
    if (!repo.found) {
        append_error(snap.error, repo.error);
        hash_directory(dir, "", limits, snap);
        return snap;
    }
    snap.is_git = true;
    snap.head = read_head(dir, snap.error);
    snap.tree = write_working_tree(dir, repo.index, snap.error);
    return snap;
}

change_stats compare(const std::filesystem::path& dir, const snapshot& before,
                     const snapshot& after) {
    change_stats stats;
    if (before.is_git != after.is_git) {
        // e.g. the agent ran `git init`: certainly a change, but nothing to diff against.
        stats.tree_changed = true;
        stats.head_moved = before.head != after.head;
        stats.error = "the workspace became or stopped being a git repository: no diff statistics";
        return stats;
    }
    if (before.is_git)
        compare_git(dir, before, after, stats);
    else
        compare_files(before, after, stats);
    return stats;
}

bool file_changed(const snapshot& before, const snapshot& after, const std::filesystem::path& dir,
                  std::string_view relative_path) {
    auto key = workspace_key(dir, relative_path);
    if (!key) return false;
    if (before.is_git != after.is_git) return true;  // as compare() says of the whole tree
    if (!before.is_git) {
        auto a = before.files.find(*key);
        auto b = after.files.find(*key);
        std::string before_hash = a == before.files.end() ? "" : a->second;
        std::string after_hash = b == after.files.end() ? "" : b->second;
        return before_hash != after_hash;
    }
    if (before.tree.empty() || after.tree.empty() || before.tree == after.tree) return false;
    bool failed = false;
    std::string before_blob = blob_id(dir, before.tree, *key, failed);
    std::string after_blob = blob_id(dir, after.tree, *key, failed);
    return !failed && before_blob != after_blob;
}

dirty_state check_dirty(const std::filesystem::path& dir) {
    dirty_state state;
    repository repo = find_repository(dir);
    if (!repo.found) {
        state.error = repo.error;
        return state;
    }
    state.is_git = true;
    std::string output, error;
    // Porcelain output is stable, uncoloured and relative to the top of the work tree; with
    // quotePath off, non-ASCII names are shown as they are rather than as octal escapes.
    // .ralph/ (state file, notes) is ralph's own: a loop's leftovers do not make the next dirty.
    if (run_git(dir,
                {"-c", "core.quotePath=false", "status", "--porcelain", "--", ".", ":(exclude).ralph"},
                {}, output, error) != 0) {
        state.error = error;
        return state;
    }
    auto lines = split_lines(output);
    state.total_changes = lines.size();
    state.dirty = !lines.empty();
    if (lines.size() > shown_changes) lines.resize(shown_changes);
    state.changes = std::move(lines);
    return state;
}

std::string commit_all(const std::filesystem::path& dir, const std::string& message,
                       std::string& error) {
    error.clear();
    repository repo = find_repository(dir);
    if (!repo.found) {
        error = repo.error.empty() ? "cannot commit in " + dir.string() + ": not a git work tree"
                                   : repo.error;
        return "";
    }
    std::string output, git_error;
    if (run_git(dir, {"add", "-A", "--", "."}, {}, output, git_error) != 0) {
        error = git_error;
        return "";
    }
    int staged = run_git(dir, {"diff", "--cached", "--quiet", "--", "."}, {}, output, git_error);
    if (staged == 0) return read_head(dir, error);  // nothing to commit is not an error
    if (staged != 1) {
        error = git_error;
        return "";
    }

    // A default identity only where the repository has none, so that a user's is never replaced
    // (and a missing one does not fail the commit: daemons often run without a ~/.gitconfig).
    std::vector<std::string> args;
    run_git(dir, {"config", "--get-regexp", "^user\\.(name|email)$"}, {}, output, git_error);
    bool has_name = false, has_email = false;
    for (const auto& line : split_lines(output)) {
        if (line.rfind("user.name ", 0) == 0) has_name = true;
        if (line.rfind("user.email ", 0) == 0) has_email = true;
    }
    if (!has_name) args.insert(args.end(), {"-c", "user.name=ralph"});
    if (!has_email) args.insert(args.end(), {"-c", "user.email=ralph@localhost"});
    // With a pathspec, only the workspace's paths are committed even when it is a subdirectory
    // of the work tree and the user has staged something elsewhere.
    args.insert(args.end(), {"commit", "--quiet", "-m", message, "--", "."});
    if (run_git(dir, args, {}, output, git_error) != 0) {
        error = git_error;
        return "";
    }
    std::string head = read_head(dir, error);
    if (head.empty() && error.empty()) error = "git commit in " + dir.string() + " left no HEAD";
    return head;
}

repository_info inspect_repository(const std::filesystem::path& dir) {
    repository_info info;
    repository repo = find_repository(dir);
    info.error = repo.error;
    if (!repo.found) return info;
    info.is_git = true;
    info.top = repo.top;
    info.prefix = repo.prefix;
    info.head = read_head(dir, info.error);
    return info;
}

std::filesystem::path git_common_dir(const std::filesystem::path& dir) {
    if (!has_git_entry(dir)) return {};
    std::string output, error;
    if (run_git(dir, {"rev-parse", "--git-common-dir"}, {}, output, error) != 0) return {};
    const fs::path path = trim(output);
    return path.is_absolute() ? path : (dir / path).lexically_normal();
}

bool has_branch(const std::filesystem::path& dir, const std::string& branch, std::string& error) {
    std::string output, git_error;
    int code = run_git(dir, {"rev-parse", "--verify", "-q", "refs/heads/" + branch}, {}, output,
                       git_error);
    if (code != 0 && code != 1) append_error(error, git_error);  // 1: no such branch
    return code == 0;
}

std::string add_worktree(const std::filesystem::path& source, const std::filesystem::path& path,
                         const std::string& branch, const std::string& base) {
    std::error_code ec;
    if (fs::exists(path / ".git", ec)) return "";  // made at an earlier start of the loop
    std::string error;
    // The branch outlives a worktree removed by hand: the loop then goes on with its work.
    bool existing = has_branch(source, branch, error);
    if (!error.empty()) return error;
    std::vector<std::string> args = {"worktree", "add", "--quiet"};
    if (existing) args.insert(args.end(), {path.string(), branch});
    else args.insert(args.end(), {"-b", branch, path.string(), base});
    std::string output;
    if (run_git(source, args, {}, output, error) != 0) return error;
    return "";
}

}  // namespace ralph::workspace
