// The agent stream parsers against the recorded runs of the real CLIs (RALPH_FIXTURES_DIR),
// the hand-made variants of tests/agents/streams (RALPH_TEST_STREAMS_DIR) and hostile input.
#include "common/agent_stream/agent_stream.hpp"

#include "common/text.hpp"
#include "tests/support/files.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>

namespace as = ralph::agent_stream;
using as::event_kind;
using as::failure_hint;
using as::format;
using ralph::test::read_file;

namespace {

const std::string tag = "<promise>COMPLETE</promise>";
const std::string recorded_prompt =
    "You are running inside a ralph loop. Work through the task list in this repository. When "
    "every task is done, reply with <promise>COMPLETE</promise>.";

// A recorded run: tests/fixtures/agents/<agent>/<scenario>.<ext>
std::string recorded(const std::string& agent, const std::string& scenario,
                     const std::string& ext = "jsonl") {
    return read_file(std::string(RALPH_FIXTURES_DIR) + "/agents/" + agent + "/" + scenario + "." +
                     ext);
}

// A hand-made variant: tests/agents/streams/<agent>/<scenario>.<ext>
std::string variant(const std::string& agent, const std::string& scenario,
                    const std::string& ext = "jsonl") {
    return read_file(std::string(RALPH_TEST_STREAMS_DIR) + "/" + agent + "/" + scenario + "." +
                     ext);
}

struct run_result {
    std::vector<as::event> events;
    as::summary summary;

    std::vector<as::event> of_kind(event_kind kind) const {
        std::vector<as::event> matching;
        for (const auto& e : events)
            if (e.kind == kind) matching.push_back(e);
        return matching;
    }
};

// Feeds `stdout_bytes` in pieces of `piece` bytes, then finishes.
run_result run(format value, std::string_view stdout_bytes,
               std::size_t piece = std::numeric_limits<std::size_t>::max(),
               std::string_view stderr_bytes = {}, std::string prompt = {}) {
    auto parser = as::make_parser(value, std::move(prompt));
    run_result result;
    parser->feed_stderr(stderr_bytes);
    for (std::size_t at = 0; at < stdout_bytes.size(); at += piece)
        parser->feed(stdout_bytes.substr(at, piece), result.events);
    parser->finish(result.events);
    result.summary = parser->result();
    return result;
}

run_result run_recorded(format value, const std::string& agent, const std::string& scenario) {
    return run(value, recorded(agent, scenario), std::numeric_limits<std::size_t>::max(),
               recorded(agent, scenario, "stderr"));
}

bool same_event(const as::event& a, const as::event& b) {
    return a.kind == b.kind && a.text == b.text && a.tool == b.tool &&
           a.input_tokens == b.input_tokens && a.output_tokens == b.output_tokens &&
           a.cost_usd == b.cost_usd && a.resets_at_ms == b.resets_at_ms && a.failure == b.failure;
}

bool same_summary(const as::summary& a, const as::summary& b) {
    return a.input_tokens == b.input_tokens && a.output_tokens == b.output_tokens &&
           a.cost_usd == b.cost_usd && a.turns == b.turns && a.tool_calls == b.tool_calls &&
           a.final_answer == b.final_answer && a.has_final_answer == b.has_final_answer &&
           a.failure == b.failure && a.error == b.error && a.resets_at_ms == b.resets_at_ms;
}

std::vector<event_kind> kinds(const run_result& result) {
    std::vector<event_kind> list;
    for (const auto& e : result.events) list.push_back(e.kind);
    return list;
}

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

bool valid_utf8(const std::string& text) { return ralph::text::to_valid_utf8(text) == text; }

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (auto pos = text.find(from); pos != std::string::npos;
         pos = text.find(from, pos + to.size()))
        text.replace(pos, from.size(), to);
    return text;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// claude

TEST_CASE("claude: the final answer is the result event's text") {
    const auto r = run_recorded(format::claude, "claude", "ralph-iter1");
    using k = event_kind;
    CHECK(kinds(r) == std::vector<k>{k::system, k::text, k::tool_use, k::tool_result, k::text,
                                     k::usage, k::final_answer});
    CHECK(r.summary.has_final_answer);
    CHECK(r.summary.final_answer == "Iteration 1: wrote ralph-progress.txt. More work remains.");
    CHECK_FALSE(contains(r.summary.final_answer, tag));
    CHECK(r.summary.input_tokens == 200);
    CHECK(r.summary.output_tokens == 40);
    REQUIRE(r.summary.cost_usd);
    CHECK(*r.summary.cost_usd == doctest::Approx(0.0012));
    CHECK(r.summary.turns == 2);
    CHECK(r.summary.tool_calls == 1);
    CHECK(r.summary.failure == failure_hint::none);
    CHECK(r.events[0].text ==
          "session 29ba10a5-114a-49e7-aea6-e6ffcbec338d, model claude-sonnet-4-5");
    CHECK(r.events[2].tool == "Write");
    CHECK(r.events[2].text == "/home/user/project/ralph-progress.txt");
    CHECK(r.events[3].tool == "Write");
    CHECK(r.events[3].text.starts_with("File created successfully"));
}

TEST_CASE("claude: the completion tag of the second iteration is in the final answer") {
    const auto r = run_recorded(format::claude, "claude", "ralph-iter2");
    CHECK(r.summary.has_final_answer);
    CHECK(r.summary.final_answer == "All tasks finished.\n" + tag);
    CHECK(r.summary.input_tokens == 200);
    CHECK(r.summary.output_tokens == 40);
    CHECK(r.summary.turns == 2);
    CHECK(r.summary.tool_calls == 1);
    const auto tools = r.of_kind(event_kind::tool_use);
    REQUIRE(tools.size() == 1);
    CHECK(tools[0].tool == "Bash");
    CHECK(tools[0].text.starts_with("echo 'iteration 2 done'"));
    const auto results = r.of_kind(event_kind::tool_result);
    REQUIRE(results.size() == 1);
    CHECK(results[0].tool == "Bash");
    CHECK(results[0].text == "iteration 1 done\niteration 2 done");
}

TEST_CASE("claude: API failures reported as 'success' with is_error give no final answer") {
    SUBCASE("http 429 is a rate limit") {
        const auto r = run_recorded(format::claude, "claude", "http429");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.final_answer.empty());
        CHECK(r.summary.failure == failure_hint::rate_limit);
        CHECK(r.summary.error == "API Error: Request rejected (429) · Rate limited (mock)");
        const auto errors = r.of_kind(event_kind::error);
        REQUIRE(errors.size() == 2);  // the api_retry notice and the result
        CHECK(errors[0].failure == failure_hint::rate_limit);
        CHECK(errors[1].failure == failure_hint::rate_limit);
    }
    SUBCASE("http 500 is transient") {
        const auto r = run_recorded(format::claude, "claude", "http500");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::transient);
        CHECK(r.summary.error.starts_with("API Error: 500 Internal server error"));
        CHECK(r.summary.resets_at_ms == 0);  // "try again in a moment" states no time
    }
    SUBCASE("a refused connection is transient") {
        const auto r = run_recorded(format::claude, "claude", "refused");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::transient);
        CHECK(r.summary.error == "API Error: Unable to connect to API (ConnectionRefused)");
    }
}

