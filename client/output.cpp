// Exit codes, colours, tables and formatting for ralphctl (see output.hpp).
#include "client/output.hpp"

#include "client/terminal.hpp"
#include "common/text.hpp"
#include "proto/version.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>
#include <optional>

namespace ralph::client {

int exit_code_for(proto::loop_state state) {
    switch (state) {
        case proto::loop_state::completed:
            return exit_code::ok;
        case proto::loop_state::cancelled:
            return exit_code::interrupted;
        default:
            return exit_code::failure;
    }
}

bool stdout_wants_colour() {
    // NO_COLOR disables colours whatever its value (no-color.org).
    if (std::getenv("NO_COLOR") != nullptr) return false;
    const char* term = std::getenv("TERM");
    if (term != nullptr && std::string_view(term) == "dumb") return false;
    return ::isatty(STDOUT_FILENO) == 1;
}

colour state_colour(proto::loop_state state) {
    switch (state) {
        case proto::loop_state::running:
            return colour::cyan;
        case proto::loop_state::waiting:
        case proto::loop_state::paused:
            return colour::yellow;
        case proto::loop_state::completed:
            return colour::green;
        case proto::loop_state::exhausted:
            return colour::magenta;
        case proto::loop_state::failed:
        case proto::loop_state::stalled:
            return colour::red;
        case proto::loop_state::cancelled:
            return colour::dim;
        case proto::loop_state::queued:
            break;
    }
    return colour::none;
}

colour termination_colour(proto::termination how) {
    switch (how) {
        case proto::termination::running:
            return colour::cyan;
        case proto::termination::exited:
            return colour::green;
        case proto::termination::failed:
        case proto::termination::crashed:
        case proto::termination::timeout:
        case proto::termination::spawn_failed:
            return colour::red;
        case proto::termination::cancelled:
        case proto::termination::interrupted:
            return colour::dim;
    }
    return colour::none;
}

namespace {

// Printable ASCII, and with kept line breaks \n and \t: what escape_controls leaves as it is.
bool plain_byte(char c, line_breaks breaks) {
    return (c >= 0x20 && c < 0x7f) || (breaks == line_breaks::kept && (c == '\n' || c == '\t'));
}

bool plain_text(std::string_view text, line_breaks breaks) {
    return std::all_of(text.begin(), text.end(),
                       [breaks](char c) { return plain_byte(c, breaks); });
}

// Where the `n`th code point of `text` starts (its size when it has fewer).
std::size_t code_point_offset(std::string_view text, std::size_t n) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (n-- == 0) return i;
    }
    return text.size();
}

// `text` in `width` columns: as it is when it fits, else cut with "…" where the rest was.
std::string cut_to(std::string_view text, std::size_t text_width, std::size_t width,
                   table::fit how) {
    if (text_width <= width) return std::string(text);
    if (width == 0) return {};
    if (how == table::fit::cut_start)
        return "…" + std::string(text.substr(code_point_offset(text, text_width - (width - 1))));
    return std::string(text.substr(0, code_point_offset(text, width - 1))) + "…";
}

// The fewest columns a cut column keeps.
constexpr std::size_t narrowest_cut = 8;

}  // namespace

