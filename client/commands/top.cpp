// `ralphctl top [ID] [--interval S] [--once]`: the live dashboard (SPEC §7). A header (daemon,
// scheduler, loops per state), one row per loop (every loop that has not ended and the latest
// that have: iteration X/max, elapsed, tokens, cost), and for the selected loop (ID, else the
// first running one) its last attempt (summary, diff stats) and the end of its output, rendered
// like `tail` renders it.
// Keys: ↑/↓ or k/j select, c cancel, p pause, r resume, q or Ctrl-C quit.
//
// It polls, like top(1): every interval (default 1 s) it asks ralphd for the scheduler, the loop
// list and the selected loop's new output (from the offset it has read up to), and redraws the
// whole screen; a key refreshes and redraws at once (cancel, pause and resume are sent with that
// refresh). Polling keeps it a plain blocking client, and a dashboard loses nothing by seeing a
// change up to a second late. On a terminal it takes the alternate screen in raw mode and gives
// both back however it ends; with --once, or when stdin or stdout is not a terminal, it prints one
// frame without control sequences and exits (`--json`: the same data as one JSON document).
// --all-hosts (or -H '*'): every host of the hosts file at once (client/fleet.hpp), on a
// connection per host kept between refreshes: a header line per host (down ones say why), the
// rows with a HOST column and qualified ids, the selected loop's output from its host. Everything
// a refresh asks a host (the keys' actions, its rows, the selected loop's output) is one question
// on that host's thread, so that a host that hangs blocks nothing. The first refresh (the only one
// of --once) waits 10 s for each host, so that it chooses the loop shown among every host's; one
// that does not answer is shown down (--once: exit 3; --json: "hosts", loops with "host",
// "unreachable"). Later refreshes wait half an interval: a host without an answer yet keeps its
// last rows, its line saying for how long it has not answered, the selected loop's output as it
// was; it is asked again once it has answered, and is sent no key's action until then.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/fleet.hpp"
#include "client/output.hpp"
#include "common/agent_stream/agent_stream.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>

namespace ralph::client {
namespace {

struct top_options {
    std::int64_t id = 0;  // the loop selected at start; 0: the first running one
    double interval_s = 1.0;
    bool once = false;
};

// The loops that have ended shown below the others.
constexpr std::int64_t ended_rows = 20;
// Output lines kept for the selected loop (more than any screen shows).
constexpr std::size_t kept_output_lines = 500;
// Bytes of new output read per refresh; a loop that writes faster is shown from its end.
constexpr std::int64_t output_page_bytes = 256 << 10;

// The summary fields the rows show.
using field = proto::summary_field;
const std::vector<field> row_fields{field::id,          field::name,           field::state,
                                    field::iterations,  field::max_iterations, field::started_at,
                                    field::finished_at, field::input_tokens,   field::output_tokens,
                                    field::cost_usd,    field::attempts,       field::workspace,
                                    field::stop_reason, field::resume_at};

// The terminal in raw mode on the alternate screen, for as long as the object lives.
class raw_terminal {
  public:
    raw_terminal() {
        ::tcgetattr(STDIN_FILENO, &saved_);
        termios raw = saved_;
        // No line editing, no echo, no signals: Ctrl-C arrives as a key and ends top cleanly.
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN);
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
        write_all("\x1b[?1049h\x1b[?25l");
    }
    ~raw_terminal() {
        write_all("\x1b[?25h\x1b[?1049l");
        ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
    }
    raw_terminal(const raw_terminal&) = delete;
    raw_terminal& operator=(const raw_terminal&) = delete;

    static void write_all(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::write(STDOUT_FILENO, bytes.data(), bytes.size());
            if (n <= 0) return;
            bytes.remove_prefix(std::size_t(n));
        }
    }

  private:
    termios saved_{};
};

struct screen_size {
    std::size_t rows = 24;
    std::size_t columns = 80;
};

screen_size terminal_size() {
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0 || size.ws_row == 0 || size.ws_col == 0)
        return {};
    return {size.ws_row, size.ws_col};
}

// The first `width` columns of `text` (code points, as display_width counts them).
std::string_view clip(std::string_view text, std::size_t width) {
    std::size_t columns = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (columns == width) return text.substr(0, i);
        ++columns;
    }
    return text;
}

