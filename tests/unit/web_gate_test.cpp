// The web gate's rules on requests built here (server/web_gate): the Host forms it takes and
// refuses, the Origin rule, where the token may come from, and the token file.
#include "daemon/server/web_gate.hpp"

#include "tests/support/files.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

namespace http = boost::beast::http;
using ralph::web_gate;

namespace {

ralph::http_request request(http::verb verb, const std::string& target, const std::string& host) {
    ralph::http_request req{verb, target, 11};
    req.set(http::field::host, host);
    return req;
}

int status_of(web_gate& gate, const ralph::http_request& req) {
    const auto verdict = gate.check(req, "192.0.2.7", web_gate::clock::now());
    return verdict.answer ? int(verdict.answer->result_int()) : 0;  // 0: served
}

}  // namespace

TEST_CASE("web gate: Host must name this server with its port") {
    ralph::test::temp_dir dir;
    web_gate gate(dir.path / "web-token", 7177);
    const std::string bearer = "Bearer " + gate.token();
    auto with_host = [&](const std::string& host) {
        auto req = request(http::verb::post, "/rpc", host);
        req.set(http::field::authorization, bearer);
        return status_of(gate, req);
    };
    CHECK(with_host("127.0.0.1:7177") == 0);
    CHECK(with_host("[::1]:7177") == 0);
    CHECK(with_host("LOCALHOST:7177") == 0);
    CHECK(with_host("10.1.2.3:7177") == 0);  // an address cannot be rebound
    CHECK(with_host("evil.example:7177") == 403);
    CHECK(with_host("127.0.0.1") == 403);  // no port: 80 is not ours
    CHECK(with_host("127.0.0.1:71770") == 403);
    CHECK(with_host("[::1:7177") == 403);
    CHECK(with_host("") == 403);
}

TEST_CASE("web gate: Origin, credentials and the login") {
    ralph::test::temp_dir dir;
    web_gate gate(dir.path / "web-token", 80);
    auto post = request(http::verb::post, "/rpc", "localhost:80");
    CHECK(status_of(gate, post) == 401);
    post.set(http::field::cookie, "a=b; ralph_token=" + gate.token() + "; c=d");
    CHECK(status_of(gate, post) == 0);
    post.set(http::field::origin, "http://LOCALHOST:80");
    CHECK(status_of(gate, post) == 0);
    post.set(http::field::origin, "http://localhost:80.evil.example");
    CHECK(status_of(gate, post) == 403);
    post.set(http::field::origin, "null");
    CHECK(status_of(gate, post) == 403);
    // A GET with another Origin changes nothing: it is only refused without the token.
    auto get = request(http::verb::get, "/rpc", "localhost:80");
    get.set(http::field::origin, "http://evil.example");
    CHECK(status_of(gate, get) == 401);
    auto login = request(http::verb::get, "/login?x=1&token=" + gate.token(), "localhost:80");
    const auto verdict = gate.check(login, "192.0.2.7", web_gate::clock::now());
    REQUIRE(verdict.answer);
    CHECK(verdict.answer->result() == http::status::see_other);
    CHECK((*verdict.answer)[http::field::location] == "/");
    // A token in the query opens the login only, not the API.
    auto query = request(http::verb::post, "/rpc?token=" + gate.token(), "localhost:80");
    CHECK(status_of(gate, query) == 401);
}

TEST_CASE("web gate: the token file is kept, made when missing or damaged, and rotated") {
    ralph::test::temp_dir dir;
    const auto file = dir.path / "web-token";
    std::string first;
    {
        web_gate gate(file, 1);
        first = gate.token();
    }
    CHECK(web_gate(file, 1).token() == first);
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    ralph::test::write_file(file, "short\n");
    web_gate gate(file, 1);
    CHECK(gate.token().size() == 64);
    CHECK(gate.token() != first);
    const std::string before = gate.token();
    gate.rotate();
    CHECK(gate.token() != before);
    CHECK(ralph::test::read_file(file) == gate.token() + "\n");
}

TEST_CASE("web gate: no token without a listener, or when none can be written: all refused") {
    ralph::test::temp_dir dir;
    web_gate idle(dir.path / "web-token", 0);
    CHECK(idle.token().empty());
    CHECK_FALSE(std::filesystem::exists(dir.path / "web-token"));
    web_gate full_disk(dir.path / "no-such-directory" / "web-token", 80);  // no throw
    CHECK(full_disk.token().empty());
    auto req = request(http::verb::post, "/rpc", "localhost:80");
    req.set(http::field::authorization, "Bearer ");
    CHECK(status_of(full_disk, req) == 401);
    req.set(http::field::cookie, "ralph_token=");
    req.erase(http::field::authorization);
    CHECK(status_of(full_disk, req) == 401);
    CHECK(status_of(full_disk, request(http::verb::get, "/login?token=", "localhost:80")) == 401);
    CHECK_THROWS_AS(full_disk.rotate(), std::runtime_error);
}

