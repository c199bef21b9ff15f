// What ralphctl prints and how it ends: exit codes (README, "Using it"), the error that carries
// one, colours (only on a TTY, never with NO_COLOR), aligned tables that fit the terminal, the
// `--json` envelope, what others wrote made safe for a terminal (escape_controls), why a loop
// waits (describe_wait) and the formatting of times, durations, counts and paths. stdout carries
// only data; diagnostics go to stderr.
#pragma once

#include "proto/daemon_api.hpp"
#include "proto/loop_api.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ralph::client {

namespace exit_code {
inline constexpr int ok = 0;
inline constexpr int failure = 1;  // an RPC error, or a followed loop that did not complete
inline constexpr int usage = 2;
inline constexpr int unreachable = 3;    // the daemon's socket cannot be reached
inline constexpr int interrupted = 130;  // Ctrl-C, or a followed loop was cancelled
}  // namespace exit_code

// Ends the command: main prints "ralphctl: <what>" (and the hint on its own line) to stderr
// and exits with `code`.
class client_error : public std::runtime_error {
  public:
    client_error(int code, const std::string& what, std::string hint = {})
        : std::runtime_error(what), code_(code), hint_(std::move(hint)) {}
    int code() const { return code_; }
    const std::string& hint() const { return hint_; }

  private:
    int code_;
    std::string hint_;
};

// The exit code of `tail -f` / `submit --follow|--wait` for a loop that ended in `state`.
int exit_code_for(proto::loop_state state);

enum class colour { none, bold, dim, red, green, yellow, magenta, cyan };

// True when stdout is a terminal, NO_COLOR is not set and TERM is not "dumb".
bool stdout_wants_colour();

colour state_colour(proto::loop_state state);
colour termination_colour(proto::termination how);

// Whether escape_controls keeps line breaks: a one-line field (a name, a reason) shows a newline
// as "\n"; output and messages keep their lines (and tabs).
enum class line_breaks { escaped, kept };

// Text that came from an agent, a repository, a peer or a daemon (names, stop reasons, summaries,
// feedback, hold reasons, rendered output, error messages), made safe for a terminal: every
// control character (C0, DEL, C1) is shown escaped — "\n", "\r", "\t", "\x1b", "\u009b" —
// so that none can move the cursor, set the window title or write the clipboard (OSC 52);
// invalid UTF-8 becomes U+FFFD. Everything ralphctl prints of such text goes through it (tables
// and append_field do it for their cells); --json and `tail --raw` print the bytes as they are.
std::string escape_controls(std::string_view text, line_breaks breaks = line_breaks::escaped);

// Appends `text`, wrapped in the escape codes of `c` when `enabled`.
void append_coloured(fmt::memory_buffer& out, std::string_view text, colour c, bool enabled);

// The columns a table may take on stdout: $COLUMNS, else the terminal's width, else 0 (a pipe or
// a file: no limit).
std::size_t output_columns();

// A table with a header line and left-aligned columns separated by two spaces (right-aligned
// where asked). Cells are appended row by row into one string, so a table of thousands of rows
// costs a couple of allocations, not one per cell. Rendered into a width, it fits: its columns
// that may be cut are cut (widest first, "…" where the text was), then its optional columns
// are left out, the last first.
class table {
  public:
    // How a column gives way when the table is wider than the screen.
    enum class fit {
        fixed,      // always whole (ids, states, numbers)
        cut_end,    // cut at its end (names, text)
        cut_start,  // cut at its start (paths, whose end says most)
        optional,   // left out
    };
    struct column {
        std::string_view header;
        bool right_aligned = false;
        fit how = fit::fixed;
    };

    explicit table(std::vector<column> columns);

    void add(std::string_view text, colour c = colour::none);
    template <typename... Args>
    void add_format(fmt::format_string<Args...> format, Args&&... args) {
        std::size_t start = text_.size();
        fmt::format_to(std::back_inserter(text_), format, std::forward<Args>(args)...);
        finish_cell(start, colour::none);
    }

    // Appends the table to `out`, in at most `width` columns (0: no limit, output_columns());
    // the last column is not padded.
    void render(fmt::memory_buffer& out, bool use_colour, std::size_t width) const;

