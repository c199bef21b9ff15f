// HTTP and WebSocket clients of ralphd's JSON-RPC API (see connection.hpp).
#include "client/connection.hpp"

#include "client/output.hpp"
#include "client/ssh_dial.hpp"
#include "common/beast.hpp"
#include "common/paths.hpp"
#include "common/ssh_command.hpp"
#include "proto/version.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include <charconv>
#include <limits>

namespace ralph::client {
namespace {

namespace http = beast::http;
namespace websocket = beast::websocket;

constexpr const char* host = "ralph";
constexpr const char* target = "/rpc";

// Refuses a socket another user could have put there, before sending it anything (a submit
// carries --env secrets): its directory must be ours and closed to others, the socket ours.
void check_socket_path(const std::string& path) {
    const std::filesystem::path socket(path);
    std::error_code ec;
    // Nothing there: the connect fails and says that ralphd is not running.
    if (!std::filesystem::exists(std::filesystem::symlink_status(socket.parent_path(), ec))) return;
    std::string problem = paths::socket_directory_problem(socket.parent_path());
    struct stat st {};
    if (problem.empty() && ::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            problem = path + " is not a socket";
        else if (st.st_uid != ::getuid())
            problem = path + " belongs to " + paths::describe_uid(st.st_uid) + ", not to you";
    }
    if (problem.empty()) return;
    throw client_error(exit_code::unreachable,
                       fmt::format("refusing to talk to {}: {}; another user may be posing as "
                                   "ralphd",
                                   path, problem),
                       "remove it, or point ralphctl at your daemon with --socket or "
                       "XDG_RUNTIME_DIR");
}

// The listening process must run as us too (the client's side of the SO_PEERCRED check).
void check_peer(local_stream::socket& socket, const std::string& path) {
    struct ucred peer {};
    socklen_t size = sizeof peer;
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0)
        throw client_error(exit_code::unreachable,
                           fmt::format("cannot tell who listens on {}: {}", path,
                                       std::generic_category().message(errno)));
    if (peer.uid == ::getuid()) return;
    throw client_error(exit_code::unreachable,
                       fmt::format("refusing to talk to {}: the process listening there (pid {}) "
                                   "runs as {}, not as you; another user may be posing as ralphd",
                                   path, peer.pid, paths::describe_uid(peer.uid)),
                       "point ralphctl at your daemon with --socket or XDG_RUNTIME_DIR");
}

// A daemon address's socket path: a plain path, or unix://PATH.
std::string socket_path_of(const std::string& address) {
    constexpr std::string_view scheme = "unix://";
    return address.starts_with(scheme) ? address.substr(scheme.size()) : address;
}

local_stream::socket connect_to_socket(net::io_context& io, const std::string& path) {
    check_socket_path(path);
    local_stream::socket socket(io);
    try {
        // The endpoint itself throws when the path does not fit in sockaddr_un.
        socket.connect(local_stream::endpoint(path));
    } catch (const boost::system::system_error& e) {
        throw client_error(
            exit_code::unreachable,
            fmt::format("ralphd is not running (cannot connect to {}: {})", path,
                        e.code().message()),
            "start it with: systemctl --user start ralphd   (or in the foreground: ralphd)");
    }
    check_peer(socket, path);
    return socket;
}

// The connection to the daemon at `address` (ssh_dial.hpp, or its socket); `ssh` keeps the ssh
// process of an ssh:// address.
local_stream::socket connect_to(net::io_context& io, const std::string& address,
                                std::unique_ptr<ssh_dial>& ssh,
                                ssh_messages messages = ssh_messages::shown) {
    if (!address.starts_with(ssh_scheme)) return connect_to_socket(io, socket_path_of(address));
    ssh = std::make_unique<ssh_dial>(address, messages);
    return local_stream::socket(io, local_stream(), ssh->take_socket());
}

client_error lost_connection(const std::string& address, const boost::system::error_code& ec,
                             const std::unique_ptr<ssh_dial>& ssh) {
    const bool closed =
        ec == websocket::error::closed || ec == http::error::end_of_stream || ec == net::error::eof;
    std::string why = closed ? "the daemon closed it" : ec.message();
    if (ssh) why = ssh->failure();
    return client_error(exit_code::unreachable,
                        fmt::format("lost the connection to ralphd at {}: {}", address, why));
}

// Every reply of ralphd names its protocol version; refuse to go on with any other.
void check_protocol(const http::fields& fields, const std::string& path) {
    const std::string_view value = to_std(fields[proto::protocol_header]);
    int version = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), version);
    const bool is_number = ec == std::errc() && end == value.data() + value.size();
    if (is_number && version == proto::protocol_version) return;
    std::string_view advice = "restart the daemon or upgrade ralphctl";
    if (is_number && version < proto::protocol_version)
        advice = "restart the daemon so that the installed version runs";
    else if (is_number)
        advice = "upgrade ralphctl";
    throw client_error(
        exit_code::failure,
        fmt::format("ralphd at {} speaks protocol {}, this ralphctl speaks {}: {}", path,
                    is_number ? value : "unknown", proto::protocol_version, advice));
}

std::string make_request(std::int64_t id, std::string_view method, nlohmann::json params) {
    nlohmann::json request{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
    // JSON-RPC allows params to be absent, an array or an object, never null.
    if (!params.is_null()) request["params"] = std::move(params);
    return request.dump();
}

}  // namespace