std::string escape_controls(std::string_view text, line_breaks breaks) {
    if (plain_text(text, breaks)) return std::string(text);
    const std::string valid = text::to_valid_utf8(text);
    std::string out;
    out.reserve(valid.size() + 16);
    for (std::size_t i = 0; i < valid.size(); ++i) {
        const auto c = static_cast<unsigned char>(valid[i]);
        if (c >= 0x80) {
            // The C1 controls, U+0080..U+009F, are C2 80..C2 9F in UTF-8 (CSI is U+009B).
            const auto next = i + 1 < valid.size() ? static_cast<unsigned char>(valid[i + 1]) : 0;
            if (c == 0xC2 && next >= 0x80 && next < 0xA0) {
                fmt::format_to(std::back_inserter(out), "\\u{:04x}", next);
                ++i;
            } else {
                out.push_back(char(c));
            }
            continue;
        }
        if (plain_byte(char(c), breaks)) {
            out.push_back(char(c));
        } else if (c == '\r' && breaks == line_breaks::kept && i + 1 < valid.size() &&
                   valid[i + 1] == '\n') {
            // A CRLF line ending is a line ending.
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else {
            fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
        }
    }
    return out;
}

void append_coloured(fmt::memory_buffer& out, std::string_view text, colour c, bool enabled) {
    if (!enabled || c == colour::none) {
        out.append(text);
        return;
    }
    // Indexed by colour, in the order of its enumerators.
    constexpr std::array<std::string_view, 8> codes{"",         "\x1b[1m",  "\x1b[2m",  "\x1b[31m",
                                                    "\x1b[32m", "\x1b[33m", "\x1b[35m", "\x1b[36m"};
    const std::string_view code = codes[static_cast<std::size_t>(c)];
    out.append(code);
    out.append(text);
    out.append(std::string_view("\x1b[0m"));
}

table::table(std::vector<column> columns) : columns_(std::move(columns)) {
    for (const auto& col : columns_) widths_.push_back(display_width(col.header));
}

void table::add(std::string_view text, colour c) {
    std::size_t start = text_.size();
    text_.append(text);
    finish_cell(start, c);
}

void table::finish_cell(std::size_t start, colour c) {
    if (!plain_text(std::string_view(text_).substr(start), line_breaks::escaped)) {
        const std::string safe = escape_controls(std::string_view(text_).substr(start));
        text_.replace(start, std::string::npos, safe);
    }
    std::size_t length = text_.size() - start;
    std::size_t width = display_width(std::string_view(text_).substr(start, length));
    std::size_t col = cells_.size() % columns_.size();
    widths_[col] = std::max(widths_[col], width);
    cells_.push_back({start, length, width, c});
}

std::vector<std::size_t> table::fitted_widths(std::size_t width) const {
    const std::size_t n = columns_.size();
    std::vector<std::size_t> widths = widths_;
    auto total = [&widths] {
        std::size_t sum = 0;
        std::size_t shown = 0;
        for (std::size_t w : widths) {
            sum += w;
            shown += w > 0 ? 1 : 0;
        }
        return sum + (shown > 0 ? 2 * (shown - 1) : 0);
    };
    if (width == 0 || total() <= width) return widths;
    auto cuttable = [this](std::size_t col) {
        return columns_[col].how == fit::cut_end || columns_[col].how == fit::cut_start;
    };
    // Cut the widest cuttable column by a column at a time, down to its narrowest; then leave out
    // the last optional column still shown, and cut again from the whole widths.
    for (std::size_t dropped = n;;) {
        for (;;) {
            if (total() <= width) return widths;
            std::optional<std::size_t> widest;
            for (std::size_t col = 0; col < n; ++col) {
                const std::size_t narrowest =
                    std::max(display_width(columns_[col].header), narrowest_cut);
                if (cuttable(col) && widths[col] > narrowest &&
                    (!widest || widths[col] > widths[*widest]))
                    widest = col;
            }
            if (!widest) break;
            --widths[*widest];
        }
        while (dropped > 0 && columns_[dropped - 1].how != fit::optional) --dropped;
        if (dropped == 0) return widths;
        --dropped;
        for (std::size_t col = 0; col < n; ++col)
            widths[col] = widths[col] == 0 || col == dropped ? 0 : widths_[col];
    }
}

void table::render(fmt::memory_buffer& out, bool use_colour, std::size_t width) const {
    const std::size_t n = columns_.size();
    const std::vector<std::size_t> widths = fitted_widths(width);
    std::size_t last = n;
    while (last > 0 && widths[last - 1] == 0) --last;
    auto pad = [&](std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) out.push_back(' ');
    };
    auto append_cell = [&](std::size_t col, std::string_view text, std::size_t text_width,
                           colour c) {
        if (widths[col] == 0) return;
        const std::string shown = cut_to(text, text_width, widths[col], columns_[col].how);
        const std::size_t gap = widths[col] - std::min(widths[col], text_width);
        if (columns_[col].right_aligned) pad(gap);
        append_coloured(out, shown, c, use_colour);
        if (col + 1 < last)
            pad((columns_[col].right_aligned ? 0 : gap) + 2);
        else
            out.push_back('\n');
    };
    // One pass for the header, then one per row; the header is bold.
    for (std::size_t col = 0; col < n; ++col)
        append_cell(col, columns_[col].header, display_width(columns_[col].header), colour::bold);
    const std::string_view text(text_);
    for (std::size_t i = 0; i < cells_.size(); ++i) {
        const cell& c = cells_[i];
        append_cell(i % n, text.substr(c.start, c.length), c.width, c.c);
    }
}

void append_field(fmt::memory_buffer& out, std::string_view key, std::string_view value, colour c,
                  bool use_colour) {
    fmt::format_to(std::back_inserter(out), "{:<13}", key);
    append_coloured(out, escape_controls(value), c, use_colour);
    out.push_back('\n');
}