// An output line made safe for the screen: tabs become spaces, escape sequences (colours,
// cursor movement) and other control characters are dropped.
std::string printable(std::string_view line) {
    std::string out;
    out.reserve(line.size());
    for (std::size_t i = 0; i < line.size(); ++i) {
        const auto c = static_cast<unsigned char>(line[i]);
        if (c == '\t') {
            out.append("    ");
        } else if (c == 0x1b) {
            // CSI: ESC [ parameters final byte (0x40..0x7e); anything else: ESC and one byte.
            if (i + 1 < line.size() && line[i + 1] == '[') {
                i += 2;
                while (i < line.size() && (line[i] < 0x40 || line[i] > 0x7e)) ++i;
            } else {
                ++i;
            }
        } else if (c >= 0x20 && c != 0x7f) {
            out.push_back(char(c));
        }
    }
    return out;
}

std::string format_tokens(std::int64_t tokens) {
    if (tokens < 1000) return std::to_string(tokens);
    if (tokens < 1000000) return fmt::format("{:.1f}k", double(tokens) / 1000);
    return fmt::format("{:.1f}M", double(tokens) / 1000000);
}

// What top reads of the selected loop at a refresh, on its host's connection: its new output and,
// when its attempt count changed, its last attempt.
struct output_query {
    std::string host;  // "" with one host
    std::int64_t loop_id = 0;
    // Where its output is read from; none: `screen_lines` lines before the end.
    std::optional<std::int64_t> offset;
    std::size_t screen_lines = 0;
    std::int64_t attempts_seen = -1;  // the attempt count at which its last attempt was read
    std::int64_t attempts = -1;       // its attempt count now: read the last again if it differs
};

// What an output_query read.
struct output_read {
    output_query query;
    proto::output_page page;
    bool attempt_read = false;  // the attempts changed: `last_attempt` is the new last one
    std::optional<proto::attempt_info> last_attempt;
    std::string error;  // why it could not be read (the loop was just removed by gc…)
};

// The end of the selected loop's output, as lines, read incrementally. Reading runs on a host's
// question (a thread of a fleet) and touches no view: query() says what to read, read() reads it,
// apply() takes it.
class output_view {
  public:
    // Loop `id` of `host` ("" with one host).
    void select(const std::string& host, std::int64_t id) {
        if (id == loop_id_ && host == host_) return;
        host_ = host;
        loop_id_ = id;
        offset_.reset();
        lines_.clear();
        partial_.clear();
        renderer_ = agent_stream::output_renderer();
        attempts_seen_ = -1;
        last_attempt_.reset();
    }

    std::int64_t loop_id() const { return loop_id_; }
    const std::string& host() const { return host_; }
    const std::deque<std::string>& lines() const { return lines_; }
    const std::string& partial() const { return partial_; }
    const std::optional<proto::attempt_info>& last_attempt() const { return last_attempt_; }

    // What the loop wrote since the last read; the first read starts `screen_lines` lines before
    // the end. Its attempt count is set by whoever knows it (the rows).
    output_query query(std::size_t screen_lines) const {
        return {host_, loop_id_, offset_, screen_lines, attempts_seen_, attempts_seen_};
    }

    // Reads `query` on `daemon`. A client_error other than a lost daemon is the read's `error`.
    static output_read read(connection& daemon, const output_query& query) {
        output_read read{query, {}, false, {}, {}};
        try {
            proto::output_request request;
            request.id = query.loop_id;
            request.offset = query.offset;
            if (!request.offset) {
                // A structured stream needs whole lines from their start: begin at a line
                // boundary, a few screens back (a JSON line may render as nothing).
                proto::output_request start;
                start.id = query.loop_id;
                start.last_lines = std::int64_t(query.screen_lines * 4);
                start.max_bytes = 1;
                request.offset = daemon.call<proto::method::loop_output>(start).offset;
            }
            request.max_bytes = output_page_bytes;
            read.page = daemon.call<proto::method::loop_output>(request);
            if (query.attempts != query.attempts_seen) {
                auto all = daemon.call<proto::method::loop_iterations>({query.loop_id}).attempts;
                read.attempt_read = true;
                if (!all.empty()) read.last_attempt = std::move(all.back());
            }
        } catch (const client_error& e) {
            if (e.code() == exit_code::unreachable) throw;
            read.error = e.what();
        }
        return read;
    }

