// Whether ralphd can write its state: the database and the files of its state directory. A write
// the storage refuses (disk full or over quota, a read-only file system or database, a file ralphd
// may not write) is a state, not a crash: ralphd is degraded — running agents go on under their
// shims (their output written as far as the file system allows), no attempt starts, reads and gc
// go on — it says so once in the log (later refusals are counted, not logged), tries a write every
// few seconds, and is itself again, by itself, as soon as one works.
#pragma once

#include "common/asio.hpp"
#include "proto/types.hpp"

#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ralph {

class store;

class storage_health {
  public:
    // `probe_dirs`: the directories ralphd writes files in (output, attempts), tried with the
    // database. `on_recovered` runs on the io thread once writing works again.
    storage_health(net::io_context& io, store& db, std::vector<std::filesystem::path> probe_dirs,
                   std::function<void()> on_recovered);

    // True for an exception by which the storage refused a write (SQLite's full, read-only,
    // cannot-open and I/O errors; ENOSPC, EDQUOT, EROFS, EACCES, EPERM, EIO).
    static bool is_storage_error(const std::exception& e);

    // A write failed with `e`: when it is a storage error, enters the degraded state (or counts
    // one more refusal in it) and returns true; anything else is not its business (false).
    bool failed(const std::exception& e);
    bool degraded() const { return status_.state != "ok"; }
    const proto::storage_status& status() const { return status_; }

    // Tries a write of each kind (at start: a disk already full is found before anything needs
    // it); enters the degraded state when one fails.
    void check();

  private:
    void schedule_probe();
    // A write of each kind ralphd makes: the database and a page in each probed directory. Throws
    // what failed.
    void probe();

    net::steady_timer probe_timer_;
    store& db_;
    std::vector<std::filesystem::path> probe_dirs_;
    std::function<void()> on_recovered_;
    proto::storage_status status_;
};

}  // namespace ralph
