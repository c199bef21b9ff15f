// Requests and results of the loop methods (loop.*, events.subscribe) and the notifications of
// a WebSocket session (proto/API.md). A request's from_json is the daemon's check of what a
// client sent (rpc_error(invalid_params) naming the field); its to_json is the client's. A
// result's to_json is the daemon's, its from_json the client's (lenient: a missing field keeps
// its default). proto/methods.hpp pairs each method with its two types.
#pragma once

#include "proto/types.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ralph::proto {

// loop.get, loop.cancel, loop.pause, loop.resume, loop.retry, loop.remove, loop.iterations:
// {"id": N}.
struct loop_id_request {
    std::int64_t id = 0;
    bool operator==(const loop_id_request&) const = default;
};
void from_json(const nlohmann::json& j, loop_id_request& r);
void to_json(nlohmann::json& j, const loop_id_request& r);

// loop.extend: `by` more iterations (1 to max_iterations).
struct extend_request {
    std::int64_t id = 0;
    std::int64_t by = 0;
    bool operator==(const extend_request&) const = default;
};
void from_json(const nlohmann::json& j, extend_request& r);
void to_json(nlohmann::json& j, const extend_request& r);

// What a daemon has room for, as loop.submit's dry run answers it (`capacity`): where
// `ralphctl submit --host auto` places a loop.
struct host_capacity {
    std::int64_t max_concurrent = 1;
    std::int64_t running = 0;  // loops with a runner
    // The slots the loop would start in now: max_concurrent - running, at least 0; but 0 while
    // the scheduler is held or the loop's workspace is busy, where the loop would not start.
    std::int64_t free_slots = 0;
    std::int64_t queued = 0;  // loops in state queued: the queue a new loop joins
    // The daemon starts no loop now, whatever its slots: its scheduler is paused, outside its
    // time window or out of a global budget, or ralphd cannot write its state (degraded).
    bool scheduler_held = false;
    std::string scheduler_held_reason;  // why, for the user; "" when not held
    // A loop runs in the loop's workspace already: it would queue behind that one (one loop per
    // workspace at a time).
    bool workspace_busy = false;
    // A usage limit holds every agent the loop may run on (its own and its fallbacks) now: it
    // would wait until agent_held_until (epoch ms; 0 when not held).
    bool agent_held = false;
    std::int64_t agent_held_until = 0;
    bool operator==(const host_capacity&) const = default;
};
void from_json(const nlohmann::json& j, host_capacity& c);
void to_json(nlohmann::json& j, const host_capacity& c);

// loop.submit's result: the new loop (or the earlier one of its idempotency key). With dry_run:
// the loop as it would be (id 0, dry_run true; the earlier loop of the key if there is one) and
// the daemon's capacity.
struct submit_result {
    loop_info loop;
    bool created = true;                    // false: the loop of an earlier submit with the key
    std::vector<std::string> warnings;      // for the user (ralphctl prints them on stderr)
    std::optional<host_capacity> capacity;  // dry_run only
    bool operator==(const submit_result&) const = default;
};
void from_json(const nlohmann::json& j, submit_result& r);
void to_json(nlohmann::json& j, const submit_result& r);

// The data of loop.submit's refusal of a workspace with uncommitted changes (workspace_dirty,
// -32008), which ralphctl shows before asking whether to start anyway.
struct dirty_workspace {
    std::vector<std::string> changes;  // the first 20, as `git status --porcelain` shows them
    bool operator==(const dirty_workspace&) const = default;
};
void from_json(const nlohmann::json& j, dirty_workspace& d);
void to_json(nlohmann::json& j, const dirty_workspace& d);

// loop.list: loops in some states (all when empty), the newest `limit` (0 = all), with only
// `fields` of their summary (all when empty).
struct list_request {
    std::vector<loop_state> states;
    std::int64_t limit = 0;
    std::int64_t before = 0;  // only loops with a smaller id (the next page); 0 = from the newest
    std::vector<summary_field> fields;
    bool operator==(const list_request&) const = default;
};
void from_json(const nlohmann::json& j, list_request& r);
void to_json(nlohmann::json& j, const list_request& r);

struct loop_list {
    std::vector<loop_info> loops;       // as summaries: only the summary fields are read or sent
    std::vector<summary_field> fields;  // the daemon sends these (all when empty); not sent
    std::optional<std::int64_t> total = {};  // the loops in the states asked for, in all pages
    bool operator==(const loop_list&) const = default;
};
void from_json(const nlohmann::json& j, loop_list& r);
void to_json(nlohmann::json& j, const loop_list& r);