TEST_CASE("claude: a rejected rate_limit_event gives the reset time") {
    const std::int64_t resets_at = ralph::text::now_ms() / 1000 + 120;
    const std::string stream =
        replace_all(variant("claude", "rate-limit"), "RESETS_AT", std::to_string(resets_at));
    const auto r = run(format::claude, stream);
    const auto limits = r.of_kind(event_kind::rate_limit);
    REQUIRE(limits.size() == 1);  // the allowed_warning one is not an event
    CHECK(limits[0].resets_at_ms == resets_at * 1000);
    CHECK(limits[0].failure == failure_hint::rate_limit);
    CHECK(as::render(limits[0]) ==
          "✗ rate limit hit; resets at " + ralph::text::format_iso8601(resets_at * 1000));
    CHECK(r.summary.failure == failure_hint::rate_limit);
    CHECK(r.summary.resets_at_ms == resets_at * 1000);
    CHECK_FALSE(r.summary.has_final_answer);
    CHECK(r.summary.error == "You've hit your limit · resets 3pm (UTC)");
    CHECK(r.of_kind(event_kind::raw).empty());
    CHECK(r.summary.tool_calls == 1);
}

TEST_CASE("claude: the rate-limit variant without its RESETS_AT substituted does not throw") {
    const auto r = run(format::claude, variant("claude", "rate-limit"));
    CHECK(r.of_kind(event_kind::raw).size() == 2);
    CHECK(r.summary.failure == failure_hint::rate_limit);  // from the result's status
}

TEST_CASE("claude: a 429 in the middle of the work is a rate limit") {
    const auto r = run(format::claude, variant("claude", "http429-midstream"));
    CHECK(r.summary.failure == failure_hint::rate_limit);
    CHECK_FALSE(r.summary.has_final_answer);
    CHECK(r.summary.tool_calls == 1);
    CHECK(r.summary.turns == 2);
    CHECK(r.summary.input_tokens == 100);
    CHECK(r.summary.output_tokens == 8);
}

TEST_CASE("claude: the tag in tool input, tool output or earlier text is not a final answer") {
    const auto r = run(format::claude, variant("claude", "prompt-contains-promise"));
    CHECK(r.summary.has_final_answer);
    CHECK(r.summary.final_answer == "Iteration 1: wrote ralph-progress.txt. More work remains.");
    CHECK_FALSE(contains(r.summary.final_answer, tag));
    // The tag was there, elsewhere.
    int with_tag = 0;
    for (const auto& e : r.events)
        if (e.kind != event_kind::final_answer && contains(e.text, tag)) ++with_tag;
    CHECK(with_tag >= 3);
    CHECK(r.summary.tool_calls == 3);
    CHECK(r.summary.turns == 4);
    CHECK(r.summary.input_tokens == 600 + 2048 + 6144);
    CHECK(r.summary.output_tokens == 115);
    REQUIRE(r.summary.cost_usd);
    CHECK(*r.summary.cost_usd == doctest::Approx(0.0213));
}

TEST_CASE("claude: a last line cut in the middle is a raw event, not an answer") {
    const std::string stream = variant("claude", "truncated");
    REQUIRE(stream.back() != '\n');
    const auto r = run(format::claude, stream);
    REQUIRE_FALSE(r.events.empty());
    CHECK(r.events.back().kind == event_kind::raw);
    CHECK(r.events.back().text.starts_with("{\"type\":\"result\""));
    CHECK_FALSE(r.summary.has_final_answer);
    CHECK(r.summary.tool_calls == 1);
}

TEST_CASE("claude: an invalid UTF-8 byte in a message is replaced, the message kept") {
    const auto r = run(format::claude, variant("claude", "invalid-utf8"));
    CHECK(r.of_kind(event_kind::raw).empty());
    const auto texts = r.of_kind(event_kind::text);
    REQUIRE(texts.size() == 2);
    CHECK(texts[0].text == "Progress noted: caf\xEF\xBF\xBD done.");
    for (const auto& e : r.events) CHECK(valid_utf8(e.text));
    CHECK(r.summary.has_final_answer);
    CHECK(r.summary.final_answer == "Iteration 1: wrote ralph-progress.txt. More work remains.");
}

// ---------------------------------------------------------------------------------------------
// codex

