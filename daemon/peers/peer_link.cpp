// The link to a peer's ledger (see peer_link.hpp).
#include "daemon/peers/peer_link.hpp"

#include "common/beast.hpp"
#include "common/ssh_command.hpp"
#include "common/unique_fd.hpp"
#include "daemon/off_thread.hpp"
#include "daemon/process/child_reaper.hpp"
#include "daemon/process/process.hpp"
#include "proto/errors.hpp"
#include "proto/methods.hpp"
#include "proto/version.hpp"

#include <signal.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace ralph {
namespace {

namespace websocket = beast::websocket;

constexpr std::chrono::seconds first_backoff{1};
constexpr std::chrono::seconds max_backoff{60};
// A link that hears nothing for this long (not even the answer to its ping, sent halfway) is
// taken for dead: a peer whose machine went away without closing the connection.
constexpr std::chrono::seconds silence_limit{60};
// How long an ended session's ssh is given to exit by itself (and say why) before it is ended.
constexpr std::chrono::seconds ssh_exit_wait{2};
// Holds told while a session is open but not linked yet, or sending: past this many, the rest
// waits for the next link's exchange.
constexpr std::size_t max_told = 1000;
// The id of the peer.link request of a session; peer.hold requests take the next ones.
constexpr std::int64_t link_request_id = 0;
// The longest message a peer may send: its answer to peer.link carries at most max_peer_holds
// holds of bounded names (about 1.5 MB at most). A longer one ends the session.
constexpr std::size_t max_message_bytes = 2 << 20;

std::string request_text(std::int64_t id, std::string_view method, const nlohmann::json& params) {
    return nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}
        .dump();
}

// What the peer said of an error it answered: its message when it has one. A peer's message is
// read with checks on every type: a peer may send anything.
std::string error_message(const nlohmann::json& reply) {
    const nlohmann::json& error = reply["error"];
    if (error.is_object() && error.contains("message") && error["message"].is_string())
        return error["message"].get<std::string>();
    return "(no message)";
}

// The environment ssh runs with: ralphd's own (HOME, SSH_AUTH_SOCK, PATH, RALPH_SSH_COMMAND).
std::vector<std::string> own_environment() {
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
    return env;
}

}  // namespace

// The ssh process of one session; its exit status once the reaper has it.
struct peer_link::ssh_process {
    explicit ssh_process(net::io_context& io) : exited(io) {
        exited.expires_at(net::steady_timer::time_point::max());
    }
    pid_t pid = -1;
    unique_fd messages;  // ssh's stderr
    std::optional<int> status;
    net::steady_timer exited;  // cancelled when the status arrives

    awaitable<void> wait_for_exit(child_reaper& reaper) {
        status = co_await reaper.wait_exit(pid);
        exited.cancel();
    }
    // Ends ssh (its process group) unless it has ended.
    void end() {
        if (!status) signal_group(pid, SIGTERM);
    }
};

struct peer_link::session {
    session(local_stream::socket socket, std::shared_ptr<ssh_process> process)
        : ws(std::move(socket)), ssh(std::move(process)) {}
    websocket::stream<local_stream::socket> ws;
    std::shared_ptr<ssh_process> ssh;
    beast::flat_buffer buffer;
    bool linked = false;
    bool sending = false;
};

peer_link::peer_link(peer_context& ctx, std::string name, std::string address)
    : ctx_(ctx),
      status_{std::move(name), std::move(address), false, "", 0},
      backoff_(first_backoff),
      retry_(ctx.io) {}

peer_link::~peer_link() = default;

void peer_link::start() {
    net::co_spawn(
        ctx_.io, [this] { return run(); }, net::detached);
}

void peer_link::stop() {
    stopped_ = true;
    retry_.cancel();
    if (session_) {
        beast::error_code ignored;
        session_->ws.next_layer().close(ignored);
        session_->ssh->end();
    }
}

void peer_link::tell(const proto::agent_hold& hold) {
    if (!session_) return;  // the next link's exchange carries it
    if (told_.size() < max_told) told_.push_back(hold);
    if (session_->linked && !session_->sending) start_sending();
}

void peer_link::set_status(bool linked, std::string error) {
    status_.linked = linked;
    status_.error = std::move(error);
    status_.since = ctx_.now_ms();
}