  private:
    struct cell {
        std::size_t start;
        std::size_t length;
        std::size_t width;
        colour c;
    };
    void finish_cell(std::size_t start, colour c);
    // Each column's width in `width` (0: left out).
    std::vector<std::size_t> fitted_widths(std::size_t width) const;

    std::vector<column> columns_;
    std::vector<std::size_t> widths_;
    std::vector<cell> cells_;
    std::string text_;
};

// Appends "key          value\n" with the keys of a block aligned (the value escape_controls'd).
void append_field(fmt::memory_buffer& out, std::string_view key, std::string_view value,
                  colour c = colour::none, bool use_colour = false);

// Writes `out` to stdout in one go.
void write_stdout(const fmt::memory_buffer& out);

// Prints one `--json` document: the members of `members` plus "schema_version", on one line.
void print_json(nlohmann::json members);

// Columns a string takes on a terminal (UTF-8 code points; wide characters count as one).
std::size_t display_width(std::string_view text);

// Local time "2026-11-22 10:11:12"; "-" for 0.
std::string format_local_time(std::int64_t epoch_ms);
// A count for people: "999", "1.2k", "45k", "1.2M", "3.4G".
std::string format_count(std::int64_t count);
// The known word closest to `word` (a typo of it: a few letters off, or its start), or "".
std::string closest_word(std::string_view word, const std::vector<std::string>& known);
// When `at` is, for people, in local time: "14:05 (in 42 min)", "Sat 09:00 (in 2 days)",
// "2026-12-24 09:00 (in 26 days)"; "now" once it has passed.
std::string format_until(std::int64_t at, std::int64_t now);
// What a view knows of a daemon's queue, to say why a queued loop waits: its scheduler, and the
// loops it lists (the running ones among them).
struct queue_view {
    const proto::scheduler_state& scheduler;
    const std::vector<proto::loop_info>& loops;
};
// Why `loop` does not run now, and until when, time first: a waiting loop's "until 14:05 (in 42
// min): waiting for the reset of the claude usage limit …" (its stop reason: which budget, whose
// usage limit, the time window, a retry's backoff); a queued loop's stop reason, else with
// `queue` the scheduler paused, a loop running in its workspace, or no free slot. "" for a loop
// that runs, is paused or has ended, or is next to start. Not escaped.
std::string describe_wait(const proto::loop_info& loop, const queue_view* queue, std::int64_t now);
// Compact age for tables: "42s", "5m", "3h", "12d".
std::string format_age(std::int64_t ms);
// Seconds from the API (timeouts, delays) as "30m00s".
std::string format_seconds(double seconds);
// "running 1, queued 2, completed 30" (daemon.info's loops_by_state) in the order of the state
// machine; "none" when empty.
std::string describe_loop_counts(const std::map<std::string, std::int64_t>& counts);
// Tokens and cost by agent: "claude 1200 in / 300 out tokens, $0.0120; codex 800 in / 200 out
// tokens" (show and report, for a loop whose attempts ran on more than one agent).
std::string describe_by_agent(const std::map<std::string, proto::usage>& by_agent);
// A judge attempt's verdict: "ACCEPT", "REJECT: <the first line of its reasons>", or "" (none).
std::string describe_verdict(const proto::attempt_info& attempt);
// The scheduler in a few words: "paused", "1 of 2 running, window 01:00-07:00".
std::string describe_scheduler(const proto::scheduler_state& state);
// daemon.info's storage: "ok", or "degraded since …: cause (N writes refused)" — the fix is
// storage.fix.
std::string describe_storage(const proto::storage_status& storage);
// Sizes: "512 B", "1.5 KiB", "20.0 MiB", "3.2 GiB".
std::string format_bytes(std::int64_t bytes);
// The loop.list params of the default view of `list` and `top`: the `active_rows` newest loops
// that have not ended (the answer's total counts them all), then the `ended` most recent that
// have (two requests, so a long history and a long queue stay cheap).
std::vector<proto::list_request> recent_loops_requests(std::int64_t active_rows,
                                                       std::int64_t ended);

// Replaces a leading $HOME with "~".
std::string shorten_home(std::string_view path);

}  // namespace ralph::client
