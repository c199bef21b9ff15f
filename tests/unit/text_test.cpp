#include "common/text.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <ctime>

using ralph::text::split_command_words;
using words = std::vector<std::string>;

TEST_CASE("split: plain words are separated by any run of blanks") {
    CHECK(split_command_words("prog  --flag\tvalue\n") == words{"prog", "--flag", "value"});
    CHECK(split_command_words("") == words{});
    CHECK(split_command_words("   ") == words{});
}

TEST_CASE("split: single quotes keep everything literally, including $ and backslashes") {
    CHECK(split_command_words("echo 'a b' '$(rm -rf /)' 'x\\y'") ==
          words{"echo", "a b", "$(rm -rf /)", "x\\y"});
}

TEST_CASE("split: double quotes allow the shell's four escapes and nothing else") {
    CHECK(split_command_words(R"(say "a \"b\" \\ \$HOME \n")") ==
          words{"say", R"(a "b" \ $HOME \n)"});
}

TEST_CASE("split: quoted parts join with adjacent text into one word") {
    CHECK(split_command_words(R"(--prompt-file='{prompt_file}'x "" '')") ==
          words{"--prompt-file={prompt_file}x", "", ""});
}

TEST_CASE("split: a backslash escapes the next character outside quotes") {
    CHECK(split_command_words(R"(a\ b c\"d)") == words{"a b", "c\"d"});
}

TEST_CASE("split: an unterminated quote is an error, not a guess") {
    CHECK_THROWS_AS(split_command_words("echo 'abc"), std::invalid_argument);
    CHECK_THROWS_AS(split_command_words("echo \"abc"), std::invalid_argument);
}

TEST_CASE("quote: a word comes back whole from the split, plain words stay as they are") {
    using ralph::text::shell_quote;
    CHECK(shell_quote("/usr/bin/make") == "/usr/bin/make");
    CHECK(shell_quote("--name=a,b:c@d%e+f") == "--name=a,b:c@d%e+f");
    CHECK(shell_quote("two words") == "'two words'");
    CHECK(shell_quote("") == "''");
    const words hard{"it's", "a \"b\" \\", "$(rm -rf /)", "tab\tand\nnewline", "''", "*"};
    std::string line;
    for (const std::string& word : hard) line += shell_quote(word) + " ";
    CHECK(split_command_words(line) == hard);
}

TEST_CASE("lines: the first line is the first that is not blank, without its leading blanks") {
    using ralph::text::first_line;
    CHECK(first_line("claude 2.1.3 (Claude Code)\nmore") == "claude 2.1.3 (Claude Code)");
    CHECK(first_line("\n  \r\n\t  codex-cli 0.46.0 \r\nsecond") == "codex-cli 0.46.0 ");
    CHECK(first_line("only line") == "only line");
    CHECK(first_line(" \t\r\n\n") == "");
    CHECK(first_line("") == "");
}

TEST_CASE("base64: round-trips every byte value and every padding length") {
    std::string all;
    for (int i = 0; i < 256; ++i) all.push_back(char(i));
    for (std::size_t n = 0; n < 8; ++n) {
        std::string part = all.substr(0, n);
        CHECK(ralph::text::base64_decode(ralph::text::base64_encode(part)) == part);
    }
    CHECK(ralph::text::base64_decode(ralph::text::base64_encode(all)) == all);
    CHECK(ralph::text::base64_encode("foobar") == "Zm9vYmFy");
    CHECK(ralph::text::base64_encode("fo") == "Zm8=");
    CHECK_THROWS_AS(ralph::text::base64_decode("Zm9v!"), std::invalid_argument);
}

