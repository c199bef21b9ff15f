// The events ralph pushes to webhooks (ralphd --notify URL, submit --notify URL), as the generic
// body (schema_version 1; the README documents it), without the "id" the outbox gives each:
//   loop.completed, loop.exhausted, loop.failed, loop.stalled, loop.cancelled: a loop ended;
//   loop.waiting: it waits for a usage limit's reset or for a budget;
//   loop.rejected: a judge or --verify rejected the agent's claim of completion;
//   daemon.recovered: ralphd took up running loops that an earlier ralphd (or a storage fault)
//   left: agents adopted, loops re-queued;
//   test: `ralphctl notify test`.
// Each has "title" and "text", the lines the chat formats show.
#pragma once

#include "proto/types.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace ralph {

constexpr int notification_schema_version = 1;

// Whether a loop's change to `state` is notified: an end state, or waiting when `notable_wait`
// (for a usage limit or a budget; not a retry's backoff, a delay or the time window).
bool is_notified(proto::loop_state state, bool notable_wait);
// The event of a loop's change to its state, which is_notified.
nlohmann::json state_notification(const proto::loop_info& loop, bool notable_wait,
                                  std::int64_t now_ms);
// The loop's claim of completion in iteration `iteration` was rejected: `why` (the judge's
// reasons or --verify's exit).
nlohmann::json rejection_notification(const proto::loop_info& loop, std::int64_t iteration,
                                      const std::string& why, std::int64_t now_ms);
// ralphd took up what an earlier one left: `adopted` agents it follows on, `requeued` loops that
// go on with their next iteration.
nlohmann::json recovery_notification(std::int64_t adopted, std::int64_t requeued,
                                     std::int64_t now_ms);
// What `ralphctl notify test` sends.
nlohmann::json test_notification(std::int64_t now_ms);

}  // namespace ralph
