#include "daemon/server/web_gate.hpp"

#include "common/text.hpp"
#include "daemon/server/connection.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace ralph {
namespace {

namespace http = beast::http;
constexpr std::size_t token_bytes = 32;
constexpr auto failure_window = std::chrono::minutes(1);
constexpr std::size_t max_addresses_remembered = 4096;

std::string new_token() {
    unsigned char bytes[token_bytes];
    if (::getrandom(bytes, sizeof bytes, 0) != sizeof bytes)
        throw std::runtime_error(std::string("cannot make a web token: ") + std::strerror(errno));
    std::string hex;
    constexpr std::string_view digits = "0123456789abcdef";
    for (unsigned char b : bytes) {
        hex += digits[b >> 4];
        hex += digits[b & 15];
    }
    return hex;
}

bool well_formed(const std::string& token) {
    return token.size() == 2 * token_bytes &&
           std::all_of(token.begin(), token.end(), [](char c) { return std::isxdigit(c); });
}

bool same_secret(std::string_view given, const std::string& token) {
    return !token.empty() && given.size() == token.size() &&
           CRYPTO_memcmp(given.data(), token.data(), token.size()) == 0;
}

http_response bare_reply(http::status status, unsigned version) {
    http_response res{status, version};
    set_server_headers(res);
    res.prepare_payload();
    return res;
}

}  // namespace

web_gate::web_gate(std::filesystem::path token_file, unsigned port)
    : token_file_(std::move(token_file)), port_(port) {
    host_name_ = text::ascii_lower(text::host_name());
    std::ifstream in(token_file_);
    std::getline(in, token_);
    if (well_formed(token_)) return;
    token_.clear();
    if (port_ == 0) return;  // made when a listener needs it
    try {
        rotate();
    } catch (const std::exception& e) {
        // A full disk must not keep ralphd from starting (it runs degraded): TCP refuses every
        // request until a token can be written.
        spdlog::error(
            "web: {}; every request on TCP is refused until ralphctl web "
            "--rotate-token can write one",
            e.what());
    }
}

void web_gate::rotate() {
    const std::string token = new_token();
    const std::filesystem::path temporary = token_file_.string() + ".new";
    ::unlink(temporary.c_str());
    const int fd =
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        throw std::runtime_error(
            fmt::format("cannot write {}: {}", temporary.string(), std::strerror(errno)));
    const std::string line = token + "\n";
    const bool written =
        ::write(fd, line.data(), line.size()) == ssize_t(line.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (!written || ::rename(temporary.c_str(), token_file_.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw std::runtime_error(
            fmt::format("cannot write {}: {}", token_file_.string(), std::strerror(error)));
    }
    token_ = token;
}

web_gate::credential web_gate::credential_of(const http_request& req) const {
    std::string_view given;
    if (auto it = req.find(http::field::authorization); it != req.end()) {
        const std::string_view value = to_std(it->value());
        if (value.substr(0, 7) == "Bearer ") given = value.substr(7);
    } else if (auto cookie = req.find(http::field::cookie); cookie != req.end()) {
        given = text::parameter_value(to_std(cookie->value()), cookie_name, ';');
    }
    if (given.empty()) return credential::none;
    return same_secret(given, token_) ? credential::right : credential::wrong;
}

bool web_gate::host_allowed(std::string_view host) const {
    std::string_view name = host;
    std::string_view port;
    if (!name.empty() && name.front() == '[') {
        const auto close = name.find(']');
        if (close == std::string_view::npos) return false;
        port = name.substr(close + 1);
        name = name.substr(1, close - 1);
    } else {
        const auto colon = name.rfind(':');
        if (colon != std::string_view::npos) {
            port = name.substr(colon);
            name = name.substr(0, colon);
        }
    }
    if (port != ":" + std::to_string(port_)) return false;
    boost::system::error_code not_an_address;
    net::ip::make_address(std::string(name), not_an_address);
    const std::string lowered = text::ascii_lower(name);
    return !not_an_address || lowered == "localhost" || lowered == host_name_;
}

std::size_t web_gate::failures_of(const std::string& address, clock::time_point now) {
    auto it = failures_.find(address);
    if (it == failures_.end()) return 0;
    while (!it->second.empty() && now - it->second.front() > failure_window) it->second.pop_front();
    return it->second.size();
}

std::size_t web_gate::failed(const std::string& address, clock::time_point now) {
    if (failures_.size() >= max_addresses_remembered && !failures_.contains(address))
        failures_.clear();  // a flood from many addresses: start counting afresh
    std::deque<clock::time_point>& times = failures_[address];
    times.push_back(now);
    const std::size_t count = failures_of(address, now);
    if (count == failures_allowed + 1)
        spdlog::warn("web: {} failed logins from {} within a minute: answering it slowly", count,
                     address);
    return count;
}

web_gate::verdict web_gate::check(const http_request& req, const std::string& address,
                                  clock::time_point now) {
    verdict result;
    const unsigned version = req.version();
    const std::string_view host = to_std(req[http::field::host]);
    if (!host_allowed(host)) {
        spdlog::warn("web: refused a request from {} for host '{}'", address, host);
        result.answer = bare_reply(http::status::forbidden, version);
        return result;
    }
    const bool changes = req.method() != http::verb::get && req.method() != http::verb::head;
    if (changes || beast::websocket::is_upgrade(req)) {
        auto origin = req.find(http::field::origin);
        if (origin != req.end() && text::ascii_lower(to_std(origin->value())) !=
                                       text::ascii_lower("http://" + std::string(host))) {
            spdlog::warn("web: refused a request from {} sent by the page of {}", address,
                         to_std(origin->value()));
            result.answer = bare_reply(http::status::forbidden, version);
            return result;
        }
    }
    const std::string_view target = to_std(req.target());
    const bool login = path_of(req.target()) == "/login" && req.method() == http::verb::get;
    credential given = credential_of(req);
    if (login) {
        const auto question = target.find('?');
        const std::string_view query =
            question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
        const std::string_view token = text::parameter_value(query, "token", '&');
        given = token.empty()                ? credential::none
                : same_secret(token, token_) ? credential::right
                                             : credential::wrong;
    }
    if (given != credential::none) {
        const std::size_t failures =
            given == credential::wrong ? failed(address, now) : failures_of(address, now);
        if (failures > failures_allowed)
            result.delay = std::min<clock::duration>(
                max_delay, std::chrono::seconds(failures - failures_allowed));
    }
    if (given != credential::right) {
        result.answer = bare_reply(http::status::unauthorized, version);
        return result;
    }
    if (login) {
        http_response res = bare_reply(http::status::see_other, version);
        res.set(http::field::location, "/");
        res.set(http::field::set_cookie,
                fmt::format("{}={}; HttpOnly; SameSite=Strict; Path=/", cookie_name, token_));
        res.set(http::field::cache_control, "no-store");
        result.answer = std::move(res);
    }
    return result;
}

}  // namespace ralph
