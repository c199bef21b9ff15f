// The method registry and JSON-RPC 2.0 dispatcher: maps "loop.submit" to a handler and its
// policy (proto::method_policy), and is the one place where requests are validated, batches are
// split, notifications are kept silent, a call the method's policy refuses to its connection is
// answered, and exceptions become error objects (rpc_error → its code; anything else → -32603,
// logged).
// Dispatch is a coroutine on the io thread: most handlers answer at once, and a handler that has
// blocking work to do (the submit's git checks) awaits it on a pool thread meanwhile.
#pragma once

#include "common/asio.hpp"
#include "daemon/rpc/session.hpp"
#include "proto/errors.hpp"
#include "proto/methods.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace ralph::rpc {

// What a handler may know about the connection its call came on.
struct call_context {
    // The WebSocket session, able to carry notifications; nullptr for a plain HTTP POST.
    tail_sink* session = nullptr;
    // A web client's: the connection is one of ralphd --listen's (TCP), not the Unix socket's.
    bool web = false;
};

struct dispatch_limits {
    std::size_t max_batch = 100;  // more requests in one batch → one -32600 error
};

template <typename T>
inline constexpr bool is_awaitable_v = false;
template <typename T>
inline constexpr bool is_awaitable_v<awaitable<T>> = true;

// The call of a plain handler `fn` (which returns JSON) as a coroutine.
template <typename Fn>
awaitable<nlohmann::json> call_plain(const Fn& fn, const nlohmann::json& params,
                                     call_context& ctx) {
    co_return fn(params, ctx);
}

// The call of the typed handler `fn` of `Method`: its request read from `params` with from_json
// (a failure — rpc_error or nlohmann's — becomes -32602 naming the bad field), its result (or
// the awaited result) written as JSON.
template <typename Method, typename Fn>
awaitable<nlohmann::json> call_typed(const Fn& fn, const nlohmann::json& params,
                                     call_context& ctx) {
    typename Method::request request{};
    try {
        from_json(params, request);
    } catch (const proto::rpc_error&) {
        throw;
    } catch (const nlohmann::json::exception& e) {
        throw proto::rpc_error(proto::error_kind::invalid_params,
                               std::string("invalid params: ") + e.what());
    }
    if constexpr (is_awaitable_v<std::invoke_result_t<const Fn&, const typename Method::request&,
                                                      call_context&>>) {
        const typename Method::result result = co_await fn(request, ctx);
        co_return nlohmann::json(result);
    } else {
        const typename Method::result result = fn(request, ctx);
        co_return nlohmann::json(result);
    }
}

class method_registry {
  public:
    using handler =
        std::function<awaitable<nlohmann::json>(const nlohmann::json& params, call_context& ctx)>;

    // Registers `name` with `policy`; registering a name twice is a programming error (throws
    // logic_error). `fn(params, ctx)` returns the result as JSON, or an awaitable of it. The
    // registry keeps `fn` as long as it lives, which is longer than any call. (The API's methods
    // are added typed, below; this is for the dispatcher's own tests.)
    template <typename Fn>
    void add(std::string name, proto::method_policy policy, Fn fn) {
        if constexpr (is_awaitable_v<
                          std::invoke_result_t<Fn&, const nlohmann::json&, call_context&>>) {
            add_handler(std::move(name), policy, handler(std::move(fn)));
        } else {
            add_handler(std::move(name), policy,
                        [fn = std::move(fn)](const nlohmann::json& params, call_context& ctx) {
                            return call_plain(fn, params, ctx);
                        });
        }
    }

    // Registers the handler of `Method` (proto/methods.hpp) under its name and policy: it takes
    // the method's request type and returns its result type, or an awaitable of it (call_typed).
    template <typename Method, typename Fn>
    void add(Fn fn) {
        add_handler(std::string(Method::name), Method::policy,
                    [fn = std::move(fn)](const nlohmann::json& params, call_context& ctx) {
                        return call_typed<Method>(fn, params, ctx);
                    });
    }

    // Every method registered, by name, with its policy.
    std::map<std::string, proto::method_policy, std::less<>> policies() const;

    // Handles a request body: a single request or a batch (its requests one after the other).
    // Returns the serialized response, or nullopt when nothing must be sent (notifications only).
    // `body` and `ctx` must outlive the call.
    awaitable<std::optional<std::string>> handle_text(std::string_view body,
                                                      call_context& ctx) const;

    void set_limits(dispatch_limits limits) { limits_ = limits; }
    // `is_storage_error` tells (and takes note of) a handler's exception by which the storage
    // refused a write: its call is answered -32009 (storage_unavailable) with what failed,
    // instead of -32603.
    void set_storage_errors(std::function<bool(const std::exception&)> is_storage_error) {
        is_storage_error_ = std::move(is_storage_error);
    }

  private:
    struct entry {
        proto::method_policy policy;
        handler fn;
    };

    void add_handler(std::string name, proto::method_policy policy, handler fn);
    // Handles one parsed request object. Returns the response, or nullopt for a notification.
    awaitable<std::optional<nlohmann::json>> handle(const nlohmann::json& request,
                                                    call_context& ctx) const;
    // The reply to the exception being handled (not an rpc_error) of a call of `method`: -32009
    // when the storage refused a write, else -32603.
    nlohmann::json failure_response(nlohmann::json id, std::string_view method) const;

    std::map<std::string, entry, std::less<>> methods_;
    dispatch_limits limits_;
    std::function<bool(const std::exception&)> is_storage_error_;
};

// Builds {"jsonrpc":"2.0","method":name,"params":params} (a notification from the daemon).
nlohmann::json make_notification(std::string_view method, nlohmann::json params);

// An error response (id null) whose message is the standard text of `kind` and whose "data" is
// `detail`; also the body of the HTTP errors, so a client reads every reply the same way.
nlohmann::json standard_error_response(proto::error_kind kind, std::string detail);

// The wire form of a message. Text with invalid UTF-8 (agent output) is repaired, never fatal.
std::string serialize(const nlohmann::json& message);

}  // namespace ralph::rpc
