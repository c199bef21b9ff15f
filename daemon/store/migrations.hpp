// The schema's migrations, in order (see migrations.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace ralph {

// One step of the schema: its SQL runs in a transaction of its own, which also sets the new
// user_version; a step that rewrites the whole file (VACUUM, which auto_vacuum needs) runs
// outside any transaction, as SQLite requires, and the version is set after it.
struct migration {
    migration(const char* sql, bool rewrites_file = false)  // NOLINT: implicit, a list of SQL
        : sql(sql), rewrites_file(rewrites_file) {}
    std::string_view sql;
    bool rewrites_file;
};

const std::vector<migration>& schema_migrations();

}  // namespace ralph
