// Whether ralphd can write its state: the database and the files of its state directory. A write
// the storage refuses (disk full or over quota, a read-only file system or database, a file ralphd
// may not write, any write in the state directory: state_write_error) is a state, not a crash:
// ralphd is degraded — running agents go on under their shims (their output written as far as
// the file system allows), no attempt starts, reads and gc go on — it says so once in the log
// (later refusals are counted, not logged), tries a write every few seconds (making a directory
// of the state directory again where one was removed), and is itself again, by itself, as soon
// as one works.
//
// A state directory removed (or moved) while ralphd runs leaves SQLite writing into a database
// that is no longer on disk: whatever it records would be lost at the next start. An inotify
// watch on the directory sees it at once; ralphd is degraded ("lost") until the database is back
// at its path, and refuses new loops meanwhile (loop.submit), rather than accept and lose them.
#pragma once

#include "common/asio.hpp"
#include "daemon/state_dir.hpp"
#include "proto/types.hpp"

#include <sys/types.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

namespace ralph {

class settings_table;

class storage_health {
  public:
    // `state`: where the database (open already) and the directories ralphd writes files in are;
    // each is tried with the database, written to in `settings` (settings_table::probe_write).
    // `on_recovered` runs on the io thread once writing works again.
    storage_health(net::io_context& io, settings_table& settings, const state_dir& state,
                   std::function<void()> on_recovered);
    ~storage_health();
    storage_health(const storage_health&) = delete;
    storage_health& operator=(const storage_health&) = delete;

    // True for an exception by which the storage refused a write (SQLite's full, read-only,
    // cannot-open and I/O errors; ENOSPC, EDQUOT, EROFS, EACCES, EPERM, EIO; state_write_error).
    static bool is_storage_error(const std::exception& e);

    // Runs `write`, a write in the state directory: whatever it throws is a state_write_error.
    template <typename Write>
    static void write_state(Write&& write) {
        try {
            write();
        } catch (const std::system_error& e) {
            throw state_write_error(e.code().value(), e.what());
        } catch (const std::exception& e) {
            throw state_write_error(EIO, e.what());
        }
    }

    // A write failed with `e`: when it is a storage error, enters the degraded state (or counts
    // one more refusal in it) and returns true; anything else is not its business (false).
    bool failed(const std::exception& e);
    bool degraded() const { return status_.state != "ok"; }
    // Whether the database ralphd has open is no longer at its path: nothing it records now
    // would survive a restart.
    bool lost() const { return lost_; }
    const proto::storage_status& status() const { return status_; }

    // Tries a write of each kind (at start: a disk already full is found before anything needs
    // it); enters the degraded state when one fails. Then watches the state directory.
    void check();

  private:
    void schedule_probe();
    // A write of each kind ralphd makes: the database and a page in each probed directory (made
    // again when it was removed). Throws what failed; first of all when the database is not in
    // place.
    void probe();
    // Throws when the database ralphd has open is no longer at its path.
    void check_database_in_place();
    // Watches the state directory for what removes or moves the database (or the directory).
    void watch();
    void read_events();

    net::steady_timer probe_timer_;
    settings_table& settings_;
    std::filesystem::path database_;
    std::filesystem::path root_;
    std::vector<std::filesystem::path> probe_dirs_;
    std::function<void()> on_recovered_;
    proto::storage_status status_;
    dev_t database_device_ = 0;
    ino_t database_inode_ = 0;
    net::posix::stream_descriptor events_;  // inotify
    char event_buffer_[4096];
    bool lost_ = false;
};

}  // namespace ralph
