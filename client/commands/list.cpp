// `ralphctl list [--all] [--state S]... [--limit N] [--all-hosts]`: the loops, newest first, as
// a table (ID NAME STATE ITER AGENT AGE WORKSPACE) or with --json {"loops": [...]}. By default:
// the 20 newest loops that have not ended (and how many more there are) and the 50 most recent
// that have (see list_requests); --all asks page after page.
// --all-hosts: those of every host of the hosts file, with their HOST.
// Must stay fast with a long history: requests asking only for the fields the table shows, rows
// read while the reply is parsed (SAX, no JSON tree: building and freeing the tree of 10,000
// objects was most of the time), and the table rendered into one buffer written at once.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/fleet.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>

namespace ralph::client {
namespace {

// Reads the loops out of the reply {"result": {"loops": [{...}, ...]}}, or the message of
// {"error": {"message": ...}}, as the parser goes: each loop's summary is a small object of
// scalars, converted to a proto::loop_info when it closes. Nesting depth counts the open
// containers: a loop is an object at depth 4, its fields are the values at depth 4.
class list_reader final : public nlohmann::json_sax<nlohmann::json> {
  public:
    std::vector<proto::loop_info> loops;
    std::optional<std::string> error;
    std::optional<std::int64_t> total;  // of the last reply

    bool null() override { return value(nullptr); }
    bool boolean(bool v) override { return value(v); }
    bool number_integer(number_integer_t v) override { return value(v); }
    bool number_unsigned(number_unsigned_t v) override { return value(v); }
    bool number_float(number_float_t v, const string_t&) override { return value(v); }
    bool binary(binary_t&) override { return true; }
    bool string(string_t& v) override {
        if (depth_ == 2 && keys_[1] == "error" && keys_[2] == "message") error = v;
        return value(std::move(v));
    }
    bool start_object(std::size_t) override {
        ++depth_;
        if (in_row()) row_ = nlohmann::json::object();
        return true;
    }
    bool end_object() override {
        if (in_row()) loops.push_back(row_.get<proto::loop_info>());
        --depth_;
        return true;
    }
    bool start_array(std::size_t) override {
        ++depth_;
        return true;
    }
    bool end_array() override {
        --depth_;
        return true;
    }
    bool key(string_t& name) override {
        if (depth_ < keys_.size()) keys_[depth_] = std::move(name);
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        return false;
    }

  private:
    static constexpr std::size_t row_depth = 4;

    bool value(nlohmann::json v) {
        if (depth_ == 2 && keys_[1] == "result" && keys_[2] == "total" && v.is_number_integer())
            total = v.get<std::int64_t>();
        if (in_row()) row_[keys_[row_depth]] = std::move(v);
        return true;
    }
    bool in_row() const {
        return depth_ == row_depth && keys_[1] == "result" && keys_[2] == "loops";
    }

