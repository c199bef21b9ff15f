// The daemon's SQLite database (WAL): the connection, its schema (opening migrates it forward,
// PRAGMA user_version), its prepared statements and transactions, and the tables by family, each
// an object of its own that runs its SQL on this connection: loops (loops.hpp); attempts, their
// events and steering hints (attempts.hpp); the attempts' use for the budgets (attempt_use.hpp);
// agent holds and settings (holds_and_settings.hpp); the notification outbox (outbox.hpp); the
// output index (output_index.hpp); the history's report and removal (history.hpp). A subsystem
// that needs one family is given that family's object, not the store. Each state change is one
// transaction. Used only from the io_context thread. What is read often costs the same with a
// year of history as with a day of it: reads bounded by an index or a window, and aggregates
// (loops per state, the attempts' use per minute and hour) that triggers keep in the transaction
// of the rows they sum (migrations.cpp, 12 → 13).
#pragma once

#include "daemon/store/attempt_use.hpp"
#include "daemon/store/attempts.hpp"
#include "daemon/store/history.hpp"
#include "daemon/store/holds_and_settings.hpp"
#include "daemon/store/loops.hpp"
#include "daemon/store/outbox.hpp"
#include "daemon/store/output_index.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace ralph {

class store {
  public:
    explicit store(const std::filesystem::path& db_path);
    // The tables hold a reference to their store.
    store(const store&) = delete;
    store& operator=(const store&) = delete;

    int schema_version();
    static int latest_schema_version();

    // ---- the tables, by family
    loop_table& loops() { return loops_; }
    attempt_table& attempts() { return attempts_; }
    attempt_use_table& attempt_use() { return attempt_use_; }
    hold_table& holds() { return holds_; }
    settings_table& settings() { return settings_; }
    outbox_table& outbox() { return outbox_; }
    output_index_table& output_index() { return output_index_; }
    loop_history& history() { return history_; }

    // Runs `work` (calls of the tables that start no transaction of their own) in one transaction.
    void in_transaction(const std::function<void()>& work);

    // The pages that removals freed, which the database file keeps for reuse until vacuum_some
    // gives them back.
    std::int64_t free_pages();
    // Gives up to `pages` (> 0) of them back to the file system (incremental_vacuum; the file
    // shrinks at the next checkpoint) and returns how many are left.
    std::int64_t vacuum_some(std::int64_t pages);
    // SQLite's page cache: at most `kib` KiB (0: SQLite's default, 2 MiB), the pages of a larger
    // one freed.
    void set_cache_kib(std::int64_t kib);
    // Frees the memory of SQLite's page cache that nothing uses (it fills up again as needed).
    void release_memory();

    // The database file.
    std::string path() const { return connection_.getFilename(); }
    // Pages in the WAL after the last commit.
    int wal_pages() const { return wal_pages_; }
    // Calls `observer` with the number of pages in the WAL after every commit, instead of
    // checkpointing the WAL in the commit that fills it (see wal_checkpointer), and checkpoints
    // it then only when the observer returns true; null restores SQLite's automatic checkpoints.
    void on_wal_commit(std::function<bool(int pages_in_wal)> observer);

  private:
    // The tables' SQL runs on the connection, through prepared().
    friend class loop_table;
    friend class attempt_table;
    friend class attempt_use_table;
    friend class hold_table;
    friend class settings_table;
    friend class outbox_table;
    friend class output_index_table;
    friend class loop_history;
    friend struct store_probe;  // tests/unit/store_scale_test.cpp: counts the work of a call

    // Prepared statements by their SQL text, prepared at their first use and kept: preparing one
    // costs about as much as running it. Only for a fixed set of SQL texts (values are bound).
    struct cached_statement {
        cached_statement(SQLite::Database& db, const std::string& sql) : statement(db, sql) {}
        SQLite::Statement statement;
        bool in_use = false;
    };
    class query;  // a cached statement lent to one call (query.hpp)
    query prepared(std::string_view sql);

    void migrate();
    SQLite::Database connection_;
    // After connection_: closed first.
    std::map<std::string, cached_statement, std::less<>> statements_;
    std::function<bool(int)> wal_observer_;
    int wal_pages_ = 0;
    loop_table loops_{*this};
    attempt_table attempts_{*this};
    attempt_use_table attempt_use_{*this};
    hold_table holds_{*this};
    settings_table settings_{*this};
    outbox_table outbox_{*this};
    output_index_table output_index_{*this};
    loop_history history_{*this};
};

}  // namespace ralph
