#include "daemon/store/storage_health.hpp"

#include "common/paths.hpp"
#include "common/text.hpp"
#include "common/unique_fd.hpp"
#include "daemon/store/holds_and_settings.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace ralph {
namespace {

// How often a degraded ralphd tries to write again.
constexpr auto probe_interval = std::chrono::seconds(2);

// The database ralphd has open is no longer at its path (storage_health.hpp).
class database_lost : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

bool is_full(const std::exception& e) {
    if (auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e))
        return sqlite->getErrorCode() == SQLITE_FULL;
    if (auto* system = dynamic_cast<const std::system_error*>(&e))
        return system->code().value() == ENOSPC || system->code().value() == EDQUOT;
    return false;
}

}  // namespace

storage_health::storage_health(net::io_context& io, settings_table& settings,
                               const state_dir& state, std::function<void()> on_recovered)
    : probe_timer_(io),
      settings_(settings),
      database_(state.database()),
      root_(state.root()),
      probe_dirs_{state.output_dir(), state.attempts_dir(), state.prompt_dir(),
                  state.scratch_dir()},
      on_recovered_(std::move(on_recovered)),
      events_(io) {
    // The file the store has open (it opened it just before): what must stay at its path.
    struct stat st {};
    if (::stat(database_.c_str(), &st) == 0) {
        database_device_ = st.st_dev;
        database_inode_ = st.st_ino;
    }
}

storage_health::~storage_health() = default;

bool storage_health::is_storage_error(const std::exception& e) {
    if (dynamic_cast<const state_write_error*>(&e) || dynamic_cast<const database_lost*>(&e))
        return true;
    if (auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e)) {
        switch (sqlite->getErrorCode()) {
            case SQLITE_FULL:
            case SQLITE_READONLY:
            case SQLITE_CANTOPEN:
            case SQLITE_IOERR:
            case SQLITE_PERM:
                return true;
            default:
                return false;
        }
    }
    if (auto* system = dynamic_cast<const std::system_error*>(&e)) {
        switch (system->code().value()) {
            case ENOSPC:
            case EDQUOT:
            case EROFS:
            case EACCES:
            case EPERM:
            case EIO:
                return true;
            default:
                return false;
        }
    }
    return false;
}

bool storage_health::failed(const std::exception& e) {
    if (!is_storage_error(e)) return false;
    const bool lost = dynamic_cast<const database_lost*>(&e) != nullptr;
    const bool was_degraded = degraded();
    // Said once; a lost database is said even when a refused write came first: it is worse.
    if (was_degraded && (lost_ || !lost)) {
        ++status_.failed_writes;
        return true;
    }
    lost_ = lost;
    status_.state = "degraded";
    status_.cause = e.what();
    if (!was_degraded) status_.since = text::now_ms();
    ++status_.failed_writes;
    status_.fix = lost ? "put ralph's state directory back where it was, and ralphd is itself "
                         "again at once; or stop ralphd (ralphctl daemon stop) and start it "
                         "again, which makes a new, empty one: what the removed one held is lost"
                  : is_full(e) ? "free space on the file system of ralph's state directory "
                                 "(ralphctl gc removes old loops and their output)"
                               : "make ralph's state directory and database writable again";
    if (lost)
        spdlog::error(
            "ralph's state is lost: {}. What ralphd records now would not survive a restart: "
            "running agents go on, no attempt starts and no loop is accepted ({}); ralphd "
            "checks every {} s",
            status_.cause, status_.fix, probe_interval.count());
    else
        spdlog::error(
            "cannot write ralph's state: {}. Running agents go on; no attempt starts until "
            "writing works again ({}); ralphd tries every {} s",
            status_.cause, status_.fix, probe_interval.count());
    if (!was_degraded) schedule_probe();
    return true;
}

void storage_health::check() {
    try {
        probe();
    } catch (const std::exception& e) {
        if (!failed(e)) throw;
    }
    watch();
}

void storage_health::watch() {
    const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0 || ::inotify_add_watch(
                      fd, root_.c_str(),
                      IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) < 0) {
        spdlog::warn(
            "cannot watch ralph's state directory {} ({}): were it removed, ralphd would find "
            "out at its next write only",
            root_.string(), std::strerror(errno));
        if (fd >= 0) ::close(fd);
        return;
    }
    events_.assign(fd);
    read_events();
}

void storage_health::read_events() {
    // Which name went does not matter: whether the database is still in place does.
    events_.async_read_some(net::buffer(event_buffer_),
                            [this](boost::system::error_code ec, std::size_t) {
                                if (ec) return;  // closed: ralphd is stopping
                                try {
                                    check_database_in_place();
                                } catch (const std::exception& e) {
                                    failed(e);
                                }
                                read_events();
                            });
}

void storage_health::check_database_in_place() {
    if (database_inode_ == 0) return;
    struct stat st {};
    if (::stat(database_.c_str(), &st) == 0 && st.st_dev == database_device_ &&
        st.st_ino == database_inode_)
        return;
    throw database_lost("the database ralphd has open, " + database_.string() +
                        ", is no longer there: ralph's state directory was removed or moved");
}

void storage_health::schedule_probe() {
    probe_timer_.expires_after(probe_interval);
    probe_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        try {
            probe();
        } catch (const std::exception& e) {
            if (!is_storage_error(e)) throw;
            schedule_probe();
            return;
        }
        spdlog::info("ralph's state can be written again ({} writes were refused since {})",
                     status_.failed_writes, text::format_iso8601(status_.since));
        status_ = {};
        lost_ = false;
        on_recovered_();
    });
}

void storage_health::probe() {
    check_database_in_place();
    settings_.probe_write(text::now_ms());
    for (const auto& dir : probe_dirs_) {
        std::error_code ec;
        if (!std::filesystem::exists(dir, ec)) {
            write_state([&] { paths::make_private_directory(dir); });
            spdlog::warn("{} had been removed: made it again", dir.string());
        }
        const std::filesystem::path file = dir / ".write-probe";
        unique_fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
        // A page of it: a file system with room for a name but no data fails here too.
        const std::string page(4096, '\0');
        const bool written = fd.get() >= 0 &&
                             ::write(fd.get(), page.data(), page.size()) == ssize_t(page.size()) &&
                             fd.close() == 0;
        const int error = errno;
        ::unlink(file.c_str());
        if (!written) throw state_write_error(error, "cannot write a file in " + dir.string());
    }
}

}  // namespace ralph
