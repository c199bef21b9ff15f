#include "daemon/store/wal_checkpointer.hpp"

#include "daemon/store/store.hpp"

#include <spdlog/spdlog.h>

namespace ralph {

bool checkpoint_wal(const std::filesystem::path& db_path) {
    SQLite::Database connection(db_path.string(), SQLite::OPEN_READWRITE);
    // The row is (busy, pages in the WAL, pages copied).
    SQLite::Statement checkpoint(connection, "PRAGMA wal_checkpoint(PASSIVE)");
    return checkpoint.executeStep() && checkpoint.getColumn(0).getInt() == 0 &&
           checkpoint.getColumn(1).getInt() == checkpoint.getColumn(2).getInt();
}

wal_checkpointer::wal_checkpointer(store& db, const std::filesystem::path& db_path)
    : db_(db), connection_(db_path.string(), SQLite::OPEN_READWRITE) {
    db_.on_wal_commit([this](int pages_in_wal) { return after_commit(pages_in_wal); });
}

wal_checkpointer::~wal_checkpointer() {
    db_.on_wal_commit(nullptr);
    thread_.join();
}

bool wal_checkpointer::after_commit(int pages_in_wal) {
    if (running_) return false;
    if (pages_in_wal < copied_) copied_ = 0;  // the WAL started over
    // SQLite starts the WAL over only after a checkpoint that copied all of it, which one on
    // this thread rarely does while commits go on: at this size the committing thread finishes
    // the job (the rest since the last checkpoint, a short write and sync).
    if (pages_in_wal >= pages_before_catch_up) return true;
    if (pages_in_wal - copied_ < pages_per_checkpoint) return false;
    running_ = true;
    net::post(thread_, [this] {
        try {
            // PASSIVE: copies what no reader still needs and waits for nobody; the writer goes on
            // appending to the WAL meanwhile. The row is (busy, pages in the WAL, pages copied).
            SQLite::Statement checkpoint(connection_, "PRAGMA wal_checkpoint(PASSIVE)");
            if (checkpoint.executeStep()) {
                const int copied = checkpoint.getColumn(2).getInt();
                if (copied > copied_) ++checkpoints_;
                copied_ = copied;
            }
        } catch (const std::exception& e) {
            // The WAL keeps growing until a later checkpoint succeeds; nothing is lost.
            spdlog::warn("cannot checkpoint the database's WAL: {}", e.what());
        }
        running_ = false;
    });
    return false;
}

}  // namespace ralph
