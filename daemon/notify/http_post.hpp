// One POST of a notification to its webhook, over HTTP or HTTPS (Beast and OpenSSL: the
// server's certificate verified against the system's CAs, or SSL_CERT_FILE's, and its name
// against the URL's host), bounded in time, on the io thread without blocking it.
#pragma once

#include "common/asio.hpp"
#include "daemon/notify/webhook.hpp"

#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <string>

namespace ralph {

struct post_result {
    int status = 0;     // the HTTP status; 0 = no answer
    std::string error;  // "" when delivered (2xx); else what went wrong, without the URL's path
    std::chrono::seconds retry_after{0};  // what a 429 or 503 asked for
    bool delivered() const { return status >= 200 && status < 300; }
};

// A client context that verifies servers (SSL_CERT_FILE and SSL_CERT_DIR as OpenSSL reads them).
net::ssl::context verifying_tls_context();

awaitable<post_result> post_webhook(const webhook_target& target, const webhook_request& request,
                                    net::ssl::context& tls, std::chrono::milliseconds timeout);

}  // namespace ralph