// loop.get's result: the loop and its agent as agents.list describes it.
struct loop_detail {
    loop_info loop;
    agent_info agent;  // "agent_info"
    bool operator==(const loop_detail&) const = default;
};
void from_json(const nlohmann::json& j, loop_detail& r);
void to_json(nlohmann::json& j, const loop_detail& r);

// loop.iterations' result: every attempt, in order.
struct attempt_list {
    std::vector<attempt_info> attempts;
    bool operator==(const attempt_list&) const = default;
};
void from_json(const nlohmann::json& j, attempt_list& r);
void to_json(nlohmann::json& j, const attempt_list& r);

// loop.diff: what one attempt of the loop changed in its workspace, as a unified diff of at most
// `max_bytes` (1 MiB by default, at most 4 MiB).
struct diff_request {
    std::int64_t id = 0;
    std::int64_t attempt = 0;  // an attempt id, as loop.iterations gives it
    std::int64_t max_bytes = 1 << 20;
    bool operator==(const diff_request&) const = default;
};
void from_json(const nlohmann::json& j, diff_request& r);
void to_json(nlohmann::json& j, const diff_request& r);

struct attempt_diff {
    std::int64_t id = 0;  // the loop
    std::int64_t attempt = 0;
    std::int64_t iteration = 0;
    std::string diff;  // as `git diff` between the trees before and after it, the workspace's part
    bool cut = false;  // there was more than max_bytes: `diff` ends at a whole line before
    // Why there is no diff ("" when there is one, also an empty one): the attempt has no git
    // snapshots to compare (a judge's, still running, did not succeed, outside git, recorded
    // before ralph kept their trees), or the repository cannot give the diff.
    std::string error;
    bool operator==(const attempt_diff&) const = default;
};
void from_json(const nlohmann::json& j, attempt_diff& r);
void to_json(nlohmann::json& j, const attempt_diff& r);

// loop.steer: a hint for the loop's next iteration (1 byte .. 64 KiB, not blank).
struct steer_request {
    std::int64_t id = 0;
    std::string text;
    bool operator==(const steer_request&) const = default;
};
void from_json(const nlohmann::json& j, steer_request& r);
void to_json(nlohmann::json& j, const steer_request& r);

struct steer_result {
    std::int64_t id = 0;
    std::int64_t steering_id = 0;
    std::int64_t next_iteration = 0;  // the iteration whose prompt will carry it
    bool operator==(const steer_result&) const = default;
};
void from_json(const nlohmann::json& j, steer_result& r);
void to_json(nlohmann::json& j, const steer_result& r);

// loop.merge, loop.pr: the loop as it is after the merge of its branch or the opening of its
// pull request (its `landing` says what happened), and whether that worked: the branch's commits
// are in the target now, or the pull request is open.
struct landing_result {
    loop_info loop;
    bool landed = false;
    bool operator==(const landing_result&) const = default;
};
void from_json(const nlohmann::json& j, landing_result& r);
void to_json(nlohmann::json& j, const landing_result& r);

// loop.events: the parsed agent stream, after event id `after`, of one iteration (0 = all).
struct events_request {
    std::int64_t id = 0;
    std::int64_t iteration = 0;
    std::int64_t after = 0;
    std::int64_t limit = 1000;  // 1..10000
    bool operator==(const events_request&) const = default;
};
void from_json(const nlohmann::json& j, events_request& r);
void to_json(nlohmann::json& j, const events_request& r);

struct event_list {
    std::vector<event_info> events;
    std::int64_t next_after = 0;  // `after` for the next page
    bool operator==(const event_list&) const = default;
};
void from_json(const nlohmann::json& j, event_list& r);
void to_json(nlohmann::json& j, const event_list& r);

// The encodings of output in loop.output and loop.tail (`encoding`).
namespace encoding {
// Valid UTF-8 text: invalid bytes replaced.
inline constexpr const char* utf8 = "utf8";
// The exact bytes, base64-encoded.
inline constexpr const char* base64 = "base64";
// loop.tail only: each loop.output notification a binary WebSocket message, its JSON text (`data`
// empty), a newline and the `length` bytes themselves.
inline constexpr const char* binary = "binary";
}  // namespace encoding

