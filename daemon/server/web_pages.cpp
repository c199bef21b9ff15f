// Serving the dashboard's embedded files.
#include "daemon/server/web_pages.hpp"

#include "daemon/server/connection.hpp"

#include <string>

namespace ralph {

std::optional<http_response> answer_page(const http_request& req) {
    namespace http = beast::http;
    if (req.method() != http::verb::get && req.method() != http::verb::head) return std::nullopt;
    const std::string_view path = path_of(req.target());
    for (const web_asset& asset : web_assets()) {
        if (asset.path != path) continue;
        const bool unchanged = to_std(req[http::field::if_none_match]) == asset.etag;
        http_response res{unchanged ? http::status::not_modified : http::status::ok, req.version()};
        set_server_headers(res);
        res.set(http::field::content_type, std::string(asset.content_type));
        res.set(http::field::etag, std::string(asset.etag));
        // Asked again at every load: a new ralphd's files are used at once.
        res.set(http::field::cache_control, "no-cache");
        if (!unchanged && req.method() == http::verb::get) res.body() = asset.body;
        res.prepare_payload();
        // HEAD: the length the body would have.
        if (req.method() == http::verb::head && !unchanged) res.content_length(asset.body.size());
        return res;
    }
    return std::nullopt;
}

}  // namespace ralph