TEST_CASE("codex: the last agent message of a completed turn is the final answer") {
    const auto r = run_recorded(format::codex, "codex", "ralph-iter1");
    using k = event_kind;
    CHECK(kinds(r) == std::vector<k>{k::system, k::text, k::tool_use, k::tool_result, k::text,
                                     k::usage, k::final_answer});
    CHECK(r.summary.has_final_answer);
    CHECK(r.summary.final_answer == "Iteration 1: wrote ralph-progress.txt. More work remains.");
    CHECK(r.summary.input_tokens == 200);
    CHECK(r.summary.output_tokens == 40);
    CHECK_FALSE(r.summary.cost_usd);
    CHECK(r.summary.turns == 1);
    CHECK(r.summary.tool_calls == 1);
    CHECK(r.events[2].tool == "edit");
    CHECK(r.events[2].text == "/home/user/project/ralph-progress.txt");
}

TEST_CASE("codex: a command's start and end are one tool call with its exit code and output") {
    const auto r = run_recorded(format::codex, "codex", "ralph-iter2");
    CHECK(r.summary.final_answer == "All tasks finished.\n" + tag);
    CHECK(r.summary.tool_calls == 1);
    CHECK(r.summary.turns == 1);
    CHECK(r.summary.input_tokens == 200);
    CHECK(r.summary.output_tokens == 40);
    const auto results = r.of_kind(event_kind::tool_result);
    REQUIRE(results.size() == 1);
    CHECK(results[0].text == "exit 0: iteration 1 done\niteration 2 done\n");
    CHECK(as::render(results[0]) == "  └ exit 0: iteration 1 done…");
}

TEST_CASE("codex: failed turns and reconnect notices give failure hints") {
    SUBCASE("http 429") {
        const auto r = run_recorded(format::codex, "codex", "http429");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::rate_limit);
        CHECK(r.summary.error == "exceeded retry limit, last status: 429 Too Many Requests");
    }
    SUBCASE("http 500") {
        const auto r = run_recorded(format::codex, "codex", "http500");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::transient);
    }
    SUBCASE("refused: codex keeps reconnecting and never ends by itself") {
        const auto r = run_recorded(format::codex, "codex", "refused");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::transient);
        CHECK(r.of_kind(event_kind::error).size() == 5);
    }
    SUBCASE("a model provider's env_key it did not get: a configuration failure, not transient") {
        const auto r = run(format::codex, variant("codex", "missing-env"));
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::config);
        CHECK(r.summary.error == "Missing environment variable: `MISSING_VAR`.");
    }
}

TEST_CASE("codex: the tag in a command's output is not a final answer") {
    const auto r = run(format::codex, variant("codex", "echo-promise"));
    CHECK(r.summary.has_final_answer);
    CHECK_FALSE(contains(r.summary.final_answer, tag));
    const auto results = r.of_kind(event_kind::tool_result);
    REQUIRE(results.size() == 1);
    CHECK(contains(results[0].text, tag));
    CHECK(r.summary.input_tokens == 1500);
    CHECK(r.summary.output_tokens == 75);
}

// ---------------------------------------------------------------------------------------------
// opencode

TEST_CASE("opencode: with no final event, the last text part becomes the answer at exit") {
    auto parser = as::make_parser(format::opencode);
    std::vector<as::event> events;
    parser->feed(recorded("opencode", "ralph-iter1"), events);
    CHECK_FALSE(parser->result().has_final_answer);  // not before the stream ends
    parser->finish(events);
    const auto& s = parser->result();
    CHECK(s.has_final_answer);
    CHECK(s.final_answer == "Iteration 1: wrote ralph-progress.txt. More work remains.");
    CHECK(s.input_tokens == 200);
    CHECK(s.output_tokens == 40);
    REQUIRE(s.cost_usd);
    CHECK(*s.cost_usd == 0.0);
    CHECK(s.turns == 2);
    CHECK(s.tool_calls == 1);
    REQUIRE(events.size() == 7);
    CHECK(events[1].kind == event_kind::tool_use);
    CHECK(events[1].tool == "write");
    CHECK(events[1].text == "/home/user/project/ralph-progress.txt");
    CHECK(events[2].kind == event_kind::tool_result);
    CHECK(events[2].text == "Wrote file successfully.");
    CHECK(events.back().kind == event_kind::final_answer);
}

TEST_CASE("opencode: the completion tag of the second iteration is in the final answer") {
    const auto r = run_recorded(format::opencode, "opencode", "ralph-iter2");
    CHECK(r.summary.has_final_answer);
    CHECK(r.summary.final_answer == "All tasks finished.\n" + tag);
    CHECK(r.summary.tool_calls == 1);
    CHECK(r.summary.turns == 2);
    CHECK(r.summary.input_tokens == 200);
    CHECK(r.summary.output_tokens == 40);
    CHECK(r.of_kind(event_kind::tool_use).at(0).tool == "bash");
}

TEST_CASE("opencode: an error event gives the failure hint and no final answer") {
    SUBCASE("http 429") {
        const auto r = run_recorded(format::opencode, "opencode", "http429");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::rate_limit);
        CHECK(r.summary.error == "APIError: Rate limited (mock)");
    }
    SUBCASE("http 500") {
        const auto r = run_recorded(format::opencode, "opencode", "http500");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::transient);
    }
    SUBCASE("refused") {
        const auto r = run_recorded(format::opencode, "opencode", "refused");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::transient);
    }
}

TEST_CASE("opencode: an error after some text leaves no final answer") {
    const std::string stream =
        recorded("opencode", "ralph-iter1") + recorded("opencode", "http500");
    const auto r = run(format::opencode, stream);
    CHECK_FALSE(r.summary.has_final_answer);
    CHECK(r.summary.failure == failure_hint::transient);
}

// ---------------------------------------------------------------------------------------------
// gemini