awaitable<void> peer_link::run() {
    while (!stopped_) {
        std::string why;
        try {
            co_await link_once();
            why = "the session ended";
        } catch (const std::exception& e) {
            why = e.what();
        }
        session_.reset();
        told_.clear();
        if (stopped_) break;
        set_status(false, why);
        spdlog::warn("peer {}: not linked: {}; trying again in {} s", status_.name, why,
                     backoff_.count());
        retry_.expires_after(backoff_);
        boost::system::error_code ec;
        co_await retry_.async_wait(net::redirect_error(use_awaitable, ec));
        backoff_ = std::min(backoff_ * 2, max_backoff);
    }
}

awaitable<std::shared_ptr<peer_link::ssh_process>> peer_link::start_ssh(int stdio_socket) {
    spawn_request request;
    request.argv = ssh_ralphctl_command(parse_ssh_address(status_.address), {"dial-stdio"});
    request.env = own_environment();
    const char* home = std::getenv("HOME");
    request.cwd = home != nullptr && *home == '/' ? home : "/";
    request.stdio_socket = stdio_socket;
    const spawned_process started =
        co_await off_thread(ctx_.blocking, [&] { return ctx_.reaper.spawn(request); });
    auto ssh = std::make_shared<ssh_process>(ctx_.io);
    ssh->pid = started.pid;
    ssh->messages.reset(started.stderr_fd);
    net::co_spawn(
        ctx_.io, [ssh, this] { return ssh->wait_for_exit(ctx_.reaper); }, net::detached);
    co_return ssh;
}

awaitable<void> peer_link::link_once() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        throw std::system_error(errno, std::generic_category(), "cannot make a socket for ssh");
    unique_fd ours(pair[0]);
    unique_fd theirs(pair[1]);
    std::shared_ptr<ssh_process> ssh = co_await start_ssh(theirs.get());
    theirs.reset();
    session_ = std::make_shared<session>(
        local_stream::socket(ctx_.io, local_stream(), ours.release()), ssh);
    // Held here as well: session_ is replaced by the next session while this one's sending
    // may still finish.
    const std::shared_ptr<session> s = session_;
    std::exception_ptr failure;
    try {
        auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::client);
        timeouts.idle_timeout = silence_limit;
        timeouts.keep_alive_pings = true;
        s->ws.set_option(timeouts);
        s->ws.read_message_max(max_message_bytes);
        websocket::response_type response;
        boost::system::error_code ec;
        co_await s->ws.async_handshake(response, "localhost", "/rpc",
                                       net::redirect_error(use_awaitable, ec));
        if (ec) {
            const std::string why = co_await why_ended(*s, ec);
            throw std::runtime_error(why);
        }
        const std::string version = std::string(to_std(response[proto::protocol_header]));
        if (version != std::to_string(proto::protocol_version))
            throw std::runtime_error(fmt::format("it speaks protocol {}, this ralphd {}",
                                                 version.empty() ? "unknown" : version,
                                                 proto::protocol_version));
        s->ws.text(true);

        proto::peer_link_request request{ctx_.self, ctx_.holds_in_force()};
        const std::string text =
            request_text(link_request_id, proto::method::peer_link::name, nlohmann::json(request));
        co_await s->ws.async_write(net::buffer(text), net::redirect_error(use_awaitable, ec));
        if (ec) {
            const std::string why = co_await why_ended(*s, ec);
            throw std::runtime_error(why);
        }
        // The answer to peer.link: the peer's holds.
        for (;;) {
            const std::string text = co_await receive(*s);
            const nlohmann::json reply = nlohmann::json::parse(text, nullptr, false);
            if (!reply.is_object() || !reply.contains("id") || reply["id"] != link_request_id)
                continue;
            if (reply.contains("error"))
                throw std::runtime_error("the peer refused the link: " + error_message(reply));
            proto::peer_link_result result;
            try {
                result = reply.at("result").get<proto::peer_link_result>();
            } catch (const std::exception& e) {
                throw std::runtime_error(
                    std::string("the peer's answer to peer.link is not one: ") + e.what());
            }
            std::size_t news = 0;
            for (const auto& hold : result.holds)
                if (learn(hold)) ++news;
            spdlog::info("peer {}: linked to {} ({} hold(s) told, {} learnt, {} of them news)",
                         status_.name, result.host, request.holds.size(), result.holds.size(),
                         news);
            break;
        }
        s->linked = true;
        backoff_ = first_backoff;
        set_status(true, "");
        if (!told_.empty()) start_sending();
        for (;;) {
            const std::string message = co_await receive(*s);
            handle(message);
        }
    } catch (...) {
        failure = std::current_exception();
    }
    s->linked = false;
    beast::error_code ignored;
    s->ws.next_layer().close(ignored);
    ssh->end();
    if (const std::size_t left_out = junk_log_.take_left_out(); left_out > 0)
        spdlog::warn("peer {}: {} more message(s) it sent were ignored without a line in the log",
                     status_.name, left_out);
    std::rethrow_exception(failure);
}

