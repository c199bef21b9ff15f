// Two small tables of the store that the daemon keeps for itself across restarts: the agents held
// by a usage limit (agent_holds: the ledger every loop on the agent obeys, per account, shared
// with the daemon's peers, ralphd --peer) and the settings changed at run time (settings: JSON by
// key). Reached through store::holds() and store::settings().
#pragma once

#include "proto/daemon_api.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ralph {

class store;

class hold_table {
  public:
    explicit hold_table(store& db) : db_(db) {}

    // Records the hold unless its agent is held as long or longer for its account already;
    // true when the ledger changed (news for the peers).
    bool hold_agent(const proto::agent_hold& hold);
    // The hold on the agent for the account if it lasts past now_ms.
    std::optional<proto::agent_hold> agent_hold_of(const std::string& agent,
                                                   const std::string& account, std::int64_t now_ms);
    // Every hold that lasts past now_ms, soonest end first.
    std::vector<proto::agent_hold> agent_holds(std::int64_t now_ms);

  private:
    store& db_;
};

// scheduler set, budget set; and a row storage_health writes to learn whether the database takes
// writes.
class settings_table {
  public:
    explicit settings_table(store& db) : db_(db) {}

    std::optional<nlohmann::json> setting(const std::string& key);
    void set_setting(const std::string& key, const nlohmann::json& value);
    // A small write that changes nothing of meaning (storage_health's probe).
    void probe_write(std::int64_t now_ms);

  private:
    store& db_;
};

}  // namespace ralph