    std::size_t depth_ = 0;
    std::array<std::string, row_depth + 1> keys_;  // the last key seen at each depth
    nlohmann::json row_;
};

struct list_options {
    std::vector<std::string> states;
    std::int64_t limit = 0;
    bool all = false;
};

// Without --all, --state or --limit: a screenful of the newest loops that have not ended (and how
// many more there are), plus the most recent ended ones, so that the list stays short and fast
// however long the history and the queue grow.
constexpr std::int64_t first_active_loops = 20;
constexpr std::int64_t recent_ended_loops = 50;
// --all: the loops a page at a time, each call a short one for the daemon.
constexpr std::int64_t all_page = 500;

// The loop.list requests the options stand for (two for the default view); `pages`: each is
// asked again for the page after the last one until a page comes back short.
struct list_plan {
    std::vector<proto::list_request> requests;
    bool pages = false;
};
list_plan list_requests(const list_options& options) {
    if (!options.all && options.states.empty() && options.limit == 0)
        return {recent_loops_requests(first_active_loops, recent_ended_loops)};
    proto::list_request request;
    for (const auto& state : options.states)
        request.states.push_back(proto::loop_state_from_string(state));
    request.limit = options.limit;
    const bool pages = options.limit == 0;
    if (pages) request.limit = all_page;
    return {{request}, pages};
}

// Whether the plan asks for the page after the one that ended at `last` with `got` loops, and
// which (request.before).
bool next_page(const list_plan& plan, proto::list_request& request, std::size_t got,
               std::int64_t last) {
    if (!plan.pages || std::int64_t(got) < request.limit) return false;
    request.before = last;
    return true;
}

// The table; with `hosts` (--all-hosts: each loop's host, by index), a HOST column first. Under
// it, a line per loop that waits, saying why and until when (describe_wait; with `queue`, the
// one daemon's, the causes of queued loops too).
void print_table(const client_context& ctx, const std::vector<proto::loop_info>& loops,
                 const queue_view* queue, const std::vector<std::string>& hosts = {}) {
    table rows(with_host_column(!hosts.empty(), {id_column(!hosts.empty()),
                                                 {"NAME", false, table::fit::cut_end},
                                                 {"STATE"},
                                                 {"ITER", true},
                                                 {"AGENT"},
                                                 {"AGE", true},
                                                 {"WORKSPACE", false, table::fit::cut_start}}));
    const std::int64_t now = text::now_ms();
    for (std::size_t i = 0; i < loops.size(); ++i) {
        const proto::loop_info& loop = loops[i];
        add_host_and_id(rows, hosts.empty() ? std::string_view() : hosts[i], loop.id);
        rows.add(loop.spec.name.empty() ? "-" : loop.spec.name);
        rows.add(std::string(proto::to_string(loop.state)), state_colour(loop.state));
        if (loop.spec.max_iterations == 0)
            rows.add_format("{}/∞", loop.iterations);
        else
            rows.add_format("{}/{}", loop.iterations, loop.spec.max_iterations);
        rows.add(loop.spec.agent);
        rows.add(format_age(now - loop.created_at));
        rows.add(shorten_home(loop.spec.workspace));
    }
    fmt::memory_buffer out;
    rows.render(out, ctx.colour, output_columns());
    std::vector<std::pair<std::string, std::string>> waits;
    std::size_t id_width = 0;
    for (std::size_t i = 0; i < loops.size(); ++i) {
        std::string why = describe_wait(loops[i], queue, now);
        if (why.empty()) continue;
        std::string id =
            hosts.empty() ? std::to_string(loops[i].id) : qualified_id(hosts[i], loops[i].id);
        id_width = std::max(id_width, id.size());
        waits.emplace_back(std::move(id), escape_controls(why));
    }
    if (!waits.empty()) out.push_back('\n');
    for (const auto& [id, why] : waits)
        fmt::format_to(std::back_inserter(out), "{:>{}}  {}\n", id, id_width, why);
    write_stdout(out);
}

// The loops of one daemon the requests select, newest first.
std::vector<proto::loop_info> fetch_loops(connection& daemon, const list_plan& plan) {
    using proto::method::loop_list;
    std::vector<proto::loop_info> loops;
    for (proto::list_request request : plan.requests) {
        loop_list::result some;
        do {
            some = daemon.call<loop_list>(request);
            std::move(some.loops.begin(), some.loops.end(), std::back_inserter(loops));
        } while (!loops.empty() && next_page(plan, request, some.loops.size(), loops.back().id));
    }
    std::stable_sort(loops.begin(), loops.end(),
                     [](const auto& a, const auto& b) { return a.id > b.id; });
    return loops;
}

// `list --all-hosts`: every host at once (client/fleet.hpp), the newest loops first whatever
// their host.
int run_list_all_hosts(const client_context& ctx, const list_options& options) {
    fleet<std::vector<proto::loop_info>> hosts(ctx.local_socket);
    const auto answers = hosts.ask_once(
        [plan = list_requests(options)](connection& daemon) { return fetch_loops(daemon, plan); });
    struct row {
        const proto::loop_info* loop;
        const std::string* host;
    };
    std::vector<row> rows;
    for (const auto& answer : answers)
        for (const auto& loop : answer.result) rows.push_back({&loop, &answer.host});
    std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
        return a.loop->created_at > b.loop->created_at;
    });
    if (ctx.json) {
        nlohmann::json loops = nlohmann::json::array();
        for (const auto& r : rows) {
            nlohmann::json loop = *r.loop;
            loop["host"] = *r.host;
            loops.push_back(std::move(loop));
        }
        return hosts.print_json({{"loops", std::move(loops)}});
    }
    std::vector<proto::loop_info> loops;
    std::vector<std::string> names;
    for (const auto& r : rows) {
        loops.push_back(*r.loop);
        names.push_back(*r.host);
    }
    print_table(ctx, loops, nullptr, names);
    return hosts.exit_code();
}

