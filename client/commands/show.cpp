// `ralphctl show ID`: one loop in detail (loop.get) and its attempts (loop.iterations) as a
// key/value block and a table; with --json {"loop": {...}, "attempts": [...]}.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "common/text.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"

#include <fmt/format.h>

#include <memory>

namespace ralph::client {
namespace {

// The first line of an inline prompt, cut to 60 characters.
std::string preview(std::string_view prompt) {
    constexpr std::size_t max_chars = 60;
    const std::string_view line = prompt.substr(0, prompt.find('\n'));
    std::size_t cut = 0;
    std::size_t chars = 0;
    while (cut < line.size()) {
        // Count code points, not bytes, and never cut one in half.
        if ((static_cast<unsigned char>(line[cut]) & 0xC0) != 0x80 && ++chars > max_chars) break;
        ++cut;
    }
    return fmt::format("\"{}{}\"", line.substr(0, cut), cut < prompt.size() ? "…" : "");
}

// "a b c". (fmt::join trips a false -Wstringop-overflow of GCC 12 at -O3.)
template <typename Words>
std::string join_words(const Words& words) {
    std::string joined;
    for (const auto& word : words) {
        if (!joined.empty()) joined += ' ';
        joined += word;
    }
    return joined;
}

// The prompt source the daemon uses, first that applies (SPEC §3).
std::string prompt_source(const proto::submit_params& spec) {
    if (!spec.prompt.empty()) return preview(spec.prompt);
    if (!spec.prompt_file.empty()) return spec.prompt_file;
    return "PROMPT.md in the workspace, else the built-in prompt";
}

void append_time(fmt::memory_buffer& out, std::string_view key, std::int64_t at, std::int64_t now) {
    if (at == 0) return;
    const std::string relative =
        at <= now ? format_age(now - at) + " ago" : "in " + format_age(at - now);
    append_field(out, key, fmt::format("{} ({})", format_local_time(at), relative));
}

void append_loop(fmt::memory_buffer& out, const proto::loop_info& loop, bool use_colour) {
    const auto& spec = loop.spec;
    const std::int64_t now = text::now_ms();
    append_field(out, "id", fmt::format("{}", loop.id));
    if (!spec.name.empty()) append_field(out, "name", spec.name);
    append_field(out, "state", proto::to_string(loop.state), state_colour(loop.state), use_colour);
    if (!loop.stop_reason.empty()) append_field(out, "stop reason", loop.stop_reason);
    append_field(out, "workspace", spec.workspace);
    append_field(out, "agent", spec.agent);
    if (!spec.model.empty()) append_field(out, "model", spec.model);
    if (!spec.command.empty()) append_field(out, "command", spec.command);
    if (!spec.args.empty()) append_field(out, "args", join_words(spec.args));
    // Only the names: values are often API keys.
    if (!spec.env.empty()) {
        std::vector<std::string_view> names;
        for (const auto& entry : spec.env) names.push_back(entry.first);
        append_field(out, "env", join_words(names));
    }
    append_field(out, "prompt", prompt_source(spec));
    append_field(out, "completion", fmt::format("<promise>{}</promise>", spec.completion_phrase));
    append_field(
        out, "iterations",
        fmt::format("{} of {} (at least {})", loop.iterations,
                    spec.max_iterations == 0 ? "∞" : fmt::format("{}", spec.max_iterations),
                    spec.min_iterations));
    append_field(out, "attempts", fmt::format("{} (retries: {})", loop.attempts, loop.retries));
    append_field(out, "timeout", format_seconds(spec.timeout_s) + " per attempt");
    append_field(out, "delay", format_seconds(spec.delay_s) + " between iterations");
    append_field(out, "retries",
                 fmt::format("{} per iteration, first after {}", spec.max_retries,
                             format_seconds(spec.retry_backoff_s)));
    append_field(out, "priority", fmt::format("{}", spec.priority));
    append_time(out, "created", loop.created_at, now);
    append_time(out, "started", loop.started_at, now);
    append_time(out, "finished", loop.finished_at, now);
    if (loop.state == proto::loop_state::waiting) append_time(out, "resumes", loop.resume_at, now);
    append_field(out, "output", fmt::format("{} bytes", loop.output_bytes));
}

void append_attempts(fmt::memory_buffer& out, const std::vector<proto::attempt_info>& attempts,
                     bool use_colour) {
    table rows({{"ITER", true},
                {"ATTEMPT", true},
                {"START"},
                {"DURATION", true},
                {"TERMINATION"},
                {"EXIT", true},
                {"OUTPUT", true}});
    const std::int64_t now = text::now_ms();
    for (const auto& attempt : attempts) {
        rows.add_format("{}", attempt.iteration);
        rows.add_format("{}", attempt.attempt);
        rows.add(format_local_time(attempt.started_at));
        if (attempt.started_at == 0)
            rows.add("-");
        else
            rows.add(text::format_duration((attempt.ended_at != 0 ? attempt.ended_at : now) -
                                           attempt.started_at));
        rows.add(proto::to_string(attempt.how), termination_colour(attempt.how));
        if (attempt.exit_code)
            rows.add_format("{}", *attempt.exit_code);
        else if (attempt.signal)
            rows.add_format("signal {}", *attempt.signal);
        else
            rows.add("-");
        rows.add_format("{}", attempt.output_end - attempt.output_start);
    }
    rows.render(out, use_colour);
}

int run_show(const client_context& ctx, std::int64_t id) {
    connection daemon(ctx.socket);
    nlohmann::json loop = daemon.call(proto::method::loop_get, {{"id", id}});
    nlohmann::json attempts = daemon.call(proto::method::loop_iterations, {{"id", id}});
    if (ctx.json) {
        print_json({{"loop", std::move(loop)}, {"attempts", std::move(attempts.at("attempts"))}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    append_loop(out, loop.get<proto::loop_info>(), ctx.colour);
    const auto list = attempts.at("attempts").get<std::vector<proto::attempt_info>>();
    if (!list.empty()) {
        out.push_back('\n');
        append_attempts(out, list, ctx.colour);
    }
    write_stdout(out);
    return exit_code::ok;
}

}  // namespace

void register_show_command(CLI::App& app, client_context& ctx) {
    auto id = std::make_shared<std::int64_t>(0);
    auto* cmd = app.add_subcommand("show", "Show a loop and its attempts");
    cmd->add_option("id", *id, "Loop id")->required();
    cmd->callback([&ctx, id] { ctx.exit_code = run_show(ctx, *id); });
}

}  // namespace ralph::client
