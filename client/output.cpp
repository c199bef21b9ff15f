// Exit codes, colours, tables and formatting for ralphctl (see output.hpp).
#include "client/output.hpp"

#include "common/text.hpp"
#include "proto/version.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>

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
    std::size_t length = text_.size() - start;
    std::size_t width = display_width(std::string_view(text_).substr(start, length));
    std::size_t col = cells_.size() % columns_.size();
    widths_[col] = std::max(widths_[col], width);
    cells_.push_back({start, length, width, c});
}

void table::render(fmt::memory_buffer& out, bool use_colour) const {
    const std::size_t n = columns_.size();
    auto pad = [&](std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) out.push_back(' ');
    };
    // One pass for the header, then one per row; the header is bold.
    for (std::size_t col = 0; col < n; ++col) {
        const auto& header = columns_[col].header;
        std::size_t gap = widths_[col] - display_width(header);
        if (columns_[col].right_aligned) pad(gap);
        append_coloured(out, header, colour::bold, use_colour);
        if (col + 1 < n) pad((columns_[col].right_aligned ? 0 : gap) + 2);
    }
    out.push_back('\n');
    std::string_view text(text_);
    for (std::size_t i = 0; i < cells_.size(); ++i) {
        const cell& c = cells_[i];
        std::size_t col = i % n;
        std::size_t gap = widths_[col] - c.width;
        if (columns_[col].right_aligned) pad(gap);
        append_coloured(out, text.substr(c.start, c.length), c.c, use_colour);
        if (col + 1 < n)
            pad((columns_[col].right_aligned ? 0 : gap) + 2);
        else
            out.push_back('\n');
    }
}

void append_field(fmt::memory_buffer& out, std::string_view key, std::string_view value, colour c,
                  bool use_colour) {
    fmt::format_to(std::back_inserter(out), "{:<13}", key);
    append_coloured(out, value, c, use_colour);
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

std::string describe_storage(const proto::storage_status& storage) {
    if (storage.state == "ok") return "ok";
    return fmt::format("{} since {}: {} ({} write(s) refused)", storage.state,
                       format_local_time(storage.since), storage.cause, storage.failed_writes);
}

}  // namespace ralph::client