awaitable<std::string> peer_link::receive(session& s) {
    s.buffer.clear();
    boost::system::error_code ec;
    co_await s.ws.async_read(s.buffer, net::redirect_error(use_awaitable, ec));
    // Said here: ssh, which ends with the session, would not say why.
    if (ec == websocket::error::message_too_big)
        throw std::runtime_error("it sent a message above 2 MiB");
    if (ec) {
        const std::string why = co_await why_ended(s, ec);
        throw std::runtime_error(why);
    }
    co_return beast::buffers_to_string(s.buffer.data());
}

awaitable<std::string> peer_link::why_ended(session& s, const boost::system::error_code& ec) {
    if (stopped_) co_return "ralphd is stopping";
    const std::string broken = ec.message();
    if (!s.ssh->status) {
        s.ssh->exited.expires_after(ssh_exit_wait);
        boost::system::error_code ignored;
        co_await s.ssh->exited.async_wait(net::redirect_error(use_awaitable, ignored));
    }
    if (!s.ssh->status) co_return broken;
    co_return describe_ssh_exit(*s.ssh->status, s.ssh->messages.get());
}

void peer_link::start_sending() {
    session_->sending = true;
    net::co_spawn(
        ctx_.io, [this, s = session_] { return send_told(*s); }, net::detached);
}

awaitable<void> peer_link::send_told(session& s) {
    while (s.linked && !told_.empty() && session_.get() == &s) {
        const std::string text =
            request_text(next_id_++, proto::method::peer_hold::name, nlohmann::json(told_.front()));
        told_.pop_front();
        boost::system::error_code ec;
        co_await s.ws.async_write(net::buffer(text), net::redirect_error(use_awaitable, ec));
        if (ec) break;  // the reader sees the session end too
    }
    s.sending = false;
}

void peer_link::handle(const std::string& text) {
    const nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
    if (!message.is_object()) {
        log_ignored("sent a message that is not a JSON object (ignored)");
        return;
    }
    if (message.contains("error")) {
        log_ignored("refused a hold: " + error_message(message));
        return;
    }
    if (message.contains("result")) return;  // a peer.hold taken
    if (!message.contains("method") || message["method"] != proto::notification::agent_held) {
        log_ignored(fmt::format("sent a message that is neither {} nor an answer (ignored)",
                                proto::notification::agent_held));
        return;
    }
    proto::agent_hold hold;
    try {
        hold = message.at("params").get<proto::agent_hold>();
    } catch (const std::exception& e) {
        log_ignored(std::string("sent a hold that is not one: ") + e.what());
        return;
    }
    learn(hold);
}

void peer_link::log_ignored(std::string_view what) {
    // A peer may send junk as fast as ssh carries it: the log takes a few lines a minute of it.
    if (auto note = junk_log_.admit()) spdlog::warn("peer {}: {}{}", status_.name, what, *note);
}

bool peer_link::learn(const proto::agent_hold& hold) {
    // A time that is not one reads as 0 (proto::time_from_json).
    if (hold.until <= ctx_.now_ms()) {
        log_ignored("sent a hold that has ended or has no time (ignored)");
        return false;
    }
    try {
        return ctx_.learn(hold, status_.name);  // which logs what it records
    } catch (const proto::rpc_error& e) {
        log_ignored(std::string("a hold it sent was not taken: ") + e.what());
        return false;
    }
}

}  // namespace ralph