    // Takes what `read` read, unless the selection or the offset moved since it was asked;
    // returns why it could not be read ("" when it was, or is of no use now).
    std::string apply(const output_read& read) {
        const output_query& asked = read.query;
        if (asked.host != host_ || asked.loop_id != loop_id_ || asked.offset != offset_) return "";
        if (!read.error.empty()) return read.error;
        const proto::output_page& page = read.page;
        add_text(renderer_.render(page.data, page.format));
        // Far behind (a flood): skip to the last page instead of reading everything.
        offset_ = page.end_offset - page.next_offset > output_page_bytes
                      ? page.end_offset - output_page_bytes
                      : page.next_offset;
        if (read.attempt_read) {
            attempts_seen_ = asked.attempts;
            last_attempt_ = read.last_attempt;
        }
        return "";
    }

  private:
    void add_text(std::string_view bytes) {
        partial_.append(bytes);
        std::size_t start = 0;
        for (std::size_t end; (end = partial_.find('\n', start)) != std::string::npos;
             start = end + 1) {
            lines_.push_back(printable(std::string_view(partial_).substr(start, end - start)));
            if (lines_.size() > kept_output_lines) lines_.pop_front();
        }
        partial_.erase(0, start);
    }

    std::string host_;
    std::int64_t loop_id_ = 0;
    std::optional<std::int64_t> offset_;
    std::deque<std::string> lines_;
    std::string partial_;
    agent_stream::output_renderer renderer_;
    std::int64_t attempts_seen_ = -1;
    std::optional<proto::attempt_info> last_attempt_;
};

// What top shows of one host: its daemon and scheduler (the header) and its loops (the rows).
struct host_frame {
    proto::daemon_info info;
    proto::scheduler_state scheduler;
    std::vector<proto::loop_info> loops;
};

host_frame read_host_frame(connection& daemon) {
    host_frame frame;
    frame.info = daemon.call<proto::method::daemon_info>({});
    frame.scheduler = daemon.call<proto::method::scheduler_get>({});
    for (proto::list_request request : recent_loops_requests(ended_rows)) {
        request.fields = row_fields;
        auto some = daemon.call<proto::method::loop_list>(request).loops;
        std::move(some.begin(), some.end(), std::back_inserter(frame.loops));
    }
    return frame;
}

// A key's cancel, pause or resume of a loop.
struct loop_action {
    std::int64_t loop_id = 0;
    std::string description;  // "cancel loop build:17", for the status line
    std::function<proto::loop_info(connection&, std::int64_t loop_id)> call;
};

// What top asks a host at a refresh, in this order: the keys' actions on its loops, its header
// and rows, the selected loop's output when the loop is this host's. Everything a host is asked
// is one question (client/fleet.hpp), so that a host that hangs delays no other.
struct host_request {
    std::vector<loop_action> actions;
    bool frame = true;
    std::optional<output_query> output;
};

// A host's answer to a host_request.
struct host_read {
    std::vector<std::string> action_outcomes;  // "cancel loop build:17: now cancelled", or why not
    std::optional<host_frame> frame;
    std::optional<output_read> output;
};

host_read read_host(connection& daemon, host_request request) {
    host_read read;
    for (const loop_action& action : request.actions) {
        try {
            const proto::loop_info info = action.call(daemon, action.loop_id);
            read.action_outcomes.push_back(
                fmt::format("{}: now {}", action.description, proto::to_string(info.state)));
        } catch (const client_error& e) {
            if (e.code() == exit_code::unreachable) throw;
            read.action_outcomes.push_back(fmt::format("{}: {}", action.description, e.what()));
        }
    }
    if (request.frame) read.frame = read_host_frame(daemon);
    if (auto& output = request.output) {
        if (read.frame)
            for (const auto& loop : read.frame->loops)
                if (loop.id == output->loop_id) output->attempts = loop.attempts;
        read.output = output_view::read(daemon, *output);
    }
    return read;
}

