// ralph-shim: runs one attempt's agent and outlives ralphd (the contract:
// common/shim_protocol.hpp).
//
// Started by ralphd with the attempt's directory as its argument and a shim::spec on stdin. It
// leaves ralphd's session, becomes a child subreaper, starts the agent in its own process group
// (and in a cgroup of its own when the spec names one), answers ralphd on stdout, and from then on
// needs nobody: it reads the agent's stdout and stderr and appends the bytes to the loop's output
// file, one journal record per write; it reaps the agent and the orphans it leaves; it ends every
// process of the attempt when the agent exits or when it gets SIGTERM (SIGTERM, SIGKILL after the
// grace: cgroup.kill, or each of its own descendants); and it writes exit.json and exits.
//
// One thread, poll(2) over the two pipes and a signalfd. The pipes are always read: an agent whose
// pipe fills up would stop working. Output that a full or read-only file system refuses is held in
// memory (up to held_limit) and written, in order, as soon as it can be — the shim waits for that
// after the agent's end too, unless it is told to end the attempt; output beyond the limit, or
// that a failing file system refuses, is counted as lost (exit_info.lost_bytes). So are the
// journal's records: no output is written while a record of earlier output waits, so ralphd
// (which reads what the journal announces) gets every byte with its stream. An attempt whose
// output passes spec.max_output_bytes is ended (SIGTERM, SIGKILL after the grace) and the rest of
// its output dropped: one agent cannot fill ralph's disk, with ralphd running or not.
#include "common/process_info.hpp"
#include "common/shim_protocol.hpp"
#include "common/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace ralph;
namespace fs = std::filesystem;

// As large as the agent's stdout pipe: a flooding agent is read in few wake-ups.
constexpr std::size_t read_buffer_bytes = 1 << 20;
// Room kept for exit.json from the start: a full disk must not lose how the attempt ended.
constexpr std::size_t exit_file_room = 4096;
// After SIGKILL, how long the pipes may stay open (a process outside the attempt holding them).
constexpr auto drain_limit = std::chrono::seconds(2);
// How often the end of the attempt's processes is checked while they are being ended.
constexpr int end_check_ms = 20;
// Output the file system refused (disk full, read-only) is held and written again every retry_ms,
// up to held_limit bytes; beyond that it is lost, and counted.
constexpr std::size_t held_limit = std::size_t(64) << 20;
constexpr int retry_ms = 250;

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string error_text(int error) { return std::strerror(error); }

