// The dashboard's files as ralphd serves them (server/web_pages): each path with its type and
// body, HEAD, the ETag's 304, the security headers, and what is not a file.
#include "daemon/server/web_pages.hpp"

#include <doctest/doctest.h>

#include <string>

namespace http = boost::beast::http;

namespace {

ralph::http_request request(http::verb verb, const std::string& target) {
    return ralph::http_request{verb, target, 11};
}

}  // namespace

TEST_CASE("web pages: the page, its script, style and Chart.js, each with its type") {
    const auto page = ralph::answer_page(request(http::verb::get, "/"));
    REQUIRE(page);
    CHECK(page->result() == http::status::ok);
    CHECK((*page)[http::field::content_type] == "text/html; charset=utf-8");
    CHECK(page->body().starts_with("<!doctype html>"));
    CHECK(page->body().find(R"(<script src="/app.js")") != std::string::npos);
    CHECK(!(*page)["Content-Security-Policy"].empty());
    CHECK((*page)[http::field::cache_control] == "no-cache");
    CHECK((*page)[http::field::content_length] == std::to_string(page->body().size()));

    const auto script = ralph::answer_page(request(http::verb::get, "/app.js?v=1"));
    REQUIRE(script);
    CHECK((*script)[http::field::content_type] == "text/javascript; charset=utf-8");
    CHECK(script->body().find("events.subscribe") != std::string::npos);
    const auto chart = ralph::answer_page(request(http::verb::get, "/chart.js"));
    REQUIRE(chart);
    CHECK(chart->body().find("Chart.js v3") != std::string::npos);
    const auto style = ralph::answer_page(request(http::verb::get, "/app.css"));
    REQUIRE(style);
    CHECK((*style)[http::field::content_type] == "text/css; charset=utf-8");
}

TEST_CASE("web pages: HEAD has the length without the body; a known ETag gets 304") {
    const auto got = ralph::answer_page(request(http::verb::get, "/app.js"));
    REQUIRE(got);
    const auto head = ralph::answer_page(request(http::verb::head, "/app.js"));
    REQUIRE(head);
    CHECK(head->body().empty());
    CHECK((*head)[http::field::content_length] == std::to_string(got->body().size()));

    auto again = request(http::verb::get, "/app.js");
    again.set(http::field::if_none_match, (*got)[http::field::etag]);
    const auto unchanged = ralph::answer_page(again);
    REQUIRE(unchanged);
    CHECK(unchanged->result() == http::status::not_modified);
    CHECK(unchanged->body().empty());
    again.set(http::field::if_none_match, R"("stale")");
    CHECK(ralph::answer_page(again)->result() == http::status::ok);
}

TEST_CASE("web pages: other paths and methods are not pages") {
    CHECK(!ralph::answer_page(request(http::verb::get, "/rpc")));
    CHECK(!ralph::answer_page(request(http::verb::get, "/index.html")));
    CHECK(!ralph::answer_page(request(http::verb::get, "/../etc/passwd")));
    CHECK(!ralph::answer_page(request(http::verb::post, "/")));
}