class dashboard {
  public:
    // The daemon of ctx.socket, or with ctx.all_hosts every host; `selected_id` of
    // ctx.id_host's (with every host: local's when the id named none).
    // `live_wait`: how long a refresh after the first waits for the hosts (with every host).
    dashboard(const client_context& ctx, bool interactive, std::int64_t selected_id,
              std::chrono::milliseconds live_wait)
        : interactive_(interactive), live_wait_(live_wait) {
        if (ctx.all_hosts) {
            fleet_.emplace(ctx.local_socket);
            for (const auto& host : fleet_->hosts()) hosts_.push_back({host.name, {}, false, {}});
            output_.select(ctx.id_host.empty() ? "local" : ctx.id_host, selected_id);
        } else {
            daemon_ = std::make_unique<connection>(ctx.socket);
            hosts_.push_back({"", {}, false, {}});
            output_.select("", selected_id);
        }
    }

    // Reads everything shown from the daemons: one question per host (a key's actions, its
    // frame, the selected loop's output when it is the host's); when that chose another loop
    // (the first refresh, a loop gone), a second question to its host alone for its output.
    void refresh(std::size_t screen_lines) {
        const auto wait = refreshed_ ? live_wait_ : std::chrono::milliseconds(fleet_timeout);
        refreshed_ = true;
        std::vector<std::optional<host_request>> requests(hosts_.size(), host_request{});
        for (auto& [host, action] : actions_) requests[host]->actions.push_back(std::move(action));
        actions_.clear();
        const auto shown = host_index(output_.host());
        if (shown && output_.loop_id() != 0) requests[*shown]->output = output_.query(screen_lines);
        take(ask(std::move(requests), wait));
        const std::pair<std::string, std::int64_t> read{output_.host(), output_.loop_id()};
        make_rows();
        if (rows_.empty() || std::pair(output_.host(), output_.loop_id()) == read) return;
        const row& selected = rows_[row_];
        if (hosts_[selected.host].late) return;
        std::vector<std::optional<host_request>> output_only(hosts_.size());
        output_only[selected.host] = host_request{{}, false, output_.query(screen_lines)};
        output_only[selected.host]->output->attempts = selected.loop->attempts;
        take(ask(std::move(output_only), wait));
        make_rows();
    }

    void move_selection(int delta) {
        if (rows_.empty()) return;
        const auto last = std::int64_t(rows_.size()) - 1;
        select_row(std::size_t(std::clamp<std::int64_t>(std::int64_t(row_) + delta, 0, last)));
    }

    // cancel / pause / resume (Method: loop_cancel, loop_pause, loop_resume) of the selected
    // loop, sent with the next refresh's question to its host; the outcome goes to the status
    // line. A late host is not sent it: it would apply it who knows when.
    template <typename Method>
    void control(std::string_view verb) {
        if (rows_.empty()) return;
        const row& selected = rows_[row_];
        const std::string description = fmt::format("{} loop {}", verb, loop_name(selected));
        if (hosts_[selected.host].late) {
            status_ = fmt::format("{}: not sent, {} gave {}", description,
                                  hosts_[selected.host].name, fleet_->errors()[selected.host]);
            return;
        }
        actions_.push_back(
            {selected.host,
             {selected.loop->id, description,
              [](connection& daemon, std::int64_t id) { return daemon.call<Method>({id}); }}});
        hosts_[selected.host].unanswered_actions.push_back(description);
    }

    // --json: the rows as loop.list gave them (their summary fields) with what the header shows;
    // returns the exit code.
    int print_snapshot() const {
        if (!fleet_) {
            const host_frame& frame = *hosts_[0].frame;
            print_json({{"daemon", frame.info},
                        {"scheduler", frame.scheduler},
                        {"loops", loops_json(frame.loops)}});
            return exit_code::ok;
        }
        nlohmann::json hosts = nlohmann::json::array();
        nlohmann::json loops = nlohmann::json::array();
        for (const auto& host : hosts_) {
            if (!host.frame) continue;
            hosts.push_back({{"host", host.name},
                             {"daemon", host.frame->info},
                             {"scheduler", host.frame->scheduler}});
            for (nlohmann::json loop : loops_json(host.frame->loops)) {
                loop["host"] = host.name;
                loops.push_back(std::move(loop));
            }
        }
        return fleet_->print_json({{"hosts", std::move(hosts)}, {"loops", std::move(loops)}});
    }