TEST_CASE("gemini: deltas after the last tool event are joined into the final answer") {
    const auto r = run_recorded(format::gemini, "gemini", "ralph-iter1");
    CHECK(r.summary.has_final_answer);
    CHECK(r.summary.final_answer == "Iteration 1: wrote ralph-progress.txt. More work remains.");
    CHECK(r.summary.input_tokens == 200);
    CHECK(r.summary.output_tokens == 40);
    CHECK_FALSE(r.summary.cost_usd);
    CHECK(r.summary.turns == 2);
    CHECK(r.summary.tool_calls == 1);
    const auto tools = r.of_kind(event_kind::tool_use);
    REQUIRE(tools.size() == 1);
    CHECK(tools[0].tool == "write_file");
    CHECK(r.of_kind(event_kind::tool_result).at(0).tool == "write_file");
    // One text event per assistant message, its deltas joined.
    const auto texts = r.of_kind(event_kind::text);
    REQUIRE(texts.size() == 2);
    CHECK(texts.back().text == r.summary.final_answer);
}

TEST_CASE("gemini: a tag split across deltas completes, the echoed prompt's tag does not count") {
    const auto r = run_recorded(format::gemini, "gemini", "ralph-iter2");
    CHECK(r.summary.has_final_answer);
    CHECK(r.summary.final_answer == "All tasks finished.\n" + tag);
    // The echoed prompt (role "user") is no text event; the answer is one, tag whole.
    const auto texts = r.of_kind(event_kind::text);
    REQUIRE_FALSE(texts.empty());
    CHECK(texts.back().text == r.summary.final_answer);
    for (const auto& e : texts)
        CHECK_FALSE(contains(e.text, "You are running inside a ralph loop"));
    CHECK(r.summary.turns == 2);
    CHECK(r.summary.tool_calls == 1);

    // The prompt alone (an iteration that failed before any answer) never completes.
    const auto failed = run_recorded(format::gemini, "gemini", "http500");
    CHECK_FALSE(failed.summary.has_final_answer);
    CHECK_FALSE(contains(failed.summary.final_answer, tag));
}

TEST_CASE("gemini: an error result gives the failure hint") {
    SUBCASE("http 429") {
        const auto r = run_recorded(format::gemini, "gemini", "http429");
        CHECK_FALSE(r.summary.has_final_answer);
        CHECK(r.summary.failure == failure_hint::rate_limit);
        CHECK(r.summary.error.starts_with("[API Error: Rate limited (mock)]"));
    }
    SUBCASE("http 500") {
        const auto r = run_recorded(format::gemini, "gemini", "http500");
        CHECK(r.summary.failure == failure_hint::transient);
    }
    SUBCASE("refused") {
        const auto r = run_recorded(format::gemini, "gemini", "refused");
        CHECK(r.summary.failure == failure_hint::transient);
    }
    SUBCASE("a workspace it does not trust: nothing on stdout, its words on stderr, config") {
        const auto r = run_recorded(format::gemini, "gemini", "untrusted");
        CHECK(r.events.empty());
        CHECK(r.summary.failure == failure_hint::config);
        CHECK(contains(r.summary.error, "Gemini CLI is not running in a trusted directory."));
    }
}

// ---------------------------------------------------------------------------------------------
// Every stream, any chunking, any garbage

TEST_CASE("streams: every fixture fed in pieces of 1, 7 and 4096 bytes gives the same events") {
    struct stream {
        format value;
        std::string bytes;
        std::string stderr_bytes;
    };
    std::vector<stream> streams;
    const std::pair<format, std::string> agents[] = {{format::claude, "claude"},
                                                     {format::codex, "codex"},
                                                     {format::opencode, "opencode"},
                                                     {format::gemini, "gemini"}};
    for (const auto& [value, agent] : agents)
        for (const char* scenario : {"ralph-iter1", "ralph-iter2", "http500", "http429", "refused"})
            streams.push_back(
                {value, recorded(agent, scenario), recorded(agent, scenario, "stderr")});
    for (const char* scenario : {"rate-limit", "http429-midstream", "truncated", "invalid-utf8",
                                 "prompt-contains-promise"})
        streams.push_back({format::claude, variant("claude", scenario), {}});
    streams.push_back({format::codex, variant("codex", "echo-promise"), {}});
    for (const auto& [value, agent] : agents)
        for (const char* scenario : {"judge-accept", "judge-reject"})
            streams.push_back(
                {value, variant(agent, scenario), variant(agent, scenario, "stderr")});
    for (const char* agent : {"aider", "kiro"})
        for (const char* scenario : {"ralph-iter1", "ralph-iter2"})
            streams.push_back({format::text, variant(agent, scenario, "txt"), {}});

    for (const auto& s : streams) {
        const auto whole =
            run(s.value, s.bytes, std::numeric_limits<std::size_t>::max(), s.stderr_bytes);
        CHECK_FALSE(whole.events.empty());
        for (std::size_t piece : {std::size_t(1), std::size_t(7), std::size_t(4096)}) {
            CAPTURE(piece);
            const auto pieces = run(s.value, s.bytes, piece, s.stderr_bytes);
            REQUIRE(pieces.events.size() == whole.events.size());
            for (std::size_t i = 0; i < whole.events.size(); ++i)
                CHECK(same_event(pieces.events[i], whole.events[i]));
            CHECK(same_summary(pieces.summary, whole.summary));
        }
    }
}

