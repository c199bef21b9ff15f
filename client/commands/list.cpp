// `ralphctl list [--all] [--state S]... [--limit N]`: the loops, newest first, as a table
// (ID NAME STATE ITER AGENT AGE WORKSPACE) or with --json {"loops": [...]}. By default: every
// loop that has not ended and the 50 most recent that have (see list_requests).
// Must stay fast with a long history: requests asking only for the fields the table shows, rows read while the reply is parsed (SAX, no JSON tree: building and
// freeing the tree of 10,000 objects was most of the time), and the table rendered into one
// buffer written at once.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <stdexcept>

namespace ralph::client {
namespace {

struct list_row {
    std::int64_t id = 0;
    std::int64_t iterations = 0;
    std::int64_t max_iterations = 0;
    std::int64_t created_at = 0;
    std::string name;
    std::string state;
    std::string agent;
    std::string workspace;
};

// Reads the rows out of the reply {"result": {"loops": [{...}, ...]}}, or the message of
// {"error": {"message": ...}}, as the parser goes. Nesting depth counts the open containers:
// a row is an object at depth 4, its fields are the values at depth 4; deeper ones are skipped.
class list_reader final : public nlohmann::json_sax<nlohmann::json> {
  public:
    std::vector<list_row> rows;
    std::optional<std::string> error;

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t value) override { return number(value); }
    bool number_unsigned(number_unsigned_t value) override {
        return number(static_cast<std::int64_t>(value));
    }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
        ++depth_;
        if (depth_ == row_depth && in_loops()) rows.emplace_back();
        return true;
    }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override {
        ++depth_;
        return true;
    }
    bool end_array() override { return close(); }
    bool key(string_t& name) override {
        if (depth_ < keys_.size()) keys_[depth_] = std::move(name);
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        return false;
    }

    bool string(string_t& value) override {
        if (depth_ == 2 && keys_[1] == "error" && keys_[2] == "message") error = value;
        if (!in_row()) return true;
        const std::string& field = keys_[row_depth];
        list_row& row = rows.back();
        if (field == "name")
            row.name = std::move(value);
        else if (field == "state")
            row.state = std::move(value);
        else if (field == "agent")
            row.agent = std::move(value);
        else if (field == "workspace")
            row.workspace = std::move(value);
        else if (field == "created_at")
            row.created_at = text::parse_iso8601_or_zero(value);
        return true;
    }

  private:
    static constexpr std::size_t row_depth = 4;

    bool number(std::int64_t value) {
        if (!in_row()) return true;
        const std::string& field = keys_[row_depth];
        list_row& row = rows.back();
        if (field == "id")
            row.id = value;
        else if (field == "iterations")
            row.iterations = value;
        else if (field == "max_iterations")
            row.max_iterations = value;
        return true;
    }
    bool close() {
        --depth_;
        return true;
    }
    bool in_loops() const { return keys_[1] == "result" && keys_[2] == "loops"; }
    bool in_row() const { return depth_ == row_depth && !rows.empty() && in_loops(); }

    std::size_t depth_ = 0;
    std::array<std::string, row_depth + 1> keys_;  // the last key seen at each depth
};

struct list_options {
    std::vector<std::string> states;
    std::int64_t limit = 0;
    bool all = false;
};

// Without --all, --state or --limit: every loop that has not ended, plus the most recent ended
// ones, so that the list stays short and fast however long the history grows.
constexpr std::int64_t recent_ended_loops = 50;

// The loop.list requests the options stand for (two for the default view).
std::vector<nlohmann::json> list_requests(const list_options& options) {
    nlohmann::json params = nlohmann::json::object();
    if (!options.all && options.states.empty() && options.limit == 0)
        return recent_loops_requests(recent_ended_loops);
    if (!options.states.empty()) params["states"] = options.states;
    if (options.limit > 0) params["limit"] = options.limit;
    return {params};
}

void print_table(const client_context& ctx, const std::vector<list_row>& loops) {
    table rows({{"ID", true},
                {"NAME"},
                {"STATE"},
                {"ITER", true},
                {"AGENT"},
                {"AGE", true},
                {"WORKSPACE"}});
    const std::int64_t now = text::now_ms();
    for (const list_row& loop : loops) {
        rows.add_format("{}", loop.id);
        rows.add(loop.name.empty() ? "-" : loop.name);
        rows.add(loop.state, state_colour(proto::loop_state_from_string(loop.state)));
        if (loop.max_iterations == 0)
            rows.add_format("{}/∞", loop.iterations);
        else
            rows.add_format("{}/{}", loop.iterations, loop.max_iterations);
        rows.add(loop.agent);
        rows.add(format_age(now - loop.created_at));
        rows.add(shorten_home(loop.workspace));
    }
    fmt::memory_buffer out;
    rows.render(out, ctx.colour);
    write_stdout(out);
}

int run_list(const client_context& ctx, const list_options& options) {
    const std::vector<nlohmann::json> requests = list_requests(options);
    connection daemon(ctx.socket);
    if (ctx.json) {
        nlohmann::json loops = nlohmann::json::array();
        for (const auto& params : requests) {
            nlohmann::json result = daemon.call(proto::method::loop_list, params);
            for (auto& loop : result.at("loops")) loops.push_back(std::move(loop));
        }
        std::stable_sort(loops.begin(), loops.end(), [](const auto& a, const auto& b) {
            return a.at("id").template get<std::int64_t>() > b.at("id").template get<std::int64_t>();
        });
        print_json({{"loops", std::move(loops)}});
        return exit_code::ok;
    }
    list_reader reader;
    for (nlohmann::json params : requests) {
        params["fields"] = {"id",    "name",       "state",    "iterations", "max_iterations",
                            "agent", "created_at", "workspace"};
        if (!nlohmann::json::sax_parse(daemon.call_text(proto::method::loop_list, params), &reader))
            throw client_error(exit_code::failure, "ralphd sent a reply that is not valid JSON");
        if (reader.error) throw client_error(exit_code::failure, *reader.error);
    }
    std::stable_sort(reader.rows.begin(), reader.rows.end(),
                     [](const list_row& a, const list_row& b) { return a.id > b.id; });
    print_table(ctx, reader.rows);
    return exit_code::ok;
}

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
    cmd->callback([&ctx, options] { ctx.exit_code = run_list(ctx, *options); });
}

}  // namespace ralph::client