    // With every host: exit_code::unreachable when one did not answer the last refresh.
    int outcome() const { return fleet_ ? fleet_->exit_code() : exit_code::ok; }

    std::string render(screen_size size) const {
        std::vector<std::string> lines;
        if (fleet_)
            add_fleet_header(lines);
        else
            add_header(lines, *hosts_[0].frame);
        lines.emplace_back();
        const auto rows = table_lines();
        // The table gets at most half the screen; the selected row stays visible.
        const std::size_t table_rows = std::max<std::size_t>(size.rows / 2, 3) - 1;
        std::size_t first = 0;
        if (row_ + 1 > table_rows) first = row_ + 1 - table_rows;
        const std::size_t table_header = lines.size();
        lines.push_back(rows.front());
        std::optional<std::size_t> selected_line;
        for (std::size_t i = first; i < rows_.size() && i - first < table_rows; ++i) {
            if (i == row_) selected_line = lines.size();
            lines.push_back(rows[i + 1]);
        }
        if (rows_.empty()) lines.emplace_back("  no loops yet: ralphctl submit …");
        lines.emplace_back();
        if (!rows_.empty()) add_selected(lines, size);
        const std::string keys =
            interactive_ ? "↑/↓ select · c cancel · p pause · r resume · q quit" : std::string();
        return frame(lines, size, selected_line, table_header, keys);
    }

  private:
    struct host_view {
        std::string name;                 // "" with one host
        std::optional<host_frame> frame;  // none: it did not answer (and has not yet)
        bool late = false;                // the frame is its last one: no answer this refresh
        std::vector<std::string> unanswered_actions;  // sent it, no answer yet
    };
    // A row: one loop of the frame of hosts_[host].
    struct row {
        std::size_t host;
        const proto::loop_info* loop;
    };

    static nlohmann::json loops_json(const std::vector<proto::loop_info>& loops) {
        return nlohmann::json(proto::loop_list{loops, row_fields}).at("loops");
    }

    // hosts_'s index of the host named `name`.
    std::optional<std::size_t> host_index(const std::string& name) const {
        for (std::size_t i = 0; i < hosts_.size(); ++i)
            if (hosts_[i].name == name) return i;
        return std::nullopt;
    }

    // Asks each host its request (none: it is not asked), every host at once; with one host, on
    // this thread (an error ends top).
    std::vector<host_answer<host_read>> ask(std::vector<std::optional<host_request>> requests,
                                            std::chrono::milliseconds wait) {
        if (fleet_) {
            std::vector<bool> asked;
            for (const auto& request : requests) asked.push_back(request.has_value());
            return fleet_->ask_each(
                [requests](connection& daemon, std::size_t host) {
                    return read_host(daemon, *requests[host]);
                },
                asked, wait);
        }
        std::vector<host_answer<host_read>> answers(1);
        if (requests[0]) answers[0].result = read_host(*daemon_, std::move(*requests[0]));
        return answers;
    }

