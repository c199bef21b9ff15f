// common/enum_names.hpp: name_of, find_value, parse and names_in_order over a table; and the
// names of the API's and the database's enums, which must never change.
#include "common/enum_names.hpp"

#include "common/agent_stream/agent_stream.hpp"
#include "proto/state_machine.hpp"
#include "proto/types.hpp"

#include <doctest/doctest.h>

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using ralph::enum_name;

enum class colour { red, green, blue };

constexpr std::array<enum_name<colour>, 4> colour_names{{
    {colour::red, "red"},
    {colour::green, "green"},
    {colour::blue, "blue"},
    {colour::blue, "azure"},  // an alias: read, never written
}};

// A table with more columns than the value and its name, as proto's summary columns.
struct column {
    colour value;
    std::string_view name;
    int width;
};
constexpr std::array<column, 3> columns{{
    {colour::red, "red", 3},
    {colour::green, "green", 5},
    {colour::blue, "", 0},
}};

}  // namespace

TEST_CASE("enum names: name_of gives a value's first name, and works at compile time") {
    static_assert(ralph::name_of(colour_names, colour::green) == "green");
    CHECK(ralph::name_of(colour_names, colour::red) == "red");
    CHECK(ralph::name_of(colour_names, colour::blue) == "blue");
    CHECK(ralph::name_of(columns, colour::green) == "green");
    constexpr std::array<enum_name<colour>, 1> partial{{{colour::red, "red"}}};
    CHECK(ralph::name_of(partial, colour::blue).empty());
}

TEST_CASE("enum names: find_value reads every name and alias, and nothing else") {
    CHECK(ralph::find_value(colour_names, "red") == colour::red);
    CHECK(ralph::find_value(colour_names, "azure") == colour::blue);
    CHECK(ralph::find_value(columns, "") == colour::blue);
    CHECK_FALSE(ralph::find_value(colour_names, "Red").has_value());
    CHECK_FALSE(ralph::find_value(colour_names, "").has_value());
    CHECK_FALSE(ralph::find_value(colour_names, "red ").has_value());
}

TEST_CASE("enum names: parse refuses an unknown name with the names it takes") {
    CHECK(ralph::parse(colour_names, "blue", "colour") == colour::blue);
    CHECK_THROWS_WITH_AS(ralph::parse(colour_names, "pink", "colour"),
                         "unknown colour 'pink' (use red, green, blue or azure)",
                         std::invalid_argument);
    // An empty name is shown as such.
    CHECK_THROWS_WITH_AS(ralph::parse(columns, "x", "column"),
                         "unknown column 'x' (use red, green or '')", std::invalid_argument);
}

TEST_CASE("enum names: names_in_order holds only for a table of every value, once, in order") {
    static_assert(ralph::names_in_order(columns, colour::blue));
    constexpr std::array<enum_name<colour>, 2> missing{{{colour::red, "r"}, {colour::green, "g"}}};
    constexpr std::array<enum_name<colour>, 3> swapped{
        {{colour::green, "g"}, {colour::red, "r"}, {colour::blue, "b"}}};
    CHECK_FALSE(ralph::names_in_order(missing, colour::blue));
    CHECK_FALSE(ralph::names_in_order(swapped, colour::blue));
    CHECK_FALSE(ralph::names_in_order(colour_names, colour::blue));  // the alias is one too many
}

// The API sends these names and the database stores them: a test that fails here is a
// change of both, never a refactoring.
TEST_CASE("enum names: the API's and the database's names are as they were, and read back") {
    namespace proto = ralph::proto;
    namespace as = ralph::agent_stream;
    auto names = [](auto... values) {
        return std::vector<std::string>{std::string(to_string(values))...};
    };
    using s = proto::loop_state;
    CHECK(names(s::queued, s::running, s::waiting, s::paused, s::completed, s::exhausted, s::failed,
                s::cancelled, s::stalled) ==
          std::vector<std::string>{"queued", "running", "waiting", "paused", "completed",
                                   "exhausted", "failed", "cancelled", "stalled"});
    for (s value : {s::queued, s::paused, s::stalled})
        CHECK(proto::loop_state_from_string(to_string(value)) == value);
    CHECK_THROWS_WITH_AS(proto::loop_state_from_string("bogus"),
                         "unknown loop state 'bogus' (use queued, running, waiting, paused, "
                         "completed, exhausted, failed, cancelled or stalled)",
                         std::invalid_argument);

    using t = proto::termination;
    CHECK(names(t::running, t::exited, t::failed, t::crashed, t::timeout, t::cancelled,
                t::interrupted, t::spawn_failed) ==
          std::vector<std::string>{"running", "exited", "failed", "crashed", "timeout", "cancelled",
                                   "interrupted", "spawn_failed"});
    CHECK(proto::termination_from_string("spawn_failed") == t::spawn_failed);

    using f = proto::failure_class;
    CHECK(names(f::none, f::rate_limit, f::transient, f::auth, f::missing_program, f::timeout,
                f::crash, f::no_verdict) ==
          std::vector<std::string>{"", "rate_limit", "transient", "auth", "missing_program",
                                   "timeout", "crash", "no_verdict"});
    CHECK(proto::failure_class_from_string("") == f::none);
    CHECK(proto::failure_class_from_string("no_verdict") == f::no_verdict);

    CHECK(names(proto::attempt_kind::work, proto::attempt_kind::judge) ==
          std::vector<std::string>{"work", "judge"});

    using e = proto::loop_event;
    CHECK(names(e::start, e::wait, e::wake, e::requeue, e::pause, e::resume, e::complete,
                e::exhaust, e::stall, e::fail, e::cancel, e::retry,
                e::extend) == std::vector<std::string>{"start", "wait", "wake", "requeue", "pause",
                                                       "resume", "complete", "exhaust", "stall",
                                                       "fail", "cancel", "retry", "extend"});

    CHECK(names(as::format::text, as::format::claude, as::format::codex, as::format::opencode,
                as::format::gemini) ==
          std::vector<std::string>{"text", "claude", "codex", "opencode", "gemini"});
    CHECK_THROWS_WITH_AS(
        as::format_from_string("aider"),
        "unknown agent output format 'aider' (use text, claude, codex, opencode or gemini)",
        std::invalid_argument);
    using k = as::event_kind;
    CHECK(names(k::system, k::text, k::tool_use, k::tool_result, k::usage, k::error, k::rate_limit,
                k::final_answer, k::raw) ==
          std::vector<std::string>{"system", "text", "tool_use", "tool_result", "usage", "error",
                                   "rate_limit", "final_answer", "raw"});
    using h = as::failure_hint;
    CHECK(names(h::none, h::rate_limit, h::transient, h::auth) ==
          std::vector<std::string>{"none", "rate_limit", "transient", "auth"});
}
