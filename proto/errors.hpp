// The one list of error kinds of the API and the one table mapping each to its JSON-RPC code.
// Handlers throw rpc_error; the dispatcher turns it into the error object. Messages are for the
// user: they name the thing and what went wrong.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <system_error>

namespace ralph::proto {

enum class error_kind {
    parse_error = 1,      // -32700 not valid JSON
    invalid_request,      // -32600 not a JSON-RPC request object
    method_not_found,     // -32601
    invalid_params,       // -32602 a parameter is missing or of the wrong type
    internal_error,       // -32603 a bug; details go to the log, not to the client
    loop_not_found,       // -32001
    invalid_state,        // -32002 the loop's state does not allow the action
    invalid_workspace,    // -32003 workspace missing, not a directory, not absolute
    agent_unavailable,    // -32004 unknown agent, or its binary is not found
    shutting_down,        // -32005 the daemon is stopping and takes no new work
    limit_exceeded,       // -32006 a bound of the server was hit (tails per session)
    invalid_prompt,       // -32007 prompt file unreadable
    workspace_dirty,      // -32008 uncommitted changes and allow_dirty not set (data: changes)
    storage_unavailable,  // -32009 ralphd cannot write its state (disk full, read-only)
};

const std::error_category& error_category();
std::error_code make_error_code(error_kind kind);

// The JSON-RPC error code of a kind, and the kind of a code (internal_error when unknown).
int rpc_code(error_kind kind);
error_kind kind_of_code(int code);

class rpc_error : public std::runtime_error {
  public:
    rpc_error(error_kind kind, const std::string& message, nlohmann::json data = nullptr)
        : std::runtime_error(message), kind_(kind), data_(std::move(data)) {}
    error_kind kind() const { return kind_; }
    int code() const { return rpc_code(kind_); }
    const nlohmann::json& data() const { return data_; }

  private:
    error_kind kind_;
    nlohmann::json data_;
};

}  // namespace ralph::proto

namespace std {
template <>
struct is_error_code_enum<ralph::proto::error_kind> : true_type {};
}  // namespace std