TEST_CASE("streams: a judge's verdict in each CLI's format, and a program's, is its final answer") {
    const std::pair<format, std::string> agents[] = {{format::claude, "claude"},
                                                     {format::codex, "codex"},
                                                     {format::opencode, "opencode"},
                                                     {format::gemini, "gemini"}};
    for (const auto& entry : agents) {
        // Not a structured binding: CAPTURE's lambda cannot name one (Clang).
        const format value = entry.first;
        const std::string& agent = entry.second;
        CAPTURE(agent);
        const auto accept = run(value, variant(agent, "judge-accept"));
        CHECK(accept.summary.has_final_answer);
        CHECK(accept.summary.final_answer.find("<ralph_verdict>ACCEPT</ralph_verdict>") !=
              std::string::npos);
        CHECK(accept.summary.input_tokens == 300);
        CHECK(accept.summary.output_tokens == 60);
        const auto reject = run(value, variant(agent, "judge-reject"));
        CHECK(reject.summary.final_answer.find("<ralph_verdict>REJECT</ralph_verdict>") !=
              std::string::npos);
        CHECK(reject.summary.final_answer.find("greet prints nothing") != std::string::npos);
    }
    for (const char* scenario : {"judge-accept", "ralph-iter2"}) {
        const auto text = run(format::text, variant("command", scenario, "txt"));
        CHECK(text.summary.final_answer.find(scenario[0] == 'j' ? "ACCEPT" : "<promise>") !=
              std::string::npos);
    }
    // A program's usage limit, with the reset it states.
    const auto limited =
        run(format::text, "Error: usage limit reached|1763830800\n",
            std::numeric_limits<std::size_t>::max(), "Error: usage limit reached|1763830800\n");
    CHECK(limited.summary.failure == as::failure_hint::rate_limit);
    CHECK(limited.summary.resets_at_ms == 1763830800000);
}

TEST_CASE("streams: only the last 64 KiB of stderr is classified, however it came in pieces") {
    // Found by tests/fuzz/fuzz_agent_stream: stderr fed in pieces kept up to 80 KiB (its tail is
    // trimmed in steps), so an error 70 KiB before the end counted only when it came in pieces.
    std::string stderr_bytes = "Error: 429 Too Many Requests\n";
    while (stderr_bytes.size() < 70 * 1024) stderr_bytes += "debug: still working\n";
    for (std::size_t piece : {std::size_t(1024), stderr_bytes.size()}) {
        CAPTURE(piece);
        auto parser = as::make_parser(format::claude);
        for (std::size_t at = 0; at < stderr_bytes.size(); at += piece)
            parser->feed_stderr(std::string_view(stderr_bytes).substr(at, piece));
        std::vector<as::event> events;
        parser->finish(events);
        CHECK(parser->result().failure == failure_hint::none);
        CHECK(parser->result().error.empty());
    }
}

TEST_CASE("streams: a line longer than max_line_bytes is reported by size and skipped") {
    const std::string huge(as::max_line_bytes + 1, 'x');
    const std::string next =
        R"({"type":"turn.started"})"
        "\n"
        R"({"type":"item.completed","item":{"id":"i","type":"agent_message","text":"after"}})"
        "\n";
    for (std::size_t piece : {std::size_t(4096), std::numeric_limits<std::size_t>::max()}) {
        CAPTURE(piece);
        const auto r = run(format::codex, huge + "\r\n" + next, piece);
        REQUIRE(r.events.size() == 2);
        CHECK(r.events[0].kind == event_kind::raw);
        CHECK(r.events[0].text ==
              "[line of " + std::to_string(as::max_line_bytes + 2) + " bytes skipped]");
        CHECK(r.events[1].kind == event_kind::text);
        CHECK(r.events[1].text == "after");
    }
    // Exactly max_line_bytes is still a line.
    const std::string head =
        R"({"type":"item.completed","item":{"id":"i","type":"agent_message","text":")";
    const std::string tail = R"("}})";
    const std::string at_limit =
        head + std::string(as::max_line_bytes - head.size() - tail.size(), 'y') + tail + "\n";
    const auto r = run(format::codex, at_limit, 4096);
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].kind == event_kind::text);
    CHECK(r.events[0].text == std::string(as::max_event_text_bytes, 'y') + "…");
    // An oversize last line without a newline is reported at finish().
    const auto last = run(format::claude, huge, 4096);
    REQUIRE(last.events.size() == 1);
    CHECK(last.events[0].text == "[line of " + std::to_string(huge.size()) + " bytes skipped]");
}

TEST_CASE("streams: garbage bytes never throw and give valid, bounded UTF-8 events") {
    std::mt19937 random(20261122);
    std::string garbage;
    for (int i = 0; i < 200'000; ++i) {
        const auto byte = char(random() & 0xFF);
        garbage.push_back(random() % 50 == 0 ? '\n' : byte);
    }
    garbage += std::string(as::max_event_text_bytes * 2, '\xC3');  // one long invalid line
    for (format value :
         {format::text, format::claude, format::codex, format::opencode, format::gemini}) {
        CAPTURE(as::to_string(value));
        run_result r;
        CHECK_NOTHROW(r = run(value, garbage, 997, garbage));
        for (const auto& e : r.events) {
            CHECK(valid_utf8(e.text));
            CHECK(e.text.size() <= as::max_event_text_bytes + 3);
        }
        CHECK(valid_utf8(r.summary.final_answer));
        CHECK(valid_utf8(r.summary.error));
    }
}