TEST_CASE("utf8: invalid sequences become U+FFFD and valid text is untouched") {
    CHECK(ralph::text::to_valid_utf8("héllo ✓") == "héllo ✓");
    CHECK(ralph::text::to_valid_utf8("a\xff"
                                     "b") ==
          "a\xEF\xBF\xBD"
          "b");
    CHECK(ralph::text::to_valid_utf8("\xE2\x9C") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // truncated
    CHECK(ralph::text::to_valid_utf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
}

TEST_CASE("durations: plain seconds and s/m/h/d units; garbage is refused") {
    CHECK(ralph::text::parse_duration_seconds("90") == 90);
    CHECK(ralph::text::parse_duration_seconds("1.5s") == 1.5);
    CHECK(ralph::text::parse_duration_seconds("15m") == 900);
    CHECK(ralph::text::parse_duration_seconds("2h") == 7200);
    CHECK(ralph::text::parse_duration_seconds("1d") == 86400);
    CHECK_THROWS_AS(ralph::text::parse_duration_seconds("soon"), std::invalid_argument);
    CHECK_THROWS_AS(ralph::text::parse_duration_seconds("5 parsecs"), std::invalid_argument);
    CHECK_THROWS_AS(ralph::text::parse_duration_seconds("-3"), std::invalid_argument);
    CHECK_THROWS_AS(ralph::text::parse_duration_seconds("1e3"), std::invalid_argument);
    CHECK_THROWS_AS(ralph::text::parse_duration_seconds(""), std::invalid_argument);
}

TEST_CASE("durations: combined units and words, the one scanner the agents' reset times use too") {
    CHECK(ralph::text::parse_duration_seconds("2h30m") == 9000);
    CHECK(ralph::text::parse_duration_seconds("1m2.5s") == 62.5);
    CHECK(ralph::text::parse_duration_seconds("5 minutes") == 300);
    CHECK(ralph::text::parse_duration_seconds("1H") == 3600);
    CHECK(ralph::text::parse_duration_seconds("250ms") == 0.25);
    CHECK_THROWS_WITH(ralph::text::parse_duration_seconds("99999999999999d"),
                      doctest::Contains("too long"));
    CHECK_THROWS_WITH(ralph::text::parse_duration_seconds(std::string(400, '9')),
                      doctest::Contains("too long"));
    std::size_t pos = 13;
    CHECK(ralph::text::scan_duration("try again in 20 seconds.", pos) == 20);
    CHECK(pos == 23);
    pos = 0;
    CHECK_FALSE(ralph::text::scan_duration("soon", pos));
    CHECK(pos == 0);
}

TEST_CASE("time: ISO 8601 in UTC with milliseconds") {
    CHECK(ralph::text::format_iso8601(0) == "");
    CHECK(ralph::text::format_iso8601(1795000000123) == "2026-11-18T11:06:40.123Z");
}

TEST_CASE("utf8: a complete prefix never ends inside a multi-byte character") {
    using ralph::text::utf8_complete_prefix;
    CHECK(utf8_complete_prefix("abc") == 3);
    CHECK(utf8_complete_prefix("a\xE2\x9C\x93") == 4);  // "a✓" complete
    CHECK(utf8_complete_prefix("a\xE2\x9C") == 1);      // cut inside ✓
    CHECK(utf8_complete_prefix("a\xF0\x9F\x98") == 1);  // cut inside a 4-byte emoji
    CHECK(utf8_complete_prefix("\xC3") == 0);
    CHECK(utf8_complete_prefix("") == 0);
    using ralph::text::utf8_head;
    CHECK(utf8_head("a\xE2\x9C\x93z", 10) == "a\xE2\x9C\x93z");  // short enough: whole
    CHECK(utf8_head("a\xE2\x9C\x93z", 4) == "a\xE2\x9C\x93");
    CHECK(utf8_head("a\xE2\x9C\x93z", 3) == "a");  // never inside ✓
    CHECK(utf8_head("abc", 0).empty());
}

TEST_CASE("time: ISO 8601 is parsed with or without seconds, fraction and zone") {
    using ralph::text::parse_iso8601;
    CHECK(parse_iso8601("2026-11-18T11:06:40.123Z") == 1795000000123);
    CHECK(parse_iso8601(ralph::text::format_iso8601(1795000000123)) == 1795000000123);
    CHECK(parse_iso8601("2026-11-18T11:06:40Z") == 1795000000000);
    CHECK(parse_iso8601("2026-11-18t11:06:40.1z") == 1795000000100);
    CHECK(parse_iso8601("2026-11-18T11:06:40.123456Z") == 1795000000123);
    CHECK(parse_iso8601("2026-11-18T11:06Z") == 1795000000000 - 40000);
    CHECK(parse_iso8601("2026-11-18T13:06:40+02:00") == 1795000000000);
    CHECK(parse_iso8601("2026-11-18 09:36:40-0130") == 1795000000000);
    CHECK(parse_iso8601("2026-11-18T12:06:40+01") == 1795000000000);
    CHECK(parse_iso8601("1970-01-01Z") == 0);
    CHECK_THROWS_AS(parse_iso8601("2026-11-18T"), std::invalid_argument);
    CHECK_THROWS_AS(parse_iso8601("2026-02-30"), std::invalid_argument);
    CHECK_THROWS_AS(parse_iso8601("2026-11-18T24:00Z"), std::invalid_argument);
}

TEST_CASE("time: an ISO 8601 time is scanned inside text; without a zone it is local or UTC") {
    const std::string said = "limit reached, resets at 2026-11-18 11:06:40 (UTC).";
    std::size_t pos = said.find("2026");
    const auto t = ralph::text::scan_iso8601(said, pos);
    REQUIRE(t);
    CHECK(t->has_time);
    CHECK_FALSE(t->offset_minutes);
    CHECK(said.substr(pos, 2) == " (");
    CHECK(ralph::text::iso8601_epoch_ms(*t, false) == 1795000000000);
    pos = 0;
    CHECK_FALSE(ralph::text::scan_iso8601(said, pos));
}

TEST_CASE("time: an API time that is missing or not a time reads as 0") {
    using ralph::text::parse_iso8601_or_zero;
    CHECK(parse_iso8601_or_zero("2026-11-18T11:06:40.123Z") == 1795000000123);
    CHECK(parse_iso8601_or_zero("") == 0);
    CHECK(parse_iso8601_or_zero("yesterday") == 0);
    CHECK(parse_iso8601_or_zero("2026-13-01T00:00:00Z") == 0);
}

TEST_CASE("time: an ISO 8601 time without a zone is local time") {
    const char* saved = std::getenv("TZ");
    const std::string old = saved ? saved : "";
    // Central European rules, written out so that no time zone database is needed.
    ::setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
    ::tzset();
    CHECK(ralph::text::parse_iso8601("2026-11-18T12:06:40") == 1795000000000);  // winter: +1
    CHECK(ralph::text::parse_iso8601("2026-07-01T02:00") == 1782864000000);     // summer: +2
    CHECK(ralph::text::parse_iso8601("2026-11-18") == 1794956400000);           // local midnight
    if (saved)
        ::setenv("TZ", old.c_str(), 1);
    else
        ::unsetenv("TZ");
    ::tzset();
}

TEST_CASE("time: malformed or impossible ISO 8601 times are refused") {
    using ralph::text::parse_iso8601;
    for (const char* bad : {"", "2026", "2026-11", "2026-11-18T", "2026-11-18T11",
                            "2026-11-18T11:6", "2026-13-01", "2026-02-30", "2026-11-18T24:00",
                            "2026-11-18T11:60", "2026-11-18T11:06:40.", "2026-11-18T11:06:40Q",
                            "2026-11-18T11:06+25:00", "2026-11-18T11:06:40Z junk", "yesterday"})
        CHECK_THROWS_AS(parse_iso8601(bad), std::invalid_argument);
}

TEST_CASE("time: a point in time is an age before now or an ISO 8601 time") {
    using ralph::text::parse_time_or_age;
    const std::int64_t now = 1795000000123;
    CHECK(parse_time_or_age("30m", now) == now - 30 * 60 * 1000);
    CHECK(parse_time_or_age("8h", now) == now - 8 * 3600 * 1000);
    CHECK(parse_time_or_age("2d", now) == now - 2 * 86400 * 1000);
    CHECK(parse_time_or_age("90", now) == now - 90 * 1000);
    CHECK(parse_time_or_age("0s", now) == now);
    CHECK(parse_time_or_age("2026-11-18T11:06:40Z", now) == 1795000000000);
    CHECK_THROWS_WITH_AS(parse_time_or_age("last tuesday", now),
                         doctest::Contains("give an age (30m, 8h, 2d) or an ISO 8601 time"),
                         std::invalid_argument);
    CHECK_THROWS_AS(parse_time_or_age("-2h", now), std::invalid_argument);
}

TEST_CASE("ascii_lower: A-Z only, whatever the bytes around them") {
    CHECK(ralph::text::ascii_lower("LocalHost:7177") == "localhost:7177");
    CHECK(ralph::text::ascii_lower("ÉTÉ") == "Ét\xc3\x89");
}

TEST_CASE("parameter_value: a query string's or a cookie's pair by name") {
    using ralph::text::parameter_value;
    CHECK(parameter_value("a=1&token=xyz&b=2", "token", '&') == "xyz");
    CHECK(parameter_value("tokens=1&token=", "token", '&') == "");
    CHECK(parameter_value("x_token=1", "token", '&') == "");
    CHECK(parameter_value("a=b;  ralph_token=t; c=d", "ralph_token", ';') == "t");
    CHECK(parameter_value("token", "token", '&') == "");
    CHECK(parameter_value("", "token", '&') == "");
}

TEST_CASE("text: the character classes and case are ASCII's, whatever the byte") {
    namespace text = ralph::text;
    for (int i = 0; i < 256; ++i) {
        const char c = char(i);
        const bool ascii_digit = i >= '0' && i <= '9';
        const bool ascii_letter = (i >= 'a' && i <= 'z') || (i >= 'A' && i <= 'Z');
        CAPTURE(i);
        CHECK(text::is_digit(c) == ascii_digit);
        CHECK(text::is_alnum(c) == (ascii_digit || ascii_letter));
        CHECK(text::is_blank(c) == (i == ' ' || i == '\t'));
        CHECK(text::is_space(c) == (text::whitespace.find(c) != std::string_view::npos));
        CHECK(text::ascii_lower(c) == (i >= 'A' && i <= 'Z' ? char(i + 32) : c));
    }
}
