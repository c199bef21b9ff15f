#include "daemon/store/storage_health.hpp"

#include "common/text.hpp"
#include "common/unique_fd.hpp"
#include "daemon/store/store.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <system_error>

namespace ralph {
namespace {

// How often a degraded ralphd tries to write again.
constexpr auto probe_interval = std::chrono::seconds(2);

bool is_full(const std::exception& e) {
    if (auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e))
        return sqlite->getErrorCode() == SQLITE_FULL;
    if (auto* system = dynamic_cast<const std::system_error*>(&e))
        return system->code().value() == ENOSPC || system->code().value() == EDQUOT;
    return false;
}

}  // namespace

storage_health::storage_health(net::io_context& io, store& db,
                               std::vector<std::filesystem::path> probe_dirs,
                               std::function<void()> on_recovered)
    : probe_timer_(io),
      db_(db),
      probe_dirs_(std::move(probe_dirs)),
      on_recovered_(std::move(on_recovered)) {}

bool storage_health::is_storage_error(const std::exception& e) {
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
    if (degraded()) {
        ++status_.failed_writes;
        return true;
    }
    status_.state = "degraded";
    status_.cause = e.what();
    status_.since = text::now_ms();
    status_.failed_writes = 1;
    status_.fix = is_full(e) ? "free space on the file system of ralph's state directory "
                               "(ralphctl gc removes old loops and their output)"
                             : "make ralph's state directory and database writable again";
    spdlog::error(
        "cannot write ralph's state: {}. Running agents go on; no attempt starts until writing "
        "works again ({}); ralphd tries every {} s",
        status_.cause, status_.fix, probe_interval.count());
    schedule_probe();
    return true;
}

void storage_health::check() {
    try {
        probe();
    } catch (const std::exception& e) {
        if (!failed(e)) throw;
    }
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
        on_recovered_();
    });
}

void storage_health::probe() {
    db_.probe_write(text::now_ms());
    for (const auto& dir : probe_dirs_) {
        const std::filesystem::path file = dir / ".write-probe";
        unique_fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
        // A page of it: a file system with room for a name but no data fails here too.
        const std::string page(4096, '\0');
        const bool written = fd.get() >= 0 &&
                             ::write(fd.get(), page.data(), page.size()) == ssize_t(page.size()) &&
                             fd.close() == 0;
        const int error = errno;
        ::unlink(file.c_str());
        if (!written)
            throw std::system_error(error, std::generic_category(),
                                    "cannot write a file in " + dir.string());
    }
}

}  // namespace ralph
