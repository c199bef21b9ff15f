// The store's connection: opening (the pragmas, the WAL hook, the schema migrated forward), the
// cache of prepared statements the tables use, transactions, and the file's pages and memory.
#include "daemon/store/store.hpp"

#include "daemon/store/migrations.hpp"
#include "daemon/store/query.hpp"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <stdexcept>

namespace ralph {

store::query store::prepared(std::string_view sql) {
    auto it = statements_.find(sql);
    if (it == statements_.end())
        it = statements_.try_emplace(std::string(sql), connection_, std::string(sql)).first;
    if (it->second.in_use)
        throw std::logic_error("store: a statement was used again before its first use ended");
    it->second.statement.clearBindings();  // what a use leaves unbound is NULL, as when new
    return query(it->second);
}

store::store(const std::filesystem::path& db_path) try
    : connection_(db_path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE) {
    // Another process may hold the database a moment (sqlite3, a backup): wait for it.
    connection_.setBusyTimeout(5000);
    connection_.exec("PRAGMA journal_mode = WAL");
    // The WAL and its index stay when ralphd closes the database: creating them takes room, and a
    // ralphd started on a full disk must still open it (it runs degraded: storage_health).
    int persist_wal = 1;
    sqlite3_file_control(connection_.getHandle(), "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal);
    // WAL + NORMAL: a commit survives a crash of ralphd; only a power loss may lose the last
    // transactions, never corrupt the database.
    connection_.exec("PRAGMA synchronous = NORMAL");
    connection_.exec("PRAGMA foreign_keys = ON");
    // After every commit: the WAL's size is kept (gc paces itself by it) and the WAL checkpointed
    // when SQLite's automatic checkpoint would (at 1000 pages), unless an observer took that over
    // (wal_checkpointer). As SQLite's own does in this hook, after the commit.
    sqlite3_wal_hook(
        connection_.getHandle(),
        [](void* self, sqlite3* handle, const char*, int pages) {
            store& db = *static_cast<store*>(self);
            db.wal_pages_ = pages;
            if (db.wal_observer_ ? db.wal_observer_(pages) : pages >= 1000)
                sqlite3_wal_checkpoint_v2(handle, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                          nullptr);
            return SQLITE_OK;
        },
        this);
    migrate();
} catch (const SQLite::Exception& e) {
    throw std::runtime_error("cannot open the database " + db_path.string() + ": " + e.what());
}

void store::on_wal_commit(std::function<bool(int pages_in_wal)> observer) {
    wal_observer_ = std::move(observer);
}

int store::latest_schema_version() { return static_cast<int>(schema_migrations().size()); }

int store::schema_version() { return connection_.execAndGet("PRAGMA user_version").getInt(); }

void store::migrate() {
    const auto& migrations = schema_migrations();
    int version = schema_version();
    if (version > latest_schema_version())
        throw std::runtime_error("the database has schema version " + std::to_string(version) +
                                 ", newer than this ralphd understands (" +
                                 std::to_string(latest_schema_version()) + "): upgrade ralphd");
    for (; version < latest_schema_version(); ++version) {
        const migration& step = migrations[version];
        const std::string set_version = "PRAGMA user_version = " + std::to_string(version + 1);
        if (step.rewrites_file) {
            // Done again at the next start if ralphd stops before the version is set.
            spdlog::info(
                "database: rewriting {} once for schema version {}, which may take a "
                "while for a long history",
                connection_.getFilename(), version + 1);
            connection_.exec(std::string(step.sql));
            connection_.exec(set_version);
            // The rewrite went through the WAL: its size back to nothing.
            connection_.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        } else {
            SQLite::Transaction tx(connection_);
            connection_.exec(std::string(step.sql));
            connection_.exec(set_version);
            tx.commit();
        }
        spdlog::info("database migrated to schema version {}", version + 1);
    }
}

void store::in_transaction(const std::function<void()>& work) {
    SQLite::Transaction tx(connection_);
    work();
    tx.commit();
}

std::int64_t store::free_pages() {
    return connection_.execAndGet("PRAGMA freelist_count").getInt64();
}

std::int64_t store::vacuum_some(std::int64_t pages) {
    // (0 would give them all back at once.)
    connection_.exec("PRAGMA incremental_vacuum(" +
                     std::to_string(std::max<std::int64_t>(1, pages)) + ")");
    return free_pages();
}

void store::set_cache_kib(std::int64_t kib) {
    connection_.exec("PRAGMA cache_size = " + std::to_string(-(kib > 0 ? kib : 2000)));
    release_memory();
}

void store::release_memory() { sqlite3_db_release_memory(connection_.getHandle()); }

}  // namespace ralph
