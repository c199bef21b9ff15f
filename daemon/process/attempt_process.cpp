#include "daemon/process/attempt_process.hpp"

#include "common/process_info.hpp"
#include "daemon/process/process.hpp"
#include "daemon/state_dir.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace ralph {
namespace {

// How much output one next() hands out at most (plus one record): bounds the daemon's memory
// whatever an agent floods.
constexpr std::size_t chunk_budget_bytes = 4 << 20;
// Journal records read at once (each says up to a shim's read of 1 MiB).
constexpr std::size_t journal_batch = 1024;

std::system_error system_error(const std::string& what) {
    return std::system_error(errno, std::generic_category(), what);
}

void write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw system_error("cannot send ralph-shim its spec");
        done += std::size_t(n);
    }
}

// The shim's one line of answer (without its newline); empty when it ended without one.
std::string read_answer(int fd) {
    std::string answer;
    char c;
    while (true) {
        const ssize_t n = ::read(fd, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || c == '\n') return answer;
        answer += c;
    }
}

std::optional<std::string> read_small_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

shim::started attempt_process::start(const std::filesystem::path& shim_program,
                                     const std::filesystem::path& dir, const shim::spec& spec) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) throw system_error("cannot create a pipe");
    if (::pipe2(out, O_CLOEXEC) != 0) {
        ::close(in[0]);
        ::close(in[1]);
        throw system_error("cannot create a pipe");
    }
    unique_fd spec_in(in[1]), answer_out(out[0]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
    // Its own session is the shim's to make (setsid): not a new process group here.
    const spawn_attributes attr(false);
    const std::string program = shim_program.string(), directory = dir.string();
    char* argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>(directory.c_str()),
                    nullptr};
    // No environment: the shim needs none, and the agent's is explicit, in the spec.
    char* envp[] = {nullptr};
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, program.c_str(), &actions, attr.get(), argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) throw std::system_error(rc, std::generic_category(), "cannot run " + program);

    // The shim is ralphd's child: the reaper takes its exit status, which says nothing the
    // attempt directory does not.
    write_all(spec_in.get(), nlohmann::json(spec).dump());
    spec_in.reset();
    const std::string answer = read_answer(answer_out.get());
    if (answer.empty()) throw std::runtime_error(program + " ended without starting the agent");
    const nlohmann::json message = nlohmann::json::parse(answer, nullptr, false);
    if (message.is_discarded() || !message.is_object())
        throw std::runtime_error(program + " answered something else than JSON: " + answer);
    if (auto error = message.find("error"); error != message.end() && error->is_string()) {
        // Ralph's own storage refused a write: not the agent's failure (storage_health).
        if (auto state = message.find("state_errno");
            state != message.end() && state->is_number_integer())
            throw state_write_error(state->get<int>(), error->get<std::string>());
        throw std::runtime_error(error->get<std::string>());
    }
    return message.get<shim::started>();
}