TEST_CASE("web gate: more than 10 failures a minute from an address slow its logins down") {
    ralph::test::temp_dir dir;
    web_gate gate(dir.path / "web-token", 80);
    auto wrong = request(http::verb::get, "/login?token=" + std::string(64, '0'), "localhost:80");
    const auto start = web_gate::clock::now();
    for (int i = 0; i < 10; ++i) CHECK(gate.check(wrong, "a", start).delay.count() == 0);
    CHECK(gate.check(wrong, "a", start).delay == std::chrono::seconds(1));
    CHECK(gate.check(wrong, "a", start).delay == std::chrono::seconds(2));
    CHECK(gate.check(wrong, "b", start).delay.count() == 0);  // another address
    // A minute later the count starts over.
    CHECK(gate.check(wrong, "a", start + std::chrono::seconds(61)).delay.count() == 0);
    for (int i = 0; i < 20; ++i) gate.check(wrong, "c", start);
    CHECK(gate.check(wrong, "c", start).delay == web_gate::max_delay);
}

TEST_CASE("web gate: the right token is never slowed; every loopback address is one source") {
    ralph::test::temp_dir dir;
    web_gate gate(dir.path / "web-token", 80);
    auto wrong = request(http::verb::get, "/login?token=" + std::string(64, '0'), "localhost:80");
    auto right = request(http::verb::post, "/rpc", "localhost:80");
    right.set(http::field::authorization, "Bearer " + gate.token());
    const auto now = web_gate::clock::now();
    for (int i = 0; i < 10; ++i) gate.check(wrong, "127.0.0.1", now);
    CHECK(gate.check(wrong, "127.0.0.2", now).delay == std::chrono::seconds(1));
    CHECK(gate.check(wrong, "::1", now).delay == std::chrono::seconds(2));
    CHECK(gate.check(wrong, "::ffff:127.1.2.3", now).delay == std::chrono::seconds(3));
    const auto served = gate.check(right, "127.0.0.1", now);
    CHECK_FALSE(served.answer);
    CHECK(served.delay.count() == 0);
    // A request without a credential is refused, not slowed.
    CHECK(gate.check(request(http::verb::get, "/", "localhost:80"), "127.0.0.1", now).delay ==
          web_gate::clock::duration::zero());
    // An IPv6 host is its /64; another /64 is another source.
    for (int i = 0; i < 10; ++i) gate.check(wrong, "2001:db8:0:1::" + std::to_string(i + 1), now);
    CHECK(gate.check(wrong, "2001:db8:0:1:ffff::1", now).delay == std::chrono::seconds(1));
    CHECK(gate.check(wrong, "2001:db8:0:2::1", now).delay.count() == 0);
}

TEST_CASE("web gate: the failures of many sources are bounded and keep the busiest guessers") {
    ralph::test::temp_dir dir;
    web_gate gate(dir.path / "web-token", 80);
    auto wrong = request(http::verb::get, "/login?token=" + std::string(64, '0'), "localhost:80");
    const auto start = web_gate::clock::now();
    for (int i = 0; i < 11; ++i) gate.check(wrong, "198.51.100.1", start + std::chrono::seconds(1));
    // 5000 other sources, one failure each, before and after: the table stays bounded, and the
    // guesser whose failures are the latest is still known.
    for (int i = 0; i < 5000; ++i)
        gate.check(wrong, "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250), start);
    CHECK(gate.check(wrong, "198.51.100.1", start + std::chrono::seconds(2)).delay ==
          std::chrono::seconds(2));
}

TEST_CASE("web gate: a login code logs in once, within a minute, and never opens the API") {
    ralph::test::temp_dir dir;
    web_gate gate(dir.path / "web-token", 80);
    const auto now = web_gate::clock::now();
    auto login = [&](const std::string& code, web_gate::clock::time_point at) {
        const auto verdict =
            gate.check(request(http::verb::get, "/login?code=" + code, "localhost:80"), "a", at);
        return verdict.answer ? int(verdict.answer->result_int()) : 0;
    };
    const std::string code = gate.login_code(now);
    CHECK(code.size() == 32);
    CHECK(code.find(gate.token()) == std::string::npos);
    auto api = request(http::verb::post, "/rpc", "localhost:80");
    api.set(http::field::authorization, "Bearer " + code);
    CHECK(status_of(gate, api) == 401);
    const auto first =
        gate.check(request(http::verb::get, "/login?code=" + code, "localhost:80"), "a", now);
    REQUIRE(first.answer);
    CHECK(first.answer->result() == http::status::see_other);
    CHECK(
        (*first.answer)[http::field::set_cookie].starts_with("ralph_token=" + gate.token() + ";"));
    CHECK(login(code, now) == 401);  // spent
    const std::string late = gate.login_code(now);
    CHECK(login(late, now + web_gate::login_code_lifetime + std::chrono::seconds(1)) == 401);
    const std::string in_time = gate.login_code(now);
    CHECK(login(in_time, now + web_gate::login_code_lifetime - std::chrono::seconds(1)) == 303);
    // Rotating the token ends the codes made for the old one's holder.
    const std::string before_rotation = gate.login_code(now);
    gate.rotate();
    CHECK(login(before_rotation, now) == 401);
    // Only a few codes are good at once: the oldest goes first.
    const std::string oldest = gate.login_code(now);
    for (int i = 0; i < 8; ++i) gate.login_code(now + std::chrono::seconds(1));
    CHECK(login(oldest, now + std::chrono::seconds(2)) == 401);
}