void write_stdout(const fmt::memory_buffer& out) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
}

void print_json(nlohmann::json members) {
    members["schema_version"] = proto::json_schema_version;
    std::string text = members.dump();
    text.push_back('\n');
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

std::size_t display_width(std::string_view text) {
    // Every byte that is not a UTF-8 continuation byte starts a code point.
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

std::string format_local_time(std::int64_t epoch_ms) {
    if (epoch_ms == 0) return "-";
    std::time_t seconds = epoch_ms / 1000;
    std::tm tm{};
    ::localtime_r(&seconds, &tm);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S", &tm);
    return buffer;
}

std::size_t output_columns() {
    if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && *columns != '\0') {
        std::size_t value = 0;
        const std::string_view text(columns);
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() && value > 0) return value;
    }
    return ::isatty(STDOUT_FILENO) == 1 ? terminal::window_size().columns : 0;
}

std::string format_count(std::int64_t count) {
    if (count < 1000 && count > -1000) return std::to_string(count);
    constexpr std::array<std::pair<double, std::string_view>, 3> units{
        {{1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};
    const double value = double(count);
    for (const auto& [size, unit] : units) {
        if (std::abs(value) < size) continue;
        const double scaled = value / size;
        // Two or three significant digits: 1.2k, 45k, 450k.
        return std::abs(scaled) < 10 ? fmt::format("{:.1f}{}", scaled, unit)
                                     : fmt::format("{:.0f}{}", scaled, unit);
    }
    return std::to_string(count);
}

std::string closest_word(std::string_view word, const std::vector<std::string>& known) {
    // The edits from one word to the other: a letter added, removed, replaced, or two swapped
    // (the optimal string alignment distance).
    auto distance = [](std::string_view a, std::string_view b) {
        std::vector<std::vector<std::size_t>> d(a.size() + 1,
                                                std::vector<std::size_t>(b.size() + 1));
        for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
        for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
        for (std::size_t i = 1; i <= a.size(); ++i) {
            for (std::size_t j = 1; j <= b.size(); ++j) {
                d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                                    d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
                if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                    d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
        return d[a.size()][b.size()];
    };
    // A typo: at most a third of the word's letters off (one for a short word).
    std::string best;
    std::size_t best_distance = std::max<std::size_t>(1, word.size() / 3) + 1;
    for (const auto& candidate : known) {
        if (word.size() >= 2 && candidate.starts_with(word)) return candidate;
        const std::size_t d = distance(word, candidate);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
}

std::string format_until(std::int64_t at, std::int64_t now) {
    if (at <= now) return "now";
    const std::time_t at_s = at / 1000;
    const std::time_t now_s = now / 1000;
    std::tm when{};
    std::tm today{};
    ::localtime_r(&at_s, &when);
    ::localtime_r(&now_s, &today);
    char clock[32];
    const std::int64_t left_s = (at - now + 999) / 1000;
    // The day is said when it is not today: its name within the week, else its date.
    const char* form = when.tm_yday == today.tm_yday && when.tm_year == today.tm_year ? "%H:%M"
                       : left_s < 6 * 86400                                           ? "%a %H:%M"
                                            : "%Y-%m-%d %H:%M";
    std::strftime(clock, sizeof clock, form, &when);
    std::string left;
    if (left_s < 60)
        left = fmt::format("{} s", left_s);
    else if (left_s < 3600)
        left = fmt::format("{} min", (left_s + 59) / 60);
    else if (left_s < 48 * 3600)
        left = fmt::format("{} h {:02} min", left_s / 3600, (left_s % 3600) / 60);
    else
        left = fmt::format("{} days", left_s / 86400);
    return fmt::format("{} (in {})", clock, left);
}

std::string describe_wait(const proto::loop_info& loop, const queue_view* queue, std::int64_t now) {
    if (loop.state == proto::loop_state::waiting) {
        if (loop.resume_at == 0) return loop.stop_reason;
        const std::string until = "until " + format_until(loop.resume_at, now);
        return loop.stop_reason.empty() ? until : until + ": " + loop.stop_reason;
    }
    if (loop.state != proto::loop_state::queued) return {};
    if (!loop.stop_reason.empty() || queue == nullptr) return loop.stop_reason;
    const proto::scheduler_state& scheduler = queue->scheduler;
    if (scheduler.settings.paused) return "the scheduler is paused (ralphctl scheduler resume)";
    for (const auto& other : queue->loops)
        if (other.state == proto::loop_state::running && other.id != loop.id &&
            other.spec.workspace == loop.spec.workspace)
            return fmt::format("waiting for loop {}, which runs in the same workspace", other.id);
    if (scheduler.running >= scheduler.settings.max_concurrent)
        return fmt::format("waiting for a free slot ({} of {} running)", scheduler.running,
                           scheduler.settings.max_concurrent);
    return {};
}

std::string format_age(std::int64_t ms) {
    std::int64_t s = std::max<std::int64_t>(ms, 0) / 1000;
    if (s < 60) return fmt::format("{}s", s);
    if (s < 3600) return fmt::format("{}m", s / 60);
    if (s < 48 * 3600) return fmt::format("{}h", s / 3600);
    return fmt::format("{}d", s / 86400);
}

std::string format_seconds(double seconds) {
    return text::format_duration(static_cast<std::int64_t>(seconds * 1000));
}

std::string format_bytes(std::int64_t bytes) {
    if (bytes < 1024) return fmt::format("{} B", bytes);
    constexpr std::array<std::string_view, 4> units{"KiB", "MiB", "GiB", "TiB"};
    double value = double(bytes) / 1024;
    std::size_t unit = 0;
    for (; value >= 1024 && unit + 1 < units.size(); ++unit) value /= 1024;
    return fmt::format("{:.1f} {}", value, units[unit]);
}

std::string shorten_home(std::string_view path) {
    static const std::string home = [] {
        const char* value = std::getenv("HOME");
        return std::string(value != nullptr ? value : "");
    }();
    if (home.empty() || home == "/" || !path.starts_with(home)) return std::string(path);
    if (path.size() != home.size() && path[home.size()] != '/') return std::string(path);
    std::string shortened = "~";
    shortened.append(path.substr(home.size()));
    return shortened;
}

std::vector<proto::list_request> recent_loops_requests(std::int64_t active_rows,
                                                       std::int64_t ended) {
    proto::list_request active, recent;
    for (auto state :
         {proto::loop_state::queued, proto::loop_state::running, proto::loop_state::waiting,
          proto::loop_state::paused, proto::loop_state::completed, proto::loop_state::exhausted,
          proto::loop_state::failed, proto::loop_state::cancelled, proto::loop_state::stalled})
        (proto::is_terminal(state) ? recent : active).states.push_back(state);
    active.limit = active_rows;
    recent.limit = ended;
    return {active, recent};
}

std::string describe_by_agent(const std::map<std::string, proto::usage>& by_agent) {
    std::string text;
    for (const auto& [agent, used] : by_agent) {
        if (!text.empty()) text += "; ";
        text +=
            fmt::format("{} {} in / {} out tokens", agent, used.input_tokens, used.output_tokens);
        if (used.cost_usd) text += fmt::format(", ${:.4f}", *used.cost_usd);
    }
    return text;
}

std::string describe_verdict(const proto::attempt_info& attempt) {
    if (attempt.verdict == "accept") return "ACCEPT";
    if (attempt.verdict != "reject") return {};
    const std::string_view reasons = text::first_line(attempt.verdict_reasons);
    return reasons.empty() ? "REJECT" : fmt::format("REJECT: {}", reasons);
}

std::string describe_loop_counts(const std::map<std::string, std::int64_t>& counts) {
    std::string text;
    for (auto state :
         {proto::loop_state::queued, proto::loop_state::running, proto::loop_state::waiting,
          proto::loop_state::paused, proto::loop_state::completed, proto::loop_state::exhausted,
          proto::loop_state::failed, proto::loop_state::cancelled, proto::loop_state::stalled}) {
        auto it = counts.find(std::string(proto::to_string(state)));
        if (it == counts.end() || it->second == 0) continue;
        if (!text.empty()) text += ", ";
        text += fmt::format("{} {}", it->first, it->second);
    }
    return text.empty() ? "none" : text;
}

std::string describe_scheduler(const proto::scheduler_state& state) {
    const auto& settings = state.settings;
    std::string scheduler =
        settings.paused ? "paused"
                        : fmt::format("{} of {} running", state.running, settings.max_concurrent);
    if (!settings.window.empty()) scheduler += fmt::format(", window {}", settings.window);
    return scheduler;
}

std::string describe_storage(const proto::storage_status& storage) {
    if (storage.state == "ok") return "ok";
    return fmt::format("{} since {}: {} ({} write(s) refused)", storage.state,
                       format_local_time(storage.since), storage.cause, storage.failed_writes);
}

}  // namespace ralph::client
