// `ralphctl top [ID] [--interval S] [--once]`: the live dashboard (README, "Using it"). A header
// (daemon, scheduler, loops per state), one row per loop (every loop that has not ended and the
// latest that have: iteration X/max, elapsed, tokens, cost), and for the selected loop (ID, else
// the first running one) its last attempt (summary, diff stats) and the end of its output, rendered
// like `tail` renders it.
// Keys: ↑/↓ or k/j select, c cancel (y confirms), p pause, r resume, q or Ctrl-C quit.
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
#include "client/loop_output_view.hpp"
#include "client/output.hpp"
#include "client/terminal.hpp"
#include "common/agent_stream/agent_stream.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
// The summary fields the rows show.
using field = proto::summary_field;
const std::vector<field> row_fields{field::id,          field::name,           field::state,
                                    field::iterations,  field::max_iterations, field::started_at,
                                    field::finished_at, field::input_tokens,   field::output_tokens,
                                    field::cost_usd,    field::attempts,       field::workspace,
                                    field::stop_reason, field::resume_at};

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
    for (proto::list_request request : recent_loops_requests(ended_rows, ended_rows)) {
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
        : interactive_(interactive), colour_(interactive && ctx.colour), live_wait_(live_wait) {
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

    // `c`: cancel asks first (it stops the agent, and cannot be undone): the status line asks,
    // and the next key answers (answer_cancel).
    void ask_cancel() {
        if (rows_.empty()) return;
        const row& selected = rows_[row_];
        cancel_asked_ = {hosts_[selected.host].name, selected.loop->id};
        status_ = fmt::format(
            "cancel loop {} ({})? y: cancel it (its agent is stopped), any other "
            "key: keep it",
            loop_name(selected), proto::to_string(selected.loop->state));
    }

    // The key after ask_cancel: `y` cancels the loop asked about, any other keeps it. False when
    // nothing was asked (the key is for something else).
    bool answer_cancel(char key) {
        if (!cancel_asked_) return false;
        const auto asked = *std::exchange(cancel_asked_, std::nullopt);
        const bool still_selected = !rows_.empty() && rows_[row_].loop->id == asked.second &&
                                    hosts_[rows_[row_].host].name == asked.first;
        if ((key == 'y' || key == 'Y') && still_selected)
            control<proto::method::loop_cancel>("cancel");
        else
            status_ = fmt::format("loop {} not cancelled", asked.second);
        return true;
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

    std::string render(terminal::size size) const {
        std::vector<std::string> lines;
        if (fleet_)
            add_fleet_header(lines);
        else
            add_header(lines, *hosts_[0].frame);
        lines.emplace_back();
        const auto rows = table_lines(interactive_ ? size.columns : output_columns());
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

    static std::string describe_storage_line(const proto::storage_status& storage) {
        return fmt::format("storage {} — {}", describe_storage(storage), storage.fix);
    }

    // One host: ralph's version, the scheduler and the time; the loops per state; the storage
    // when it is not ok.
    static void add_header(std::vector<std::string>& lines, const host_frame& frame) {
        lines.push_back(screen_text(fmt::format("ralph {} · scheduler {} · {}", frame.info.version,
                                                describe_scheduler(frame.scheduler),
                                                format_local_time(text::now_ms()))));
        lines.push_back(describe_loop_counts(frame.info.loops_by_state));
        if (frame.info.storage.state != "ok")
            lines.push_back(screen_text(describe_storage_line(frame.info.storage)));
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
                lines.push_back(fmt::format("{} down: {}", host.name, screen_text(errors[i])));
                continue;
            }
            const proto::daemon_info& info = host.frame->info;
            std::string line = fmt::format("{} ralph {} · scheduler {} · {}", host.name,
                                           info.version, describe_scheduler(host.frame->scheduler),
                                           describe_loop_counts(info.loops_by_state));
            if (info.storage.state != "ok") line += " · " + describe_storage_line(info.storage);
            if (host.late) line += " · " + errors[i] + ", its rows as they were";
            lines.push_back(screen_text(line));
        }
    }

    // The header line and one line per loop.
    // Coloured by state on a terminal that takes colours (not with NO_COLOR), in `columns`.
    std::vector<std::string> table_lines(std::size_t columns) const {
        const bool with_host = fleet_.has_value();
        table t(with_host_column(with_host, {id_column(with_host),
                                             {"NAME", false, table::fit::cut_end},
                                             {"STATE"},
                                             {"ITER", true},
                                             {"ELAPSED", true},
                                             {"TOKENS", true},
                                             {"COST", true},
                                             {"WORKSPACE", false, table::fit::cut_start}}));
        const auto now = text::now_ms();
        for (const auto& r : rows_) {
            const proto::loop_info& loop = *r.loop;
            add_host_and_id(t, hosts_[r.host].name, loop.id);
            t.add(loop.spec.name);
            t.add(proto::to_string(loop.state), state_colour(loop.state));
            const auto max = loop.spec.max_iterations;
            t.add_format("{}/{}", loop.iterations,
                         max == 0 ? std::string("∞") : std::to_string(max));
            t.add(loop.started_at == 0
                      ? "-"
                      : format_age((loop.finished_at != 0 ? loop.finished_at : now) -
                                   loop.started_at));
            t.add(format_count(loop.usage.input_tokens + loop.usage.output_tokens));
            t.add(loop.usage.cost_usd ? fmt::format("${:.4f}", *loop.usage.cost_usd) : "-");
            t.add(shorten_home(loop.spec.workspace));
        }
        fmt::memory_buffer out;
        t.render(out, colour_, columns);
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
    void add_selected(std::vector<std::string>& lines, terminal::size size) const {
        const auto& loop = *rows_[row_].loop;
        std::string title =
            fmt::format("── loop {} {}", loop_name(rows_[row_]), screen_text(loop.spec.name));
        // Why it does not run, and until when; else why it stopped.
        const host_frame& frame = *hosts_[rows_[row_].host].frame;
        const queue_view queue{frame.scheduler, frame.loops};
        const std::string why = describe_wait(loop, &queue, text::now_ms());
        if (!why.empty())
            title += " · " + screen_text(why);
        else if (!loop.stop_reason.empty())
            title += " · " + screen_text(loop.stop_reason);
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
            lines.push_back(screen_text(last));
        }
        const std::size_t footer = interactive_ ? 2 : 0;
        const std::size_t room =
            size.rows > lines.size() + footer ? size.rows - lines.size() - footer : 0;
        std::vector<std::string> shown;
        if (!output_.partial().empty()) shown.push_back(screen_text(output_.partial()));
        for (auto it = output_.lines().rbegin();
             it != output_.lines().rend() && shown.size() < room; ++it)
            shown.push_back(*it);
        if (shown.size() > room) shown.resize(room);
        lines.insert(lines.end(), shown.rbegin(), shown.rend());
    }

    // `table_header`: the index of the table's header line (bold, as the first line).
    std::string frame(const std::vector<std::string>& lines, terminal::size size,
                      std::optional<std::size_t> selected_line, std::size_t table_header,
                      const std::string& keys) const {
        if (!interactive_) {
            std::string out;
            for (const auto& line : lines) out.append(line).push_back('\n');
            return out;
        }
        std::vector<terminal::line> body;
        for (std::size_t i = 0; i < lines.size(); ++i)
            body.push_back({lines[i], i == 0 || i == table_header, i == selected_line});
        return terminal::draw(body, {{screen_text(status_)}, {keys}}, size);
    }

    std::unique_ptr<connection> daemon_;     // one host
    std::optional<fleet<host_read>> fleet_;  // every host
    bool interactive_;
    bool colour_;  // states coloured (a terminal, no NO_COLOR)
    std::chrono::milliseconds live_wait_;
    bool refreshed_ = false;
    std::vector<host_view> hosts_;  // one, or the fleet's in its order
    std::vector<row> rows_;
    std::size_t row_ = 0;
    output_view output_;
    std::vector<std::pair<std::size_t, loop_action>>
        actions_;  // hosts_'s index, for the next refresh
    // The loop (host name, id) whose cancel waits for a `y`.
    std::optional<std::pair<std::string, std::int64_t>> cancel_asked_;
    std::string status_;
};

// What the keys do; false: quit.
bool handle_keys(dashboard& board, const std::vector<terminal::key>& keys) {
    using kind = terminal::key::kind;
    for (const terminal::key& key : keys) {
        const char c = key.what == kind::character ? key.character : 0;
        if (c == 'q' || c == 'Q' || c == 0x03) return false;
        if (board.answer_cancel(c)) continue;
        if (key.what == kind::up || c == 'k') board.move_selection(-1);
        if (key.what == kind::down || c == 'j') board.move_selection(1);
        if (c == 'c') board.ask_cancel();
        if (c == 'p') board.control<proto::method::loop_pause>("pause");
        if (c == 'r') board.control<proto::method::loop_resume>("resume");
    }
    return true;
}

int run_top(const client_context& ctx, const top_options& options) {
    const bool interactive =
        !options.once && !ctx.json && ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
    const auto interval = std::chrono::milliseconds(std::int64_t(options.interval_s * 1000));
    dashboard board(ctx, interactive, options.id, interval / 2);
    if (!interactive) {
        const terminal::size size = terminal::window_size();
        board.refresh(size.rows);
        if (ctx.json) return board.print_snapshot();
        const std::string frame = board.render(size);
        std::fwrite(frame.data(), 1, frame.size(), stdout);
        return board.outcome();
    }

    terminal::raw_mode raw;
    auto next_refresh = std::chrono::steady_clock::now();
    for (;;) {
        const terminal::size size = terminal::window_size();
        if (const auto now = std::chrono::steady_clock::now(); now >= next_refresh) {
            board.refresh(size.rows);
            next_refresh = now + interval;
        }
        terminal::write_all(board.render(size));
        const auto keys = terminal::read_keys(std::chrono::duration_cast<std::chrono::milliseconds>(
            next_refresh - std::chrono::steady_clock::now()));
        if (!keys) return exit_code::ok;  // the terminal went away
        if (keys->empty()) continue;
        if (!handle_keys(board, *keys)) return exit_code::ok;
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
        ->check(number_between(0.1, 3600))
        ->capture_default_str();
    cmd->add_flag("--once", options->once,
                  "Print one frame and exit (also when stdin or stdout is not a terminal)");
    add_all_hosts_flag(*cmd, ctx);
    cmd->callback([&ctx, options] { ctx.exit_code = run_top(ctx, *options); });
}

}  // namespace ralph::client
