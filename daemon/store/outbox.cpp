// The notifications table: the outbox (outbox.hpp).
#include "daemon/store/outbox.hpp"

#include "daemon/store/query.hpp"
#include "daemon/store/store.hpp"

namespace ralph {

void outbox_table::add_notification(const std::string& target, const std::string& body,
                                    std::int64_t now_ms) {
    auto q = db_.prepared("INSERT INTO notifications (target, body, created_at) VALUES (?, ?, ?)");
    q.bind(1, target);
    q.bind(2, body);
    q.bind(3, now_ms);
    q.exec();
}

std::vector<std::string> outbox_table::notification_targets() {
    auto q = db_.prepared("SELECT DISTINCT target FROM notifications ORDER BY target");
    std::vector<std::string> targets;
    while (q.executeStep()) targets.push_back(q.getColumn(0).getString());
    return targets;
}

std::optional<outbox_table::outbox_entry> outbox_table::next_notification(
    const std::string& target) {
    auto q = db_.prepared(
        "SELECT id, body, created_at, tries FROM notifications WHERE target = ? "
        "ORDER BY id LIMIT 1");
    q.bind(1, target);
    if (!q.executeStep()) return std::nullopt;
    return outbox_entry{q.getColumn(0).getInt64(), target, q.getColumn(1).getString(),
                        q.getColumn(2).getInt64(), q.getColumn(3).getInt64()};
}

void outbox_table::remove_notification(std::int64_t id) {
    auto q = db_.prepared("DELETE FROM notifications WHERE id = ?");
    q.bind(1, id);
    q.exec();
}

void outbox_table::notification_failed(std::int64_t id, const std::string& error) {
    auto q =
        db_.prepared("UPDATE notifications SET tries = tries + 1, last_error = ? WHERE id = ?");
    q.bind(1, error);
    q.bind(2, id);
    q.exec();
}

}  // namespace ralph