TEST_CASE("streams: unknown types, non-objects and fields of the wrong type do not throw") {
    const std::string lines =
        "{\"type\":\"surprise\",\"x\":1}\n"
        "[1,2,3]\n"
        "\"just a string\"\n"
        "{\"type\":5}\n"
        "{\"no\":\"type\"}\n"
        "not json at all\n"
        "\n"
        "{\"type\":\"result\",\"usage\":\"lots\",\"num_turns\":\"2\",\"result\":5,\"is_error\":"
        "\"no\"}\n"
        "{\"type\":\"assistant\",\"message\":{\"content\":\"not an array\"}}\n"
        "{\"type\":\"assistant\",\"message\":{\"content\":[5,{\"type\":\"tool_use\",\"input\":[]}]}"
        "}\n"
        "{\"type\":\"item.completed\",\"item\":{\"type\":\"command_execution\",\"exit_code\":\"0\"}"
        "}\n"
        "{\"type\":\"item.completed\",\"item\":7}\n"
        "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1e300,\"output_tokens\":-1}}\n"
        "{\"type\":\"step_finish\",\"part\":{\"tokens\":{\"input\":\"9\",\"cache\":3},\"cost\":"
        "\"free\"}}\n"
        "{\"type\":\"tool_use\",\"part\":{\"state\":{\"status\":\"completed\",\"input\":\"x\"}}}\n"
        "{\"type\":\"error\",\"error\":\"flat\"}\n"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":{\"a\":1},\"delta\":true}\n"
        "{\"type\":\"result\",\"status\":\"success\",\"stats\":[]}\n";
    for (format value :
         {format::text, format::claude, format::codex, format::opencode, format::gemini}) {
        CAPTURE(as::to_string(value));
        run_result r;
        CHECK_NOTHROW(r = run(value, lines));
        if (value != format::text) {
            const auto raws = r.of_kind(event_kind::raw);
            REQUIRE(raws.size() >= 6);
            CHECK(raws[0].text == "{\"type\":\"surprise\",\"x\":1}");
            CHECK(raws[5].text == "not json at all");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Plain text (aider, kiro, command)

TEST_CASE("text: aider's token and cost lines are summed") {
    const auto first = run(format::text, variant("aider", "ralph-iter1", "txt"));
    CHECK(first.summary.input_tokens == 2100 + 2600);
    CHECK(first.summary.output_tokens == 345 + 120);
    REQUIRE(first.summary.cost_usd);
    CHECK(*first.summary.cost_usd == doctest::Approx(0.02));
    CHECK(first.summary.turns == 2);
    CHECK(first.of_kind(event_kind::usage).size() == 2);
    CHECK(first.summary.has_final_answer);
    CHECK_FALSE(contains(first.summary.final_answer, tag));

    const auto second = run(format::text, variant("aider", "ralph-iter2", "txt"));
    CHECK(second.summary.input_tokens == 1234 + 56 + 7 + 12000);
    CHECK(second.summary.output_tokens == 89 + 1200);
    REQUIRE(second.summary.cost_usd);
    CHECK(*second.summary.cost_usd == doctest::Approx(0.0442));
    CHECK(contains(second.summary.final_answer, tag));
    // Plain lines are no events: only usage and the final answer.
    for (const auto& e : second.events)
        CHECK((e.kind == event_kind::usage || e.kind == event_kind::final_answer));
}

TEST_CASE("text: kiro's output is the answer, the tag only in the second iteration") {
    const auto first = run(format::text, variant("kiro", "ralph-iter1", "txt"), 7);
    CHECK(first.summary.has_final_answer);
    CHECK_FALSE(contains(first.summary.final_answer, tag));
    CHECK(first.summary.input_tokens == 0);
    CHECK_FALSE(first.summary.cost_usd);
    const auto second = run(format::text, variant("kiro", "ralph-iter2", "txt"), 7);
    CHECK(contains(second.summary.final_answer, tag));
}

TEST_CASE("text: an echoed prompt containing the tag does not count, a tag after the echo does") {
    const std::string prompt = "Do the tasks.\nWhen done, reply with " + tag + ".";
    const std::string echo = "> Do the tasks.\nWhen done, reply with " + tag + ".\n";
    for (std::size_t piece :
         {std::size_t(1), std::size_t(5), std::numeric_limits<std::size_t>::max()}) {
        CAPTURE(piece);
        const auto pending =
            run(format::text, echo + "working...\nmore to do\n", piece, {}, prompt);
        CHECK(pending.summary.has_final_answer);
        CHECK(pending.summary.final_answer == "\nworking...\nmore to do\n");
        const auto done = run(format::text, echo + "all done\n" + tag + "\n", piece, {}, prompt);
        CHECK(contains(done.summary.final_answer, tag));
    }
    // The answer follows the last echo; without a prompt everything counts.
    const auto twice = run(format::text, echo + tag + "\n" + echo + "not yet\n", 3, {}, prompt);
    CHECK_FALSE(contains(twice.summary.final_answer, tag));
    const auto no_prompt = run(format::text, echo + "not yet\n");
    CHECK(contains(no_prompt.summary.final_answer, tag));
    // A prompt echoed with CRLF line ends still matches.
    const auto crlf = run(format::text, replace_all(echo, "\n", "\r\n") + "no\r\n", 2, {},
                          replace_all(prompt, "\n", "\r\n"));
    CHECK(crlf.summary.final_answer == "\nno\n");
}

TEST_CASE("text: an echo trimmed out of the 256 KiB window still hides its tag") {
    const std::string prompt = "Reply with " + tag + " when done.";
    std::string output = prompt + "\n";
    for (int i = 0; i < 10000; ++i)
        output += "line " + std::to_string(i) + " of a long build log\n";
    const auto r = run(format::text, output, 4096, {}, prompt);
    CHECK(r.summary.final_answer.size() <= (256 << 10) + 1);
    CHECK(r.summary.final_answer.ends_with("line 9999 of a long build log\n"));
    CHECK_FALSE(contains(r.summary.final_answer, tag));
}

TEST_CASE("text: a flood read in one block has the answer it has read in small pieces") {
    const std::string prompt = "Reply with " + tag + " when done.";
    std::string log;
    for (int i = 0; i < 40000; ++i) log += "line " + std::to_string(i) + " of a long build log\n";
    const std::string echo = prompt + "\n";
    // An echo before the flood, one at its very end, one across the start of the last 256 KiB
    // (where a block's kept end would begin without room for an echo), and none.
    const std::size_t near_keep = log.size() - (256 << 10) + echo.size() / 2;
    for (const std::string& output :
         {echo + log + tag + "\n", log + echo + "after\n",
          log.substr(0, near_keep) + echo + log.substr(near_keep), log + tag + "\n"}) {
        const auto whole =
            run(format::text, output, std::numeric_limits<std::size_t>::max(), {}, prompt);
        const auto pieces = run(format::text, output, 4096, {}, prompt);
        CHECK(whole.summary.final_answer == pieces.summary.final_answer);
        CHECK(whole.summary.final_answer.size() <= (256 << 10) + 1);
    }
}

TEST_CASE("text: a rate limit on stderr or at the end of stdout is the failure hint") {
    const auto on_stderr =
        run(format::text, "thinking\n", std::numeric_limits<std::size_t>::max(),
            "debug: starting\nError: 429 Too Many Requests, retry after 30s\nbye\n");
    CHECK(on_stderr.summary.failure == failure_hint::rate_limit);
    CHECK(on_stderr.summary.error == "Error: 429 Too Many Requests, retry after 30s");
    CHECK(on_stderr.summary.resets_at_ms > ralph::text::now_ms());

    const auto on_stdout = run(format::text, "litellm.AuthenticationError: invalid x-api-key\n");
    CHECK(on_stdout.summary.failure == failure_hint::auth);
    CHECK(run(format::text, "all fine\n").summary.failure == failure_hint::none);
}

// ---------------------------------------------------------------------------------------------
// classify_error_text, render, names

TEST_CASE("classify: keywords give the failure class, rate limits first") {
    const std::pair<std::string, failure_hint> cases[] = {
        {"API Error: Request rejected (429) · Rate limited", failure_hint::rate_limit},
        {"Claude AI usage limit reached|1763830800", failure_hint::rate_limit},
        {"You've hit your limit · resets 3pm", failure_hint::rate_limit},
        {"RESOURCE_EXHAUSTED: quota exceeded", failure_hint::rate_limit},
        {"litellm.RateLimitError: too many requests", failure_hint::rate_limit},
        {"503 Service Unavailable, rate limit", failure_hint::rate_limit},
        {"Invalid API key · Please run /login", failure_hint::auth},
        {"HTTP 401 Unauthorized", failure_hint::auth},
        {"Credit balance is too low", failure_hint::auth},
        {"Error: 403", failure_hint::auth},
        {"Invalid auth method selected.", failure_hint::auth},
        {"Missing environment variable: `MYGATEWAY_KEY`.", failure_hint::config},
        {"Model azure/gpt-4o: Missing these environment variables:", failure_hint::config},
        {"unexpected status 404: The model `gpt-9` does not exist or you do not have access to it.",
         failure_hint::config},
        {"There's an issue with the selected model (claude-x). It may not exist or you may not "
         "have access to it.",
         failure_hint::config},
        {"API Error: 404 {\"type\":\"error\",\"error\":{\"type\":\"not_found_error\"}}",
         failure_hint::config},
        {"ProviderModelNotFoundError: gw/nope", failure_hint::config},
        {"models/gemini-9 is not found for API version v1beta", failure_hint::config},
        {"429 Too Many Requests: model_not_found", failure_hint::rate_limit},
        {"API Error: 529 {\"type\":\"overloaded_error\"}", failure_hint::transient},
        {"{\"code\":500,\"message\":\"Internal\"}", failure_hint::transient},
        {"connect ECONNREFUSED 127.0.0.1:443", failure_hint::transient},
        {"Request timed out.", failure_hint::transient},
        {"TypeError: fetch failed", failure_hint::transient},
        {"socket hang up", failure_hint::transient},
        {"request 15003 failed with code 4290 after 1.500 s", failure_hint::none},
        {"error id e500x", failure_hint::none},
        {"Context limit reached", failure_hint::none},
        {"", failure_hint::none},
    };
    // Not a structured binding: CAPTURE refers to it from a lambda, which Clang 14 refuses.
    for (const auto& test_case : cases) {
        const std::string& text = test_case.first;
        CAPTURE(text);
        std::int64_t resets_at_ms = 0;
        CHECK(as::classify_error_text(text, 1'000'000, resets_at_ms) == test_case.second);
    }
}

TEST_CASE("classify: stated reset times are extracted, relative ones from now") {
    const std::int64_t now = 1'795'400'000'000;
    auto reset = [&](std::string_view text) {
        std::int64_t resets_at_ms = -1;
        as::classify_error_text(text, now, resets_at_ms);
        return resets_at_ms;
    };
    CHECK(reset(R"({"resetsAt": 1795406400, "status": "rejected"})") == 1'795'406'400'000);
    CHECK(reset("Claude AI usage limit reached|1795406400") == 1'795'406'400'000);
    CHECK(reset("limit hit, resets at 2026-11-23T04:00:00Z") == 1'795'406'400'000);
    CHECK(reset("limit hit, resets at 2026-11-23T05:00:00.250+01:00") == 1'795'406'400'250);
    CHECK(reset("quota reset at 2026-11-23 04:00") == 1'795'406'400'000);
    CHECK(reset("Rate limited. Try again in 5 minutes.") == now + 300'000);
    CHECK(reset("Please try again in 1m30s") == now + 90'000);
    CHECK(reset("Please try again in 6.5s") == now + 6'500);
    CHECK(reset("429, retry after 30") == now + 30'000);
    CHECK(reset("Retry-After: 120") == now + 120'000);
    CHECK(reset("try again in 2 hours") == now + 7'200'000);
    CHECK(reset("try again in a moment") == -1);  // untouched
    CHECK(reset("resets at noon") == -1);
    CHECK(reset("resets at 2026-13-45T99:00:00Z") == -1);
}

TEST_CASE("render: one line per event worth showing") {
    auto e = [](event_kind kind, std::string text, std::string tool = {}) {
        as::event ev;
        ev.kind = kind;
        ev.text = std::move(text);
        ev.tool = std::move(tool);
        return ev;
    };
    CHECK(as::render(e(event_kind::text, "hello\nworld")) == "hello\nworld");
    CHECK(as::render(e(event_kind::tool_use, "ralph-progress.txt", "Write")) ==
          "● Write ralph-progress.txt");
    CHECK(as::render(e(event_kind::tool_use, "", "TodoWrite")) == "● TodoWrite");
    CHECK(as::render(e(event_kind::tool_result, "File created")) == "  └ File created");
    CHECK(as::render(e(event_kind::tool_result, "line 1\nline 2")) == "  └ line 1…");
    CHECK(as::render(e(event_kind::tool_result, "\n\nline 1\n\n")) == "  └ line 1");
    CHECK(as::render(e(event_kind::tool_result, std::string(300, 'a'))) ==
          "  └ " + std::string(120, 'a') + "…");
    CHECK(as::render(e(event_kind::error, "API Error: 429\nslow down")) ==
          "✗ API Error: 429 slow down");
    CHECK(as::render(e(event_kind::rate_limit, "limit")) == "✗ rate limit hit");
    CHECK(as::render(e(event_kind::raw, "not json")) == "not json");
    CHECK(as::render(e(event_kind::final_answer, "done")).empty());
    CHECK(as::render(e(event_kind::usage, "")).empty());
    CHECK(as::render(e(event_kind::system, "session x")).empty());

    // render_lines: the shown ones, each ending in one newline.
    CHECK(as::render_lines({e(event_kind::system, "session x"), e(event_kind::text, "hi"),
                            e(event_kind::tool_use, "a.txt", "Write"),
                            e(event_kind::usage, "1 token"), e(event_kind::raw, "line\n")}) ==
          "hi\n● Write a.txt\nline\n");
    CHECK(as::render_lines({}).empty());
}

TEST_CASE("names: formats round-trip through their names, an unknown name is an error") {
    for (format value :
         {format::text, format::claude, format::codex, format::opencode, format::gemini})
        CHECK(as::format_from_string(as::to_string(value)) == value);
    CHECK_THROWS_AS(as::format_from_string("aider"), std::invalid_argument);
    CHECK(as::to_string(failure_hint::rate_limit) == "rate_limit");
    CHECK(as::to_string(event_kind::final_answer) == "final_answer");
}

TEST_CASE("parsers: a tool call waiting for its result is known until the result comes") {
    struct step {
        format fmt;
        std::string call;
        std::string result;
    };
    const std::vector<step> steps{
        {format::claude,
         R"({"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sleep 600"}}]}})",
         R"({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}})"},
        {format::codex,
         R"({"type":"item.started","item":{"id":"i1","type":"command_execution","command":"sleep 600","status":"in_progress"}})",
         R"({"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"sleep 600","aggregated_output":"","exit_code":0,"status":"completed"}})"},
        {format::opencode,
         R"({"type":"tool_use","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"running","input":{"command":"sleep 600"}}}})",
         R"({"type":"tool_use","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"sleep 600"},"output":""}}})"},
        {format::gemini,
         R"({"type":"tool_use","tool_name":"run_shell_command","tool_id":"g1","parameters":{"command":"sleep 600"}})",
         R"({"type":"tool_result","tool_id":"g1","status":"success","output":""})"},
    };
    for (const auto& s : steps) {
        CAPTURE(as::to_string(s.fmt));
        auto p = as::make_parser(s.fmt);
        std::vector<as::event> out;
        CHECK_FALSE(p->awaiting_tool_result());
        p->feed(s.call + "\n", out);
        CHECK(p->awaiting_tool_result());
        p->feed(s.result + "\n", out);
        CHECK_FALSE(p->awaiting_tool_result());
    }
    CHECK_FALSE(as::make_parser(format::text)->awaiting_tool_result());
}