// Writes all of `bytes`; false with errno set when the file system refused the rest.
bool write_all(int fd, const char* bytes, std::size_t size, std::size_t& written) {
    written = 0;
    while (written < size) {
        const ssize_t n = ::write(fd, bytes + written, size - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        written += std::size_t(n);
    }
    return true;
}

// In the agent's process, between fork and exec: tells the shim why the agent cannot run.
[[noreturn]] void exec_failed(int report, const std::string& why) {
    std::size_t written = 0;
    write_all(report, why.data(), std::min<std::size_t>(why.size(), 511), written);
    ::_exit(127);
}

// The one line of JSON ralphd waits for on our stdout.
void answer(const nlohmann::json& message) {
    const std::string line = message.dump() + "\n";
    std::size_t written = 0;
    write_all(STDOUT_FILENO, line.data(), line.size(), written);
}

[[noreturn]] void refuse(const std::string& error) {
    answer({{"error", error}});
    std::exit(1);
}

// A write of ralph's state failed with `error` (errno): `what` was being done.
[[noreturn]] void refuse_state(const std::string& what, int error) {
    answer({{"error", what + ": " + error_text(error)}, {"state_errno", error}});
    std::exit(1);
}

// Writes `text` to `dir/name` through a temporary file and a rename: a reader sees all or nothing.
bool publish(const fs::path& dir, const std::string& name, const std::string& text) {
    const fs::path temporary = dir / (name + ".tmp");
    unique_fd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    std::size_t written = 0;
    if (fd.get() < 0 || !write_all(fd.get(), text.data(), text.size(), written) || fd.close() != 0)
        return false;
    return ::rename(temporary.c_str(), (dir / name).c_str()) == 0;
}

// The attempt's processes: a cgroup's members, or else the shim's descendants (orphans come to
// the shim, a subreaper, so every process the agent started is one).
class attempt_processes {
  public:
    explicit attempt_processes(std::string cgroup) : cgroup_(std::move(cgroup)) {}

    const std::string& cgroup() const { return cgroup_; }

    // Moves the calling process into the cgroup; for the agent, between fork and exec.
    bool enter_cgroup() const {
        if (cgroup_.empty()) return true;
        unique_fd procs(::open((cgroup_ + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
        std::size_t written = 0;
        return procs.get() >= 0 && write_all(procs.get(), "0", 1, written);
    }

    std::vector<pid_t> members() const {
        return cgroup_.empty() ? descendants() : cgroup_members();
    }

    void signal_all(int signal) const {
        if (!cgroup_.empty() && signal == SIGKILL) {
            // The kernel kills every member, also those forking meanwhile.
            unique_fd kill(::open((cgroup_ + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC));
            std::size_t written = 0;
            if (kill.get() >= 0 && write_all(kill.get(), "1", 1, written)) return;
        }
        for (pid_t pid : members()) ::kill(pid, signal);
    }

    // Removes the cgroup once it is empty (the kernel refuses before).
    void remove_cgroup() const {
        if (!cgroup_.empty()) ::rmdir(cgroup_.c_str());
    }

  private:
    std::vector<pid_t> cgroup_members() const {
        std::vector<pid_t> pids;
        FILE* procs = std::fopen((cgroup_ + "/cgroup.procs").c_str(), "re");
        if (!procs) return pids;
        long pid = 0;
        while (std::fscanf(procs, "%ld", &pid) == 1) pids.push_back(pid_t(pid));
        std::fclose(procs);
        return pids;
    }

    // Every process whose chain of parents leads to the shim: the children of each of its threads
    // (/proc/PID/task/TID/children), and theirs. Orphans come to the shim, a subreaper, so none is
    // missed; the walk costs a few reads per descendant, not a read of every process's stat.
    static std::vector<pid_t> descendants() {
        std::set<pid_t> found;
        std::vector<pid_t> parents{::getpid()};
        while (!parents.empty()) {
            const pid_t parent = parents.back();
            parents.pop_back();
            const std::string tasks = "/proc/" + std::to_string(parent) + "/task";
            DIR* dir = ::opendir(tasks.c_str());
            if (!dir) continue;
            while (dirent* task = ::readdir(dir)) {
                if (task->d_name[0] == '.') continue;
                FILE* children =
                    std::fopen((tasks + "/" + task->d_name + "/children").c_str(), "re");
                if (!children) continue;
                long pid = 0;
                while (std::fscanf(children, "%ld", &pid) == 1)
                    if (found.insert(pid_t(pid)).second) parents.push_back(pid_t(pid));
                std::fclose(children);
            }
            ::closedir(dir);
        }
        return {found.begin(), found.end()};
    }

    std::string cgroup_;
};

struct output_pipe {
    unique_fd fd;
    shim::stream stream;
};

class supervisor {
  public:
    supervisor(fs::path dir, shim::spec spec)
        : dir_(std::move(dir)), spec_(std::move(spec)), processes_(make_cgroup(spec_.cgroup)) {}

    void start();
    int run();

  private:
    static std::string make_cgroup(const std::string& cgroup) {
        if (cgroup.empty()) return {};
        // An existing directory is a cgroup left by an earlier attempt with this name: reused.
        if (::mkdir(cgroup.c_str(), 0755) != 0 && errno != EEXIST) return {};
        return cgroup;
    }
    [[noreturn]] void exec_agent(int in, int out, int err, int report);
    void read_output(output_pipe& pipe);
    // Writes the output in order: what was held back first, then `bytes`, holding back what the
    // file system refuses.
    void append(shim::stream stream, const char* bytes, std::size_t size);
    // Writes what it can of the held output and journal records; true when nothing is held any
    // more.
    bool write_held();
    // Writes `size` bytes to the output file and journals what was written; returns that count
    // (none while a journal record is held).
    std::size_t write_output(shim::stream stream, const char* bytes, std::size_t size);
    // Writes what it can of the held journal records; true when none is held any more.
    bool write_journal();
    void lose(std::size_t size, int error);
    void handle_signals();
    void reap();
    void end_attempt(int signal);

    fs::path dir_;
    shim::spec spec_;
    attempt_processes processes_;
    unique_fd output_;
    unique_fd journal_;
    unique_fd exit_room_;  // the space of exit.json, taken at the start
    unique_fd signals_;
    std::int64_t offset_ = 0;  // where the next output byte goes
    std::vector<output_pipe> pipes_;
    // Output not written yet (the file system refused it), in order, with its stream.
    std::deque<std::pair<shim::stream, std::string>> held_;
    std::size_t held_bytes_ = 0;
    std::string journal_held_;  // records (or the end of one) the journal has not taken yet
    std::unique_ptr<char[]> buffer_ = std::make_unique_for_overwrite<char[]>(read_buffer_bytes);

    pid_t agent_ = 0;
    std::optional<int> agent_status_;
    std::int64_t agent_ended_at_ = 0;
    bool ending_ = false;  // SIGTERM went to the attempt's processes
    // ralphd asked to end the attempt (a cancel, a stop): held output is not waited for. Not so
    // when the shim ends what the agent left running.
    bool told_to_end_ = false;
    bool killed_ = false;    // SIGKILL did
    bool draining_ = false;  // the agent and everything it started are gone; the pipes may not be
    std::chrono::steady_clock::time_point kill_at_, stop_draining_at_;
    shim::exit_info exit_;
};

void supervisor::start() {
    output_.reset(::open(spec_.output_file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    if (output_.get() < 0 || ::ftruncate(output_.get(), spec_.output_start) != 0 ||
        ::lseek(output_.get(), spec_.output_start, SEEK_SET) < 0)
        refuse_state("cannot open the output file " + spec_.output_file, errno);
    offset_ = spec_.output_start;
    journal_.reset(::open((dir_ / shim::journal_file).c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600));
    if (journal_.get() < 0)
        refuse_state("cannot create the attempt's journal in " + dir_.string(), errno);
    exit_room_.reset(::open((dir_ / shim::exit_room_file).c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (exit_room_.get() < 0)
        refuse_state("cannot create the attempt's exit file in " + dir_.string(), errno);
    if (const int error = ::posix_fallocate(exit_room_.get(), 0, exit_file_room); error != 0)
        refuse_state("cannot create the attempt's exit file in " + dir_.string(), error);

    const std::string stdin_path = spec_.stdin_path.empty() ? "/dev/null" : spec_.stdin_path;
    unique_fd in(::open(stdin_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.get() < 0) refuse("cannot open agent stdin " + stdin_path + ": " + error_text(errno));
    int out[2], err[2], report[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
        ::pipe2(report, O_CLOEXEC) != 0)
        refuse("cannot create a pipe: " + error_text(errno));
    // A larger pipe lets a flooding agent write more per wake-up.
    ::fcntl(out[0], F_SETPIPE_SZ, int(read_buffer_bytes));

    agent_ = ::fork();
    if (agent_ < 0) refuse("cannot fork: " + error_text(errno));
    if (agent_ == 0) exec_agent(in.get(), out[1], err[1], report[1]);
    ::close(out[1]);
    ::close(err[1]);
    ::close(report[1]);
    pipes_.push_back({unique_fd(out[0]), shim::stream::stdout_stream});
    pipes_.push_back({unique_fd(err[0]), shim::stream::stderr_stream});

    // The child writes why it could not exec; end of file means it did.
    char why[512];
    ssize_t n;
    do n = ::read(report[0], why, sizeof why - 1);
    while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n > 0) {
        int status = 0;
        ::waitpid(agent_, &status, 0);
        processes_.remove_cgroup();
        refuse(std::string(why, std::size_t(n)));
    }

    shim::started started;
    started.shim_pid = ::getpid();
    started.shim_start_time = process_start_time(started.shim_pid);
    started.agent_pid = agent_;
    started.agent_start_time = process_start_time(agent_);
    started.cgroup = processes_.cgroup();
    if (!publish(dir_, shim::started_file, nlohmann::json(started).dump())) {
        const int error = errno;
        ::kill(-agent_, SIGKILL);
        processes_.signal_all(SIGKILL);
        refuse_state("cannot write " + (dir_ / shim::started_file).string(), error);
    }
    answer(started);
    // ralphd may go away at any time from now on: nothing more is said on these.
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) ::dup2(null, fd);
    ::close(null);
}

void supervisor::exec_agent(int in, int out, int err, int report) {
    // Default dispositions and an empty mask, whatever the shim blocks or ignores.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int signal = 1; signal < NSIG; ++signal) ::signal(signal, SIG_DFL);
    const auto fail = [report](const std::string& why) { exec_failed(report, why); };
    ::setpgid(0, 0);
    if (!processes_.enter_cgroup())
        fail("cannot move the agent into the cgroup " + processes_.cgroup() + ": " +
             error_text(errno));
    if (::dup2(in, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
        ::dup2(err, STDERR_FILENO) < 0)
        fail("cannot set up the agent's standard streams: " + error_text(errno));
    const std::string& program = spec_.argv.empty() ? spec_.program : spec_.argv[0];
    if (::chdir(spec_.cwd.c_str()) != 0)
        fail("cannot run " + program + " in " + spec_.cwd + ": " + error_text(errno));
    // The agent gets stdin, stdout and stderr and nothing else of the shim's.
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    std::vector<char*> argv, envp;
    for (auto& arg : spec_.argv) argv.push_back(arg.data());
    argv.push_back(nullptr);
    for (auto& entry : spec_.env) envp.push_back(entry.data());
    envp.push_back(nullptr);
    ::execve(spec_.program.c_str(), argv.data(), envp.data());
    exec_failed(report, "cannot run " + program + " in " + spec_.cwd + ": " + error_text(errno));
}

void supervisor::append(shim::stream stream, const char* bytes, std::size_t size) {
    if (spec_.max_output_bytes > 0) {
        const std::int64_t written = offset_ - spec_.output_start + std::int64_t(held_bytes_);
        const std::int64_t room = std::max<std::int64_t>(0, spec_.max_output_bytes - written);
        if (std::int64_t(size) > room) {
            size = std::size_t(room);
            if (!exit_.over_output_limit) {
                exit_.over_output_limit = true;
                end_attempt(SIGTERM);
            }
        }
        if (size == 0) return;
    }
    const std::size_t taken = write_held() ? write_output(stream, bytes, size) : 0;
    if (taken == size) return;
    // Held up to the limit, the rest lost: the output keeps one gap where bytes were lost, not
    // a sprinkling of pieces that happened to fit.
    const std::size_t rest = size - taken;
    const std::size_t kept = std::min(rest, held_limit - held_bytes_);
    if (kept > 0) {
        held_.emplace_back(stream, std::string(bytes + taken, kept));
        held_bytes_ += kept;
    }
    if (kept < rest) lose(rest - kept, ENOSPC);
}

bool supervisor::write_held() {
    if (!write_journal()) return false;
    while (!held_.empty()) {
        auto& [stream, bytes] = held_.front();
        const std::size_t taken = write_output(stream, bytes.data(), bytes.size());
        held_bytes_ -= taken;
        if (taken < bytes.size()) {
            bytes.erase(0, taken);
            return false;
        }
        held_.pop_front();
    }
    return true;
}

std::size_t supervisor::write_output(shim::stream stream, const char* bytes, std::size_t size) {
    if (!write_journal()) return 0;
    std::size_t written = 0;
    std::size_t taken = size;
    if (!write_all(output_.get(), bytes, size, written)) {
        if (errno == ENOSPC || errno == EDQUOT || errno == EROFS)
            taken = written;  // the rest is held: room (or writing) may come back
        else
            lose(size - written, errno);  // a failing file system
    }
    if (written == 0) return taken;
    shim::journal_record record;
    record.offset = std::uint64_t(offset_);
    record.length = std::uint32_t(written);
    record.stream = std::uint8_t(stream);
    record.ts_ms = now_ms();
    offset_ += std::int64_t(written);
    // A record the journal cannot take now is held, and so is the output after it. One left at
    // the end leaves its bytes in the file; ralphd indexes such bytes when the attempt ends.
    journal_held_.append(reinterpret_cast<const char*>(&record), sizeof record);
    write_journal();
    return taken;
}

bool supervisor::write_journal() {
    std::size_t written = 0;
    write_all(journal_.get(), journal_held_.data(), journal_held_.size(), written);
    journal_held_.erase(0, written);
    return journal_held_.empty();
}

void supervisor::lose(std::size_t size, int error) {
    if (exit_.lost_bytes == 0)
        exit_.lost_reason =
            "cannot write the output file " + spec_.output_file + ": " + error_text(error);
    exit_.lost_bytes += std::int64_t(size);
}

void supervisor::read_output(output_pipe& pipe) {
    const ssize_t n = ::read(pipe.fd.get(), buffer_.get(), read_buffer_bytes);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
        pipe.fd.reset();
        return;
    }
    append(pipe.stream, buffer_.get(), std::size_t(n));
}

void supervisor::end_attempt(int signal) {
    if (signal == SIGTERM) {
        if (ending_) return;
        ending_ = true;
        kill_at_ =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(spec_.kill_grace_ms);
    } else {
        killed_ = true;
        if (!draining_) stop_draining_at_ = std::chrono::steady_clock::now() + drain_limit;
    }
    if (!agent_status_) ::kill(-agent_, signal);
    processes_.signal_all(signal);
}

void supervisor::reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid != agent_) continue;  // an orphan of the agent's, come to the subreaper
        agent_status_ = status;
        agent_ended_at_ = now_ms();
        // What the agent left running ends with it.
        if (!processes_.members().empty()) end_attempt(SIGTERM);
    }
}

void supervisor::handle_signals() {
    signalfd_siginfo info;
    while (::read(signals_.get(), &info, sizeof info) == ssize_t(sizeof info)) {
        if (info.ssi_signo == SIGCHLD) reap();
        if (info.ssi_signo == SIGTERM) {
            told_to_end_ = true;
            end_attempt(SIGTERM);
        }
    }
}

int supervisor::run() {
    sigset_t handled;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    sigaddset(&handled, SIGTERM);
    signals_.reset(::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC));
    reap();  // the agent may be gone already
    while (true) {
        const auto now = std::chrono::steady_clock::now();
        if (ending_ && !killed_ && now >= kill_at_) end_attempt(SIGKILL);
        const bool any_member = (ending_ || agent_status_) && !processes_.members().empty();
        if (killed_ && any_member) processes_.signal_all(SIGKILL);  // ones forked meanwhile
        const bool pipes_open = std::any_of(pipes_.begin(), pipes_.end(),
                                            [](const output_pipe& p) { return p.fd.get() >= 0; });
        // Held output waits for room, unless ralphd ends the attempt (cancel, daemon stop).
        const bool held = !write_held() && !told_to_end_;
        if (agent_status_ && !any_member) {
            if (!pipes_open && !held) break;
            // What is left in the pipes comes at once; a pipe still open after that is held by a
            // process outside the attempt.
            if (!draining_) {
                draining_ = true;
                stop_draining_at_ = now + drain_limit;
            }
        }
        if (agent_status_ && (draining_ || killed_) && now >= stop_draining_at_ && !held) break;

        std::vector<pollfd> fds{{signals_.get(), POLLIN, 0}};
        for (const auto& pipe : pipes_)
            if (pipe.fd.get() >= 0) fds.push_back({pipe.fd.get(), POLLIN, 0});
        int timeout = -1;
        if (ending_ || (agent_status_ && (any_member || pipes_open)))
            timeout = end_check_ms;
        else if (held)
            timeout = retry_ms;
        if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
        if (fds[0].revents) handle_signals();
        for (auto& pipe : pipes_)
            for (const auto& polled : fds)
                if (pipe.fd.get() == polled.fd && polled.revents) read_output(pipe);
    }
    // Everything still open now belongs to a process outside the attempt: its output is not ours.
    reap();
    processes_.remove_cgroup();

    if (!write_held()) lose(held_bytes_, ENOSPC);
    exit_.wait_status = agent_status_.value_or(0);
    exit_.ended_at_ms = agent_ended_at_;
    exit_.output_end = offset_;
    // Into the space taken at the start, then renamed: a full disk still learns how it ended.
    const std::string text = nlohmann::json(exit_).dump();
    const fs::path room = dir_ / shim::exit_room_file;
    if (text.size() < exit_file_room &&
        ::pwrite(exit_room_.get(), text.data(), text.size(), 0) == ssize_t(text.size()) &&
        ::ftruncate(exit_room_.get(), off_t(text.size())) == 0 && exit_room_.close() == 0 &&
        ::rename(room.c_str(), (dir_ / shim::exit_file).c_str()) == 0)
        return 0;
    // Not through the room (a file system without posix_fallocate's promise): the plain way.
    return publish(dir_, shim::exit_file, text) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s ATTEMPT_DIR < SPEC.json (started by ralphd)\n",
                     shim::program_name);
        return 2;
    }
    // Signals go through a signalfd; those of ralphd's terminal or session are not ours.
    sigset_t handled;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    sigaddset(&handled, SIGTERM);
    ::sigprocmask(SIG_BLOCK, &handled, nullptr);
    for (int ignored : {SIGPIPE, SIGHUP, SIGINT, SIGQUIT}) ::signal(ignored, SIG_IGN);
    ::setsid();
    // Orphans of the agent come to the shim, which reaps them and can end them.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);

    std::string input;
    char chunk[65536];
    for (ssize_t n; (n = ::read(STDIN_FILENO, chunk, sizeof chunk)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) refuse("cannot read the spec: " + error_text(errno));
        input.append(chunk, std::size_t(n));
    }
    shim::spec spec;
    try {
        spec = nlohmann::json::parse(input).get<shim::spec>();
    } catch (const std::exception& e) {
        refuse(std::string("invalid spec: ") + e.what());
    }
    supervisor shim(argv[1], std::move(spec));
    shim.start();
    return shim.run();
}
