// The agent_holds and settings tables (holds_and_settings.hpp).
#include "daemon/store/holds_and_settings.hpp"

#include "daemon/store/query.hpp"
#include "daemon/store/store.hpp"

namespace ralph {
namespace {

proto::agent_hold read_hold(SQLite::Statement& row) {
    return {row.getColumn(0).getString(), row.getColumn(1).getString(), row.getColumn(2).getInt64(),
            row.getColumn(3).getString(), row.getColumn(4).getString()};
}

}  // namespace

bool hold_table::hold_agent(const proto::agent_hold& hold) {
    auto q = db_.prepared(
        "INSERT INTO agent_holds (agent, account, until, reason, origin) "
        "VALUES (?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT (agent, account) DO UPDATE SET until = ?3, reason = ?4, origin = ?5 "
        "WHERE excluded.until > agent_holds.until");
    q.bind(1, hold.agent);
    q.bind(2, hold.account);
    q.bind(3, hold.until);
    q.bind(4, hold.reason);
    q.bind(5, hold.origin);
    return q.exec() > 0;
}

std::optional<proto::agent_hold> hold_table::agent_hold_of(const std::string& agent,
                                                           const std::string& account,
                                                           std::int64_t now_ms) {
    auto q = db_.prepared(
        "SELECT agent, account, until, reason, origin FROM agent_holds "
        "WHERE agent = ? AND account = ? AND until > ?");
    q.bind(1, agent);
    q.bind(2, account);
    q.bind(3, now_ms);
    if (!q.executeStep()) return std::nullopt;
    return read_hold(q);
}

std::vector<proto::agent_hold> hold_table::agent_holds(std::int64_t now_ms) {
    auto q = db_.prepared(
        "SELECT agent, account, until, reason, origin FROM agent_holds WHERE until > ? "
        "ORDER BY until, agent, account");
    q.bind(1, now_ms);
    std::vector<proto::agent_hold> result;
    while (q.executeStep()) result.push_back(read_hold(q));
    return result;
}

std::optional<nlohmann::json> settings_table::setting(const std::string& key) {
    auto q = db_.prepared("SELECT value FROM settings WHERE key = ?");
    q.bind(1, key);
    if (!q.executeStep()) return std::nullopt;
    return nlohmann::json::parse(q.getColumn(0).getString());
}

void settings_table::set_setting(const std::string& key, const nlohmann::json& value) {
    auto q = db_.prepared(
        "INSERT INTO settings (key, value) VALUES (?1, ?2) "
        "ON CONFLICT (key) DO UPDATE SET value = ?2");
    q.bind(1, key);
    q.bind(2, value.dump());
    q.exec();
}

void settings_table::probe_write(std::int64_t now_ms) { set_setting("storage_probe", now_ms); }

}  // namespace ralph