    // Takes the hosts' answers: a host that answered its frame, the outcome of its actions, the
    // selected loop's output; one still answering keeps its frame, shown late; one that failed
    // is shown down; one not asked is as it was.
    void take(std::vector<host_answer<host_read>> answers) {
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            host_view& host = hosts_[i];
            if (auto& read = answers[i].result) {
                host.late = false;
                if (read->frame) host.frame = std::move(read->frame);
                host.unanswered_actions.clear();
                if (!read->action_outcomes.empty())
                    status_ = text::join_words(read->action_outcomes, " · ");
                if (read->output)
                    if (std::string error = output_.apply(*read->output); !error.empty())
                        status_ = std::move(error);
            } else if (!answers[i].error.empty()) {
                host.late = fleet_->answering(i);
                if (!host.late) host.frame.reset();
                if (!host.unanswered_actions.empty())
                    status_ =
                        fmt::format("{}: {}{}", text::join_words(host.unanswered_actions, ", "),
                                    host.late ? "sent, " : "", answers[i].error);
                if (!host.late) host.unanswered_actions.clear();
            }
        }
    }

    // The rows of every host's frame; the selection stays on its loop; at first, on the first
    // running loop; else on the first row.
    void make_rows() {
        rows_.clear();
        for (std::size_t h = 0; h < hosts_.size(); ++h)
            if (hosts_[h].frame)
                for (const auto& loop : hosts_[h].frame->loops) rows_.push_back({h, &loop});
        auto selected = std::find_if(rows_.begin(), rows_.end(), [&](const row& r) {
            return r.loop->id == output_.loop_id() && hosts_[r.host].name == output_.host();
        });
        if (output_.loop_id() == 0)
            selected = std::find_if(rows_.begin(), rows_.end(), [](const row& r) {
                return r.loop->state == proto::loop_state::running;
            });
        select_row(selected != rows_.end() ? std::size_t(selected - rows_.begin()) : 0);
    }

    // "17", or with every host "build1:17".
    std::string loop_name(const row& r) const {
        return fleet_ ? qualified_id(hosts_[r.host].name, r.loop->id) : std::to_string(r.loop->id);
    }

    void select_row(std::size_t row) {
        row_ = rows_.empty() ? 0 : std::min(row, rows_.size() - 1);
        if (rows_.empty())
            output_.select(output_.host(), 0);
        else
            output_.select(hosts_[rows_[row_].host].name, rows_[row_].loop->id);
    }

    static std::string describe_scheduler(const proto::scheduler_state& state) {
        const auto& settings = state.settings;
        std::string scheduler = settings.paused ? "paused"
                                                : fmt::format("{} of {} running", state.running,
                                                              settings.max_concurrent);
        if (!settings.window.empty()) scheduler += fmt::format(", window {}", settings.window);
        return scheduler;
    }

    static std::string describe_storage_line(const proto::storage_status& storage) {
        return fmt::format("storage {} — {}", describe_storage(storage), storage.fix);
    }

    // One host: ralph's version, the scheduler and the time; the loops per state; the storage
    // when it is not ok.
    static void add_header(std::vector<std::string>& lines, const host_frame& frame) {
        lines.push_back(fmt::format("ralph {} · scheduler {} · {}", frame.info.version,
                                    describe_scheduler(frame.scheduler),
                                    format_local_time(text::now_ms())));
        lines.push_back(describe_loop_counts(frame.info.loops_by_state));
        if (frame.info.storage.state != "ok")
            lines.push_back(describe_storage_line(frame.info.storage));
    }

    // Every host: how many answered and the time; then a line per host.
    void add_fleet_header(std::vector<std::string>& lines) const {
        const auto& errors = fleet_->errors();
        const auto down = std::count_if(hosts_.begin(), hosts_.end(),
                                        [](const host_view& host) { return !host.frame; });
        const auto late = std::count_if(hosts_.begin(), hosts_.end(), [](const host_view& host) {
            return host.frame && host.late;
        });
        lines.push_back(fmt::format("ralph · {} hosts{}{} · {}", hosts_.size(),
                                    down == 0 ? std::string() : fmt::format(", {} down", down),
                                    late == 0 ? std::string() : fmt::format(", {} late", late),
                                    format_local_time(text::now_ms())));
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            const host_view& host = hosts_[i];
            if (!host.frame) {
                lines.push_back(fmt::format("{} down: {}", host.name, errors[i]));
                continue;
            }
            const proto::daemon_info& info = host.frame->info;
            std::string line = fmt::format("{} ralph {} · scheduler {} · {}", host.name,
                                           info.version, describe_scheduler(host.frame->scheduler),
                                           describe_loop_counts(info.loops_by_state));
            if (info.storage.state != "ok") line += " · " + describe_storage_line(info.storage);
            if (host.late) line += " · " + errors[i] + ", its rows as they were";
            lines.push_back(printable(line));
        }
    }

    // The header line and one line per loop.
    std::vector<std::string> table_lines() const {
        const bool with_host = fleet_.has_value();
        table t(with_host_column(with_host, {id_column(with_host),
                                             {"NAME"},
                                             {"STATE"},
                                             {"ITER", true},
                                             {"ELAPSED", true},
                                             {"TOKENS", true},
                                             {"COST", true},
                                             {"WORKSPACE"}}));
        const auto now = text::now_ms();
        for (const auto& r : rows_) {
            const proto::loop_info& loop = *r.loop;
            add_host_and_id(t, hosts_[r.host].name, loop.id);
            t.add(loop.spec.name);
            t.add(std::string(proto::to_string(loop.state)));
            const auto max = loop.spec.max_iterations;
            t.add_format("{}/{}", loop.iterations,
                         max == 0 ? std::string("∞") : std::to_string(max));
            t.add(loop.started_at == 0
                      ? "-"
                      : format_age((loop.finished_at != 0 ? loop.finished_at : now) -
                                   loop.started_at));
            t.add(format_tokens(loop.usage.input_tokens + loop.usage.output_tokens));
            t.add(loop.usage.cost_usd ? fmt::format("${:.4f}", *loop.usage.cost_usd) : "-");
            t.add(shorten_home(loop.spec.workspace));
        }
        fmt::memory_buffer out;
        t.render(out, false);
        std::vector<std::string> lines;
        std::string_view text(out.data(), out.size());
        for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
            end = text.find('\n', start);
            if (end == std::string_view::npos) end = text.size();
            lines.emplace_back(text.substr(start, end - start));
        }
        return lines;
    }

    // The selected loop: its state, last attempt and the end of its output, to the screen's end.
    void add_selected(std::vector<std::string>& lines, screen_size size) const {
        const auto& loop = *rows_[row_].loop;
        std::string title = fmt::format("── loop {} {}", loop_name(rows_[row_]), loop.spec.name);
        if (!loop.stop_reason.empty()) title += " · " + loop.stop_reason;
        if (loop.resume_at != 0) title += " · goes on at " + format_local_time(loop.resume_at);
        lines.push_back(title + " ──");
        if (const auto& attempt = output_.last_attempt()) {
            std::string last = fmt::format("last attempt: iteration {} {}{}", attempt->iteration,
                                           attempt->kind == proto::attempt_kind::judge
                                               ? "judge " + attempt->agent + " "
                                               : std::string(),
                                           proto::to_string(attempt->how));
            if (const std::string verdict = describe_verdict(*attempt); !verdict.empty())
                last += " · " + verdict;
            if (attempt->files_changed > 0)
                last += fmt::format(" · {} files +{} -{}", attempt->files_changed,
                                    attempt->insertions, attempt->deletions);
            if (!attempt->summary.empty()) last += " · " + attempt->summary;
            lines.push_back(printable(last));
        }
        const std::size_t footer = interactive_ ? 2 : 0;
        const std::size_t room =
            size.rows > lines.size() + footer ? size.rows - lines.size() - footer : 0;
        std::vector<std::string_view> shown;
        if (!output_.partial().empty()) shown.emplace_back(output_.partial());
        for (auto it = output_.lines().rbegin();
             it != output_.lines().rend() && shown.size() < room; ++it)
            shown.emplace_back(*it);
        if (shown.size() > room) shown.resize(room);
        for (auto it = shown.rbegin(); it != shown.rend(); ++it) lines.push_back(printable(*it));
    }

    // `table_header`: the index of the table's header line (bold, as the first line).
    std::string frame(const std::vector<std::string>& lines, screen_size size,
                      std::optional<std::size_t> selected_line, std::size_t table_header,
                      const std::string& keys) const {
        std::string out;
        if (!interactive_) {
            for (const auto& line : lines) out.append(line).push_back('\n');
            return out;
        }
        out.append("\x1b[H");
        const std::size_t body = size.rows > 2 ? size.rows - 2 : size.rows;
        for (std::size_t i = 0; i < lines.size() && i < body; ++i) {
            const bool highlighted = i == selected_line;
            const bool bold = i == 0 || i == table_header;
            if (highlighted) out.append("\x1b[7m");
            if (bold) out.append("\x1b[1m");
            out.append(clip(lines[i], size.columns));
            if (highlighted || bold) out.append("\x1b[0m");
            out.append("\x1b[K\r\n");
        }
        out.append("\x1b[J");
        // The status and the keys on the last two lines.
        out.append(fmt::format("\x1b[{};1H", size.rows - 1));
        out.append(clip(status_, size.columns)).append("\x1b[K\r\n\x1b[2m");
        out.append(clip(keys, size.columns)).append("\x1b[0m\x1b[K");
        return out;
    }

    std::unique_ptr<connection> daemon_;     // one host
    std::optional<fleet<host_read>> fleet_;  // every host
    bool interactive_;
    std::chrono::milliseconds live_wait_;
    bool refreshed_ = false;
    std::vector<host_view> hosts_;  // one, or the fleet's in its order
    std::vector<row> rows_;
    std::size_t row_ = 0;
    output_view output_;
    std::vector<std::pair<std::size_t, loop_action>>
        actions_;  // hosts_'s index, for the next refresh
    std::string status_;
};