std::optional<shim::started> attempt_process::find(const std::filesystem::path& dir) {
    auto text = read_small_file(dir / shim::started_file);
    if (!text) return std::nullopt;
    const nlohmann::json message = nlohmann::json::parse(*text, nullptr, false);
    try {
        return message.get<shim::started>();
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

attempt_process::attempt_process(net::io_context& io, std::filesystem::path dir,
                                 std::filesystem::path output, const shim::started& started)
    : dir_(std::move(dir)), output_path_(std::move(output)), started_(started) {
    // Watched before anything is read, so that no change between the two is missed.
    inotify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (inotify_.get() < 0) throw system_error("cannot watch " + dir_.string());
    // The attempt's directory and the output file are ralph's state: not finding them (the state
    // directory removed) is a fault of the storage, not of the agent (storage_health).
    if (::inotify_add_watch(inotify_.get(), dir_.c_str(), IN_MODIFY | IN_MOVED_TO) < 0)
        throw state_write_error(errno, "cannot watch " + dir_.string());
    // The shim is known by its pidfd only if the process with its pid is still the same one.
    // (Debian 12's glibc declares pidfd_open without C linkage: the system call it is.)
    pidfd_.reset(int(::syscall(SYS_pidfd_open, started_.shim_pid, 0)));
    if (pidfd_.get() >= 0 && process_start_time(started_.shim_pid) != started_.shim_start_time)
        pidfd_.reset();
    unique_fd epoll(::epoll_create1(EPOLL_CLOEXEC));
    if (epoll.get() < 0) throw system_error("cannot create an epoll instance");
    for (int fd : {inotify_.get(), pidfd_.get()}) {
        if (fd < 0) continue;
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.fd = fd;
        if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &event) != 0)
            throw system_error("cannot watch the shim of " + dir_.string());
    }
    wakeup_ = std::make_unique<net::posix::stream_descriptor>(io, epoll.release());
    output_.reset(::open(output_path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (output_.get() < 0)
        throw state_write_error(errno, "cannot read output file " + output_path_.string());
    journal_.reset(::open((dir_ / shim::journal_file).c_str(), O_RDONLY | O_CLOEXEC));
    if (journal_.get() < 0)
        throw state_write_error(errno, "cannot read the journal in " + dir_.string());
}

attempt_process::~attempt_process() = default;

bool attempt_process::shim_alive() const {
    if (pidfd_.get() < 0) return false;
    pollfd polled{pidfd_.get(), POLLIN, 0};
    return ::poll(&polled, 1, 0) == 0;
}

void attempt_process::read_journal() {
    // Sized once: a resize on every read would clear the whole batch each time.
    if (records_.size() < journal_batch) records_.resize(journal_batch);
    const ssize_t n = ::pread(journal_.get(), records_.data(),
                              records_.size() * sizeof(shim::journal_record), journal_offset_);
    const std::size_t whole = n > 0 ? std::size_t(n) / sizeof(shim::journal_record) : 0;
    // A record being written is read again next time.
    record_count_ = whole;
    next_record_ = 0;
    journal_offset_ += std::int64_t(whole * sizeof(shim::journal_record));
}

bool attempt_process::read_exit(const std::filesystem::path& file) {
    auto text = read_small_file(file);
    if (!text) return false;
    const nlohmann::json message = nlohmann::json::parse(*text, nullptr, false);
    try {
        exit_ = message.get<shim::exit_info>();
    } catch (const nlohmann::json::exception&) {
        exit_.reset();
    }
    return exit_.has_value();
}

void attempt_process::reserve_buffer(std::size_t size, std::size_t used) {
    if (size <= buffer_capacity_) return;
    const std::size_t capacity = std::max(size, 2 * buffer_capacity_);
    auto bigger = std::make_unique_for_overwrite<char[]>(capacity);
    if (used > 0) std::memcpy(bigger.get(), buffer_.get(), used);
    buffer_ = std::move(bigger);
    buffer_capacity_ = capacity;
}

awaitable<std::vector<attempt_process::chunk>> attempt_process::next() {
    std::vector<chunk> chunks;
    std::vector<std::size_t> starts;  // of each chunk's bytes in buffer_
    std::size_t used = 0;             // bytes of buffer_ read
    while (true) {
        if (next_record_ == record_count_) read_journal();
        while (next_record_ < record_count_ && used < chunk_budget_bytes) {
            const shim::journal_record& record = records_[next_record_++];
            const std::size_t start = used;
            reserve_buffer(start + record.length, used);
            ssize_t got =
                ::pread(output_.get(), buffer_.get() + start, record.length, off_t(record.offset));
            if (got < 0) got = 0;
            used = start + std::size_t(got);
            starts.push_back(start);
            chunks.push_back({shim::stream(record.stream), std::int64_t(record.offset), {}});
            read_end_ = std::int64_t(record.offset + record.length);
        }
        if (!chunks.empty()) {
            for (std::size_t i = 0; i < chunks.size(); ++i) {
                const std::size_t end = i + 1 < chunks.size() ? starts[i + 1] : used;
                chunks[i].bytes = std::string_view(buffer_.get() + starts[i], end - starts[i]);
            }
            co_return chunks;
        }
        if (over_) co_return chunks;
        // Nothing new. The shim writes every record before exit.json, and exits after it: one
        // more read of the journal after either finds all there is.
        if (::access((dir_ / shim::exit_file).c_str(), F_OK) == 0) {
            read_exit(dir_ / shim::exit_file);
            over_ = true;
            continue;
        }
        if (!shim_alive()) {
            // exit.json may have come just before the shim's end; one the shim could not rename
            // into place (a read-only directory) is still in its room.
            if (!read_exit(dir_ / shim::exit_file)) read_exit(dir_ / shim::exit_room_file);
            over_ = true;
            continue;
        }
        boost::system::error_code ec;
        co_await wakeup_->async_wait(net::posix::descriptor_base::wait_read,
                                     net::redirect_error(use_awaitable, ec));
        char events[4096];
        while (::read(inotify_.get(), events, sizeof events) > 0) {
        }
    }
}

std::int64_t attempt_process::output_end() const {
    if (exit_) return exit_->output_end;
    struct stat st {};
    if (::fstat(output_.get(), &st) == 0) return std::max<std::int64_t>(st.st_size, read_end_);
    return read_end_;
}

void attempt_process::terminate() {
    if (shim_alive()) ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGTERM, nullptr, 0);
}

bool attempt_process::kill_leftovers() {
    bool signalled = false;
    if (!started_.cgroup.empty()) {
        unique_fd kill(::open((started_.cgroup + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC));
        signalled = kill.get() >= 0 && ::write(kill.get(), "1", 1) == 1;
        ::rmdir(started_.cgroup.c_str());
    }
    if (kill_leftover_group(started_.agent_pid, started_.agent_start_time)) signalled = true;
    return signalled;
}

}  // namespace ralph