int run_list(const client_context& ctx, const list_options& options) {
    using proto::method::loop_list;
    if (ctx.all_hosts) return run_list_all_hosts(ctx, options);
    const list_plan plan = list_requests(options);
    connection daemon(ctx.socket);
    if (ctx.json) {
        loop_list::result all;
        all.loops = fetch_loops(daemon, plan);
        print_json(all);
        return exit_code::ok;
    }
    list_reader reader;
    std::int64_t not_shown = 0;  // of the default view's loops that have not ended
    for (proto::list_request request : plan.requests) {
        using field = proto::summary_field;
        request.fields = {field::id,         field::name,           field::state,
                          field::iterations, field::max_iterations, field::agent,
                          field::created_at, field::workspace,      field::stop_reason,
                          field::resume_at};
        std::size_t got = 0;
        do {
            const std::size_t had = reader.loops.size();
            reader.total.reset();
            if (!nlohmann::json::sax_parse(daemon.call_text<loop_list>(request), &reader))
                throw client_error(exit_code::failure,
                                   "ralphd sent a reply that is not valid JSON");
            if (reader.error) throw client_error(exit_code::failure, *reader.error);
            got = reader.loops.size() - had;
        } while (got > 0 && next_page(plan, request, got, reader.loops.back().id));
        if (!plan.pages && reader.total && !request.states.empty() &&
            std::none_of(request.states.begin(), request.states.end(), proto::is_terminal))
            not_shown = *reader.total - std::int64_t(got);
    }
    std::stable_sort(reader.loops.begin(), reader.loops.end(),
                     [](const auto& a, const auto& b) { return a.id > b.id; });
    // Why a queued loop waits is the queue's: the scheduler is asked only when one is listed.
    const bool queued = std::any_of(reader.loops.begin(), reader.loops.end(), [](const auto& l) {
        return l.state == proto::loop_state::queued;
    });
    if (queued) {
        const proto::scheduler_state scheduler = daemon.call<proto::method::scheduler_get>({});
        const queue_view queue{scheduler, reader.loops};
        print_table(ctx, reader.loops, &queue);
    } else {
        print_table(ctx, reader.loops, nullptr);
    }
    if (not_shown > 0)
        fmt::print("… and {} more that have not ended (ralphctl list --all, or --state)\n",
                   not_shown);
    return exit_code::ok;
}

// The loops not ended and the latest that have, in the summary of bare `ralphctl`.
constexpr std::int64_t summary_ended_loops = 10;

}  // namespace

int run_summary(const client_context& ctx, const std::string& help) {
    using namespace proto::method;
    std::optional<connection> daemon;
    proto::daemon_info info;
    proto::scheduler_state scheduler;
    std::vector<proto::loop_info> loops;
    try {
        daemon.emplace(ctx.socket);
        info = daemon->call<daemon_info>({});
        scheduler = daemon->call<scheduler_get>({});
        loops =
            fetch_loops(*daemon, {recent_loops_requests(first_active_loops, summary_ended_loops)});
    } catch (const client_error& e) {
        // No daemon yet (a first run): what ralphctl does, and how to start it; --json: the
        // error, as every command gives it.
        if (e.code() != exit_code::unreachable || ctx.json) throw;
        fmt::print("{}", help);
        std::fflush(stdout);
        fmt::print(stderr, "\nralphctl: {}\n{}\n", e.what(), e.hint());
        return exit_code::ok;
    }
    if (ctx.json) {
        print_json({{"daemon", info}, {"scheduler", scheduler}, {"loops", loops}});
        return exit_code::ok;
    }
    const queue_view queue{scheduler, loops};
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "ralph {} on {} · scheduler {} · {}\n\n",
                   escape_controls(info.version), escape_controls(info.host),
                   describe_scheduler(scheduler), describe_loop_counts(info.loops_by_state));
    write_stdout(out);
    if (loops.empty())
        fmt::print(
            "No loop yet: ralphctl submit \"…\" starts one (ralphctl init writes a "
            "PROMPT.md to start from).\n");
    else
        print_table(ctx, loops, &queue);
    fmt::print("\nralphctl top: live view · list --all: every loop · --help: every command\n");
    return exit_code::ok;
}

namespace {

CLI::Validator loop_state_name() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            try {
                proto::loop_state_from_string(value);
                return {};
            } catch (const std::invalid_argument& e) {
                return e.what();
            }
        },
        "STATE");
}

}  // namespace

void register_list_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<list_options>();
    auto* cmd = app.add_subcommand("list", "List loops, newest first");
    cmd->add_option("--state", options->states,
                    "Only loops in this state (repeatable): queued running waiting paused "
                    "completed exhausted failed cancelled stalled")
        ->allow_extra_args(false)
        ->check(loop_state_name());
    cmd->add_option("--limit", options->limit, "At most N loops (0 = all)")
        ->check(non_negative())
        ->capture_default_str();
    cmd->add_flag("--all", options->all,
                  "Every loop in the history (default: loops that have not ended, and the 50 "
                  "most recent that have)");
    add_all_hosts_flag(*cmd, ctx);
    cmd->callback([&ctx, options] { ctx.exit_code = run_list(ctx, *options); });
}

}  // namespace ralph::client
