#include "proto/errors.hpp"

#include <array>

namespace ralph::proto {
namespace {

struct error_entry {
    error_kind kind;
    int code;
    const char* message;
};

// The one table: kind, JSON-RPC code, generic message.
constexpr std::array<error_entry, 14> error_table{{
    {error_kind::parse_error, -32700, "Parse error"},
    {error_kind::invalid_request, -32600, "Invalid Request"},
    {error_kind::method_not_found, -32601, "Method not found"},
    {error_kind::invalid_params, -32602, "Invalid params"},
    {error_kind::internal_error, -32603, "Internal error"},
    {error_kind::loop_not_found, -32001, "Loop not found"},
    {error_kind::invalid_state, -32002, "Invalid state for this action"},
    {error_kind::invalid_workspace, -32003, "Invalid workspace"},
    {error_kind::agent_unavailable, -32004, "Agent unavailable"},
    {error_kind::shutting_down, -32005, "Daemon is shutting down"},
    {error_kind::limit_exceeded, -32006, "Limit exceeded"},
    {error_kind::invalid_prompt, -32007, "Invalid prompt"},
    {error_kind::workspace_dirty, -32008, "Workspace has uncommitted changes"},
    {error_kind::storage_unavailable, -32009, "Storage unavailable"},
}};

const error_entry& entry_of(error_kind kind) {
    for (const auto& entry : error_table)
        if (entry.kind == kind) return entry;
    return error_table[4];
}

class category_impl : public std::error_category {
  public:
    const char* name() const noexcept override { return "ralph.rpc"; }
    std::string message(int value) const override {
        return entry_of(static_cast<error_kind>(value)).message;
    }
};

}  // namespace

const std::error_category& error_category() {
    static const category_impl instance;
    return instance;
}

std::error_code make_error_code(error_kind kind) {
    return {static_cast<int>(kind), error_category()};
}

int rpc_code(error_kind kind) { return entry_of(kind).code; }

error_kind kind_of_code(int code) {
    for (const auto& entry : error_table)
        if (entry.code == code) return entry.kind;
    return error_kind::internal_error;
}

}  // namespace ralph::proto
