// The dashboard's files (daemon/web/), built into ralphd by daemon/web/embed.py with Debian's
// Chart.js: GET / and the files the page loads, on every listener. Nothing is read from disk at
// run time, so what is served is what was built and reviewed.
#pragma once

#include "daemon/server/http_rpc.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph {

struct web_asset {
    std::string_view path;  // the URL path, "/" for the page itself
    std::string_view content_type;
    std::string_view etag;  // quoted, a hash of the body
    std::string body;
};

// Every file served, generated at build time (web_assets.cpp).
const std::vector<web_asset>& web_assets();

// The answer to GET or HEAD of a file's path (200, or 304 when If-None-Match has its ETag);
// nullopt for any other request, which is then the API's (POST /rpc) or a 404.
std::optional<http_response> answer_page(const http_request& req);

}  // namespace ralph
