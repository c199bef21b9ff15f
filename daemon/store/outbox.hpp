// The store's notification outbox: push notifications not yet delivered (notify/notifier, which
// needs nothing else of the store), kept so that a restart or a target that is down loses none.
// Reached through store::outbox().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

class store;

class outbox_table {
  public:
    explicit outbox_table(store& db) : db_(db) {}

    struct outbox_entry {
        std::int64_t id = 0;
        std::string target;
        std::string body;  // JSON
        std::int64_t created_at = 0;
        std::int64_t tries = 0;
    };
    void add_notification(const std::string& target, const std::string& body, std::int64_t now_ms);
    // The targets that have a notification waiting.
    std::vector<std::string> notification_targets();
    // The oldest notification waiting for `target`.
    std::optional<outbox_entry> next_notification(const std::string& target);
    // Delivered (or given up): the row goes.
    void remove_notification(std::int64_t id);
    void notification_failed(std::int64_t id, const std::string& error);

  private:
    store& db_;
};

}  // namespace ralph