nlohmann::json parse_reply(std::string_view text) {
    auto reply = nlohmann::json::parse(text, nullptr, false);
    if (reply.is_discarded() || !reply.is_object())
        throw client_error(exit_code::failure, "ralphd sent a reply that is not a JSON object");
    return reply;
}

nlohmann::json result_of(nlohmann::json response) {
    if (auto error = response.find("error"); error != response.end()) {
        if (!error->is_object()) throw client_error(exit_code::failure, "unknown error");
        const auto code = error->find("code");
        throw daemon_error(
            proto::kind_of_code(code != error->end() && code->is_number_integer() ? code->get<int>()
                                                                                  : 0),
            error->value("message", "unknown error"), error->value("data", nlohmann::json()));
    }
    auto result = response.find("result");
    if (result == response.end())
        throw client_error(exit_code::failure, "ralphd sent a response without a result");
    return std::move(*result);
}

struct connection::stream {
    net::io_context io;
    std::unique_ptr<ssh_dial> ssh;  // before the socket: ssh ends after it is closed
    local_stream::socket socket;
    beast::flat_buffer buffer;
    stream(const std::string& address, ssh_messages messages)
        : socket(connect_to(io, address, ssh, messages)) {}
};

connection::connection(const std::string& address, ssh_messages messages)
    : socket_path_(address), stream_(std::make_unique<stream>(address, messages)) {}

connection::~connection() = default;

bool connection::remote() const { return socket_path_.starts_with(ssh_scheme); }

std::string connection::exchange(std::string_view method, nlohmann::json params) {
    http::request<http::string_body> request{http::verb::post, target, 11};
    request.set(http::field::host, host);
    request.set(http::field::content_type, "application/json");
    request.keep_alive(true);
    request.body() = make_request(next_id_++, method, std::move(params));
    request.prepare_payload();

    boost::system::error_code ec;
    http::write(stream_->socket, request, ec);
    if (ec) throw lost_connection(socket_path_, ec, stream_->ssh);

    http::response_parser<http::string_body> parser;
    // The list of every loop can be megabytes; the daemon is ours, so no limit.
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    http::read(stream_->socket, stream_->buffer, parser, ec);
    if (ec) throw lost_connection(socket_path_, ec, stream_->ssh);

    auto& response = parser.get();
    check_protocol(response, socket_path_);
    if (response.result() != http::status::ok)
        throw client_error(exit_code::failure,
                           fmt::format("ralphd answered HTTP {} {}: {}", response.result_int(),
                                       to_std(response.reason()), response.body()));
    return std::move(response.body());
}

struct session::stream {
    net::io_context io;
    std::unique_ptr<ssh_dial> ssh;  // before the stream: ssh ends after it is closed
    websocket::stream<local_stream::socket> ws;
    beast::flat_buffer buffer;
    explicit stream(const std::string& address) : ws(connect_to(io, address, ssh)) {}
};

session::session(const std::string& socket_path)
    : socket_path_(socket_path), stream_(std::make_unique<stream>(socket_path)) {
    websocket::response_type response;
    boost::system::error_code ec;
    stream_->ws.handshake(response, host, target, ec);
    // An error of the WebSocket category means the daemon answered, but not with an upgrade
    // (Beast 1.74 then leaves `response` empty).
    if (ec && ec.category() == make_error_code(websocket::error::upgrade_declined).category())
        throw client_error(exit_code::failure,
                           fmt::format("ralphd refused the WebSocket session: {}", ec.message()));
    if (ec) throw lost_connection(socket_path_, ec, stream_->ssh);
    check_protocol(response, socket_path_);
    stream_->ws.text(true);
}

session::~session() = default;

std::int64_t session::send(std::string_view method, nlohmann::json params) {
    const std::int64_t id = next_id_++;
    const std::string text = make_request(id, method, std::move(params));
    boost::system::error_code ec;
    stream_->ws.write(net::buffer(text), ec);
    if (ec) throw lost_connection(socket_path_, ec, stream_->ssh);
    return id;
}

session::message session::receive() {
    stream_->buffer.clear();
    boost::system::error_code ec;
    stream_->ws.read(stream_->buffer, ec);
    if (ec) throw lost_connection(socket_path_, ec, stream_->ssh);
    const auto data = stream_->buffer.cdata();
    const std::string_view payload(static_cast<const char*>(data.data()), data.size());
    if (stream_->ws.got_text()) return {payload, {}};
    // The JSON text holds no newline, so the first newline ends it. Where that newline is
    // missing, the text before the first newline of the bytes is (all but always) not JSON.
    const std::size_t newline = payload.find('\n');
    if (newline == std::string_view::npos || !nlohmann::json::accept(payload.substr(0, newline)))
        throw client_error(exit_code::failure,
                           fmt::format("ralphd at {} sent a binary message without a newline "
                                       "after its JSON text",
                                       socket_path_));
    return {payload.substr(0, newline), payload.substr(newline + 1)};
}

void session::close() {
    boost::system::error_code ec;
    stream_->ws.close(websocket::close_code::normal, ec);
}

unique_fd connect_socket(const std::string& socket_path) {
    net::io_context io;
    return unique_fd(connect_to_socket(io, socket_path_of(socket_path)).release());
}

}  // namespace ralph::client
