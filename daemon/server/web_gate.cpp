#include "daemon/server/web_gate.hpp"

#include "common/text.hpp"
#include "daemon/server/connection.hpp"
#include "proto/errors.hpp"

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
constexpr std::size_t login_code_bytes = 16;
constexpr std::size_t max_login_codes = 8;
constexpr auto failure_window = std::chrono::minutes(1);
constexpr std::size_t max_sources_remembered = 4096;

// `size` random bytes in hex; `what` names them in the error.
std::string random_hex(std::size_t size, const char* what) {
    std::string hex;
    constexpr std::string_view digits = "0123456789abcdef";
    unsigned char bytes[token_bytes];
    if (size > sizeof bytes || ::getrandom(bytes, size, 0) != ssize_t(size))
        throw std::runtime_error(std::string("cannot make ") + what + ": " + std::strerror(errno));
    for (std::size_t i = 0; i < size; ++i) {
        hex += digits[bytes[i] >> 4];
        hex += digits[bytes[i] & 15];
    }
    return hex;
}

// What failed logins from `address` are counted against: every loopback address is this machine
// (any local user may use any of them), an IPv6 address its /64, an IPv4 address itself.
std::string source_of(const std::string& address) {
    boost::system::error_code not_an_address;
    net::ip::address ip = net::ip::make_address(address, not_an_address);
    if (not_an_address) return address;
    if (ip.is_v6() && ip.to_v6().is_v4_mapped())
        ip = net::ip::make_address_v4(net::ip::v4_mapped, ip.to_v6());
    if (ip.is_loopback()) return "this machine (loopback)";
    if (ip.is_v4()) return ip.to_string();
    net::ip::address_v6::bytes_type bytes = ip.to_v6().to_bytes();
    std::fill(bytes.begin() + 8, bytes.end(), 0);
    return net::ip::address_v6(bytes).to_string() + "/64";
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
    const std::string token = random_hex(token_bytes, "a web token");
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
    login_codes_.clear();  // made for the old token's holder
}

std::string web_gate::login_code(clock::time_point now) {
    if (token_.empty())
        throw proto::rpc_error(proto::error_kind::storage_unavailable,
                               "ralphd has no web token: it could not write one (see its log); "
                               "ralphctl web --rotate-token makes one");
    std::erase_if(login_codes_, [now](const auto& code) { return code.second <= now; });
    while (login_codes_.size() >= max_login_codes)
        login_codes_.erase(
            std::min_element(login_codes_.begin(), login_codes_.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; }));
    std::string code = random_hex(login_code_bytes, "a login code");
    login_codes_.emplace(code, now + login_code_lifetime);
    return code;
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

web_gate::credential web_gate::login_credential(std::string_view query, clock::time_point now) {
    if (const std::string_view token = text::parameter_value(query, "token", '&'); !token.empty())
        return same_secret(token, token_) ? credential::right : credential::wrong;
    const std::string_view code = text::parameter_value(query, "code", '&');
    if (code.empty()) return credential::none;
    std::erase_if(login_codes_, [now](const auto& good) { return good.second <= now; });
    for (auto it = login_codes_.begin(); it != login_codes_.end(); ++it)
        if (same_secret(code, it->first)) {
            login_codes_.erase(it);  // once only
            return credential::right;
        }
    return credential::wrong;
}

void web_gate::prune_failures(clock::time_point now) {
    for (auto it = failures_.begin(); it != failures_.end();) {
        auto& times = it->second;
        while (!times.empty() && now - times.front() > failure_window) times.pop_front();
        it = times.empty() ? failures_.erase(it) : std::next(it);
    }
    if (failures_.size() < max_sources_remembered) return;
    failures_.erase(std::min_element(
        failures_.begin(), failures_.end(),
        [](const auto& a, const auto& b) { return a.second.back() < b.second.back(); }));
}

std::size_t web_gate::failed(const std::string& source, clock::time_point now) {
    if (failures_.size() >= max_sources_remembered && !failures_.contains(source))
        prune_failures(now);
    std::deque<clock::time_point>& times = failures_[source];
    times.push_back(now);
    while (now - times.front() > failure_window) times.pop_front();
    const std::size_t count = times.size();
    if (count == failures_allowed + 1)
        if (auto note = refusal_log_.admit(now))
            spdlog::warn(
                "web: {} failed logins from {} within a minute: answering its failures "
                "slowly{}",
                count, source, *note);
    return count;
}

web_gate::verdict web_gate::check(const http_request& req, const std::string& address,
                                  clock::time_point now) {
    verdict result;
    const unsigned version = req.version();
    const std::string_view host = to_std(req[http::field::host]);
    if (!host_allowed(host)) {
        if (auto note = refusal_log_.admit(now))
            spdlog::warn("web: refused a request from {} for host '{}'{}", address, host, *note);
        result.answer = bare_reply(http::status::forbidden, version);
        return result;
    }
    const bool changes = req.method() != http::verb::get && req.method() != http::verb::head;
    if (changes || beast::websocket::is_upgrade(req)) {
        auto origin = req.find(http::field::origin);
        if (origin != req.end() && text::ascii_lower(to_std(origin->value())) !=
                                       text::ascii_lower("http://" + std::string(host))) {
            if (auto note = refusal_log_.admit(now))
                spdlog::warn("web: refused a request from {} sent by the page of {}{}", address,
                             to_std(origin->value()), *note);
            result.answer = bare_reply(http::status::forbidden, version);
            return result;
        }
    }
    const std::string_view target = to_std(req.target());
    const bool login = path_of(req.target()) == "/login" && req.method() == http::verb::get;
    credential given = credential_of(req);
    if (login) {
        const auto question = target.find('?');
        given = login_credential(
            question == std::string_view::npos ? std::string_view() : target.substr(question + 1),
            now);
    }
    // Only a failure waits, and only for its source's failures: the owner's right token never.
    if (given == credential::wrong) {
        const std::size_t failures = failed(source_of(address), now);
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
