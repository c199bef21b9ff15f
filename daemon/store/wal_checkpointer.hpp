// Checkpoints the store's WAL (copies its pages into the database file, with two fsyncs) on a
// thread of its own, instead of SQLite's automatic checkpoint in the commit that fills the WAL,
// which blocks the io thread for 10 ms or more every 1000 pages.
#pragma once

#include "common/asio.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <atomic>
#include <filesystem>

namespace ralph {

class store;

// Copies the WAL of the database at `db_path` into the database file (a passive checkpoint, which
// waits for nobody), through a connection of its own, on any thread; true when it copied all of
// it (nothing else was checkpointing, no reader needed an older page), after which the next
// commit starts the WAL over.
bool checkpoint_wal(const std::filesystem::path& db_path);

class wal_checkpointer {
  public:
    // SQLite's own threshold: a checkpoint starts after a commit leaves this many pages in the WAL
    // that no checkpoint has copied yet.
    static constexpr int pages_per_checkpoint = 1000;
    // The WAL's size at which the committing thread checkpoints it itself, see after_commit.
    static constexpr int pages_before_catch_up = 4 * pages_per_checkpoint;

    // Takes over the checkpoints of `db` (the store of the database at `db_path`), whose
    // commits must all be on one thread.
    wal_checkpointer(store& db, const std::filesystem::path& db_path);
    // Waits for a checkpoint in progress; the store checkpoints itself again.
    ~wal_checkpointer();
    wal_checkpointer(const wal_checkpointer&) = delete;
    wal_checkpointer& operator=(const wal_checkpointer&) = delete;

    // Checkpoints that copied pages into the database file (for tests).
    int checkpoints() const { return checkpoints_; }

  private:
    // Starts a checkpoint on the thread when one is due; true when the committing thread has to
    // checkpoint the WAL itself.
    bool after_commit(int pages_in_wal);

    store& db_;
    SQLite::Database connection_;  // its own, used on the thread only
    std::atomic<bool> running_ = false;
    // Pages of the WAL the last checkpoint copied. Commits go on during a checkpoint, so it rarely
    // copies the whole WAL, and SQLite starts the WAL over only after one that did: the next
    // checkpoint is due when this many more pages have come. Written by the thread while
    // running_, read by the committing thread while not.
    int copied_ = 0;
    std::atomic<int> checkpoints_ = 0;
    net::thread_pool thread_{1};  // last: joined before the connection closes
};

}  // namespace ralph