TEST_CASE("output_renderer: each attempt's bytes are rendered by the format they come with") {
    as::output_renderer renderer;
    // A claude attempt whose last line has no newline, then a codex attempt: the claude line is
    // rendered before the codex one, and codex's JSON lines are not taken for claude's.
    const std::string claude_line =
        R"({"type":"assistant","message":{"content":[{"type":"text","text":"claude says"}]}})";
    std::string shown = renderer.render(claude_line, "claude");
    CHECK(shown.empty());
    shown += renderer.render(R"({"type":"item.completed","item":{"id":"i","type":"agent_message",)"
                             R"("text":"codex says"}})"
                             "\n",
                             "codex");
    CHECK(shown == "claude says\ncodex says\n");
    // Text is passed on as it is, a format this client does not know is shown as text.
    CHECK(renderer.render("plain\npartial", "text") == "plain\npartial");
    CHECK(renderer.render(" and more\n", "a-newer-format") == " and more\n");
    CHECK(renderer.finish().empty());
    // finish() renders what the parser still held.
    CHECK(renderer.render(claude_line, "claude").empty());
    CHECK(renderer.finish() == "claude says\n");
}

TEST_CASE("output_renderer: a line is drawn where each attempt's section begins") {
    as::output_renderer renderer;
    CHECK(renderer.render("first\n", "text", "iteration 1") == "── iteration 1 ──\nfirst\n");
    CHECK(renderer.render("more\n", "text", "iteration 1") == "more\n");
    // A section that ends inside a line: the line is ended before the next one is drawn.
    CHECK(renderer.render("no newline", "text", "iteration 1") == "no newline");
    CHECK(renderer.render("again\n", "text", "iteration 1 · attempt 2") ==
          "\n── iteration 1 · attempt 2 ──\nagain\n");
    // A structured attempt's held line is rendered before the line, and the next attempt of the
    // same format is parsed afresh (a cut line of the first does not swallow the second's).
    const std::string claude_line =
        R"({"type":"assistant","message":{"content":[{"type":"text","text":"claude says"}]}})";
    CHECK(renderer.render(claude_line, "claude", "iteration 2") == "── iteration 2 ──\n");
    CHECK(renderer.render(claude_line + "\n", "claude", "iteration 2 · judge") ==
          "claude says\n── iteration 2 · judge ──\nclaude says\n");
    // No section (a ralphd that does not say): nothing is drawn.
    CHECK(renderer.render("plain\n", "text") == "plain\n");
}
