// ralphd --peer NAME: the link that joins this daemon's ledger of usage-limit holds to a peer's,
// so that a limit hit on one machine holds the agent on every machine of the account. The link
// is one WebSocket session with the peer's ralphd, over the system's ssh running `ralphctl
// dial-stdio` there (common/ssh_command.hpp, as ralphctl --host does): it calls peer.link with
// the holds in force here and records the peer's, then records each agent.held the peer sends
// and sends peer.hold for each hold this daemon takes. A message of the peer that is not what it
// should be is ignored and logged, at most 20 lines a minute (the rest are counted and the count
// said); one above 2 MiB, or a hold that cannot be recorded, ends the session. When the session
// cannot be made or ends, it is made again after a backoff (1 s, doubling to 1 min). Nothing waits
// for a link: a hold is recorded here first, and a peer that was down is told at the next link,
// whose exchange carries every hold in force. Everything runs on the io thread.
#pragma once

#include "common/asio.hpp"
#include "common/log_brake.hpp"
#include "proto/daemon_api.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ralph {

class child_reaper;

// What the links work with; owned by the daemon.
struct peer_context {
    net::io_context& io;
    net::thread_pool& blocking;  // starting ssh, which blocks a moment
    child_reaper& reaper;
    std::string self;  // this daemon's name (ralphd --host-name)
    // The holds of this daemon's ledger in force now, as peers are told them.
    std::function<std::vector<proto::agent_hold>()> holds_in_force;
    // Records a hold the peer `from` sent (peer_holds: accepted_peer_hold); true when it was
    // news here. Throws proto::rpc_error for a hold refused (its names), anything else when it
    // could not be recorded (a storage error has then made ralphd degraded).
    std::function<bool(const proto::agent_hold& hold, const std::string& from)> learn;
    std::function<std::int64_t()> now_ms;
};

class peer_link {
  public:
    // `address`: ssh://[USER@]HOST[:PORT] (checked by the caller with parse_ssh_address).
    peer_link(peer_context& ctx, std::string name, std::string address);
    ~peer_link();
    peer_link(const peer_link&) = delete;
    peer_link& operator=(const peer_link&) = delete;

    // Links, and links again whenever the session ends, until stop().
    void start();
    // Ends the session and its ssh; no more links.
    void stop();
    // A hold this daemon's ledger took (as told): sent to the peer now when linked, else carried
    // by the next link's exchange.
    void tell(const proto::agent_hold& hold);
    const proto::peer_status& status() const { return status_; }

  private:
    struct ssh_process;
    struct session;

    awaitable<void> run();
    // One session: ssh, the WebSocket handshake, peer.link, then the peer's notifications until
    // the session ends. Throws why it could not be made or ended.
    awaitable<void> link_once();
    awaitable<std::shared_ptr<ssh_process>> start_ssh(int stdio_socket);
    // The next message of the session; throws why the session ended.
    awaitable<std::string> receive(session& s);
    // Why the session ended with `ec`: ssh's exit and last message when it has exited (given a
    // moment to), else ec's message.
    awaitable<std::string> why_ended(session& s, const boost::system::error_code& ec);
    // Sends the told holds while there are any and the session lasts.
    awaitable<void> send_told(session& s);
    void start_sending();
    // A message of the peer after the link: agent.held, or the answer to a peer.hold.
    void handle(const std::string& message);
    // Records a hold the peer sent (peer_context::learn); true when it was news. A hold refused
    // is logged, and the link goes on; one that cannot be recorded (a full disk) throws, which
    // ends the session: the next link's exchange brings the hold again.
    bool learn(const proto::agent_hold& hold);
    // Logs what the peer sent that was ignored (`what` it did), through junk_log_.
    void log_ignored(std::string_view what);
    void set_status(bool linked, std::string error);

    peer_context& ctx_;
    proto::peer_status status_;           // also the peer's name and address
    std::shared_ptr<session> session_;    // while a session is open
    std::deque<proto::agent_hold> told_;  // to send on the open session
    std::chrono::seconds backoff_;
    net::steady_timer retry_;
    std::int64_t next_id_ = 1;
    bool stopped_ = false;
    log_brake junk_log_{20, std::chrono::minutes(1)};
};

}  // namespace ralph