// What a key does; false: quit.
bool handle_key(dashboard& board, std::string_view keys) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const char key = keys[i];
        if (key == 'q' || key == 'Q' || key == 0x03) return false;
        if (key == 0x1b && i + 2 < keys.size() && keys[i + 1] == '[') {
            if (keys[i + 2] == 'A') board.move_selection(-1);
            if (keys[i + 2] == 'B') board.move_selection(1);
            i += 2;
        } else if (key == 'k') {
            board.move_selection(-1);
        } else if (key == 'j') {
            board.move_selection(1);
        } else if (key == 'c') {
            board.control<proto::method::loop_cancel>("cancel");
        } else if (key == 'p') {
            board.control<proto::method::loop_pause>("pause");
        } else if (key == 'r') {
            board.control<proto::method::loop_resume>("resume");
        }
    }
    return true;
}

int run_top(const client_context& ctx, const top_options& options) {
    const bool interactive =
        !options.once && !ctx.json && ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
    const auto interval = std::chrono::milliseconds(std::int64_t(options.interval_s * 1000));
    dashboard board(ctx, interactive, options.id, interval / 2);
    if (!interactive) {
        const screen_size size = ::isatty(STDOUT_FILENO) == 1 ? terminal_size() : screen_size{};
        board.refresh(size.rows);
        if (ctx.json) return board.print_snapshot();
        const std::string frame = board.render(size);
        std::fwrite(frame.data(), 1, frame.size(), stdout);
        return board.outcome();
    }

    raw_terminal terminal;
    auto next_refresh = std::chrono::steady_clock::now();
    for (;;) {
        const screen_size size = terminal_size();
        if (const auto now = std::chrono::steady_clock::now(); now >= next_refresh) {
            board.refresh(size.rows);
            next_refresh = now + interval;
        }
        raw_terminal::write_all(board.render(size));
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
            next_refresh - std::chrono::steady_clock::now());
        pollfd input{STDIN_FILENO, POLLIN, 0};
        if (::poll(&input, 1, int(std::max<std::int64_t>(wait.count(), 0))) <= 0) continue;
        char keys[64];
        const ssize_t n = ::read(STDIN_FILENO, keys, sizeof keys);
        if (n <= 0) return exit_code::ok;  // the terminal went away
        if (!handle_key(board, std::string_view(keys, std::size_t(n)))) return exit_code::ok;
        // A key changed the selection or a loop: show the outcome now, not at the next tick.
        next_refresh = std::chrono::steady_clock::now();
    }
}

}  // namespace

void register_top_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<top_options>();
    auto* cmd = app.add_subcommand(
        "top",
        "The live dashboard: every loop, the selected one's last attempt and output; keys to "
        "select, cancel, pause, resume");
    cmd->add_option("id", options->id,
                    "The loop selected at start (default: the first running one; HOST:ID for "
                    "another host's)")
        ->transform(loop_id(ctx));
    cmd->add_option("--interval", options->interval_s, "Seconds between refreshes")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    cmd->add_flag("--once", options->once,
                  "Print one frame and exit (also when stdin or stdout is not a terminal)");
    add_all_hosts_flag(*cmd, ctx);
    cmd->callback([&ctx, options] { ctx.exit_code = run_top(ctx, *options); });
}

}  // namespace ralph::client