// loop.output: a page of persisted output. loop.tail takes the same selection.
struct output_request {
    std::int64_t id = 0;
    std::optional<std::int64_t> offset;      // byte offset; default 0
    std::optional<std::int64_t> last_lines;  // start at the beginning of the last N lines instead
    std::int64_t max_bytes = 1 << 20;        // loop.output only; at most 4 MiB
    std::string encoding = encoding::utf8;   // or base64, or (loop.tail only) binary
    bool output = true;                      // loop.tail only: false = state notifications only
    bool render = false;  // loop.tail only: notifications also carry the bytes rendered (`text`)
    bool operator==(const output_request&) const = default;
};
void from_json(const nlohmann::json& j, output_request& r);
void to_json(nlohmann::json& j, const output_request& r);

// Which attempt wrote a piece of output (iteration 0: bytes before any attempt, or a ralphd that
// does not say): a reader draws a line where each attempt's part begins (output_section).
struct output_origin {
    std::int64_t iteration = 0;
    std::int64_t attempt = 0;
    attempt_kind kind = attempt_kind::work;
    bool operator==(const output_origin&) const = default;
};
// "iteration 3", "iteration 3 · attempt 2" (a retry), "iteration 3 · judge": the name of the
// part of a loop's output a piece belongs to; "" for an origin not known.
std::string output_section(const output_origin& origin);

struct output_page {
    std::int64_t id = 0;
    std::int64_t offset = 0;       // where `data` starts
    std::int64_t next_offset = 0;  // where the next page starts
    std::int64_t end_offset = 0;   // the committed end of the loop's output
    std::string data;              // in `encoding`
    std::string encoding = encoding::utf8;
    // The output format of the attempt that wrote `data` (text, claude, codex, opencode,
    // gemini): a page holds one attempt's bytes.
    std::string format = "text";
    loop_state state = loop_state::queued;
    bool final = false;    // the loop has ended and this page reaches the end: nothing will follow
    output_origin origin;  // "iteration", "attempt", "kind": the attempt that wrote `data`
    bool operator==(const output_page&) const = default;
};
void from_json(const nlohmann::json& j, output_page& r);
void to_json(nlohmann::json& j, const output_page& r);

// loop.tail's result: where the notifications start.
struct tail_started {
    std::int64_t id = 0;
    std::int64_t offset = 0;
    loop_state state = loop_state::queued;
    // Why it does not run yet, and until when (a waiting loop's; 0: not known)
    std::string stop_reason;
    std::int64_t resume_at = 0;
    bool operator==(const tail_started&) const = default;
};
void from_json(const nlohmann::json& j, tail_started& r);
void to_json(nlohmann::json& j, const tail_started& r);

// events.subscribe's result.
struct subscription {
    bool subscribed = true;
    bool operator==(const subscription&) const = default;
};
void from_json(const nlohmann::json& j, subscription& r);
void to_json(nlohmann::json& j, const subscription& r);

// Notification loop.output: a piece of a tailed loop's output.
struct output_notification {
    std::int64_t id = 0;
    std::int64_t offset = 0;
    std::int64_t length = 0;  // raw bytes covered by `data`
    std::string data;
    std::string encoding = encoding::utf8;
    std::string format = "text";  // as output_page's: one attempt's bytes
    // loop.tail with render: the bytes made readable as `ralphctl tail` shows them (a structured
    // stream's events, text as it is); a last notification of length 0 may carry only this.
    std::optional<std::string> text;
    output_origin origin;  // as output_page's
    bool operator==(const output_notification&) const = default;
};
void from_json(const nlohmann::json& j, output_notification& n);
void to_json(nlohmann::json& j, const output_notification& n);

// Notification loop.state: a tailed loop changed state; `final` ends the tail.
struct state_notification {
    std::int64_t id = 0;
    loop_state state = loop_state::queued;
    std::string stop_reason;
    std::int64_t iterations = 0;
    bool final = false;
    std::int64_t resume_at = 0;  // when a waiting loop goes on (0: not waiting, or not known)
    bool operator==(const state_notification&) const = default;
};
void from_json(const nlohmann::json& j, state_notification& n);
void to_json(nlohmann::json& j, const state_notification& n);

// How many of `bytes` (a piece of output) to send in `encoding`: in lossy utf8 a piece must
// not end inside a character (its rest comes with the next piece) unless the piece holds nothing
// else, which only a truncated sequence at the very end of the output can cause.
std::size_t sendable_length(std::string_view bytes, std::string_view encoding);
// Encodes raw bytes for the wire in the requested encoding (utf8 or base64).
std::string encode_output(std::string_view bytes, std::string_view encoding);
// Decodes a `data` field back to raw bytes.
std::string decode_output(std::string_view data, std::string_view encoding);

}  // namespace ralph::proto
