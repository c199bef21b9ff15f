// `ralphctl mcp` (SPEC §7): a Model Context Protocol server on stdin/stdout, so that an agent in
// an IDE can start and watch loops. Its tools are ralph_submit, ralph_list, ralph_get,
// ralph_cancel and ralph_output, each one call to ralphd. MCP's stdio transport: one JSON-RPC 2.0
// message per line; stdout carries only those, diagnostics go to stderr. It ends at the end of
// stdin. A failing tool (ralphd refused, or is not running) is a result with isError, as MCP has
// it, so that the model reads why.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/methods.hpp"
#include "proto/version.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>

namespace ralph::client {
namespace {

constexpr const char* mcp_protocol_version = "2024-11-05";

struct tool {
    const char* name;
    const char* description;
    nlohmann::json input_schema;
    // The daemon's method and its params for the tool's arguments.
    const char* method;
    std::function<nlohmann::json(const nlohmann::json& arguments)> params;
};

nlohmann::json object_schema(nlohmann::json properties, nlohmann::json required) {
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)}};
}

std::vector<tool> make_tools() {
    // A local, not a global: every run of ralphctl would build it at start.
    const nlohmann::json id_property = {{"type", "integer"}, {"description", "The loop's id"}};
    auto pass = [](const nlohmann::json& arguments) { return arguments; };
    return {
        {"ralph_submit",
         "Queue a Ralph loop: ralphd runs an AI coding agent on the prompt in the workspace, again "
         "and again, until it answers <promise>COMPLETE</promise> or max_iterations is reached. "
         "Returns the new loop (its id is for the other tools).",
         object_schema(
             {{"workspace",
               {{"type", "string"},
                {"description", "Absolute path of the directory the agent works in"}}},
              {"prompt",
               {{"type", "string"}, {"description", "The task (else PROMPT.md in the workspace)"}}},
              {"agent",
               {{"type", "string"},
                {"description", "claude, codex, opencode, gemini, aider, kiro, command or demo"}}},
              {"command",
               {{"type", "string"},
                {"description", "Argv template for agent command, e.g. 'my-agent {prompt_file}'"}}},
              {"max_iterations",
               {{"type", "integer"}, {"description", "0 = unlimited; default 30"}}},
              {"name", {{"type", "string"}, {"description", "Shown in lists"}}},
              {"idempotency_key",
               {{"type", "string"}, {"description", "Submit at most once with this key"}}},
              {"allow_dirty",
               {{"type", "boolean"}, {"description", "Start on uncommitted changes"}}}},
             {"workspace"}),
         proto::method::loop_submit::name, pass},
        {"ralph_list", "List loops: those not ended and the latest ended ones, newest first.",
         object_schema({{"limit", {{"type", "integer"}, {"description", "At most this many"}}}},
                       nlohmann::json::array()),
         proto::method::loop_list::name, pass},
        {"ralph_get", "A loop: its state, iterations, limits, usage and stop reason.",
         object_schema({{"id", id_property}}, {"id"}), proto::method::loop_get::name, pass},
        {"ralph_cancel", "Cancel a loop; a running agent is stopped with its whole process group.",
         object_schema({{"id", id_property}}, {"id"}), proto::method::loop_cancel::name, pass},
        {"ralph_output", "The last lines of a loop's output (what its agent printed).",
         object_schema(
             {{"id", id_property},
              {"last_lines", {{"type", "integer"}, {"description", "How many; default 50"}}}},
             {"id"}),
         proto::method::loop_output::name,
         [](const nlohmann::json& arguments) {
             nlohmann::json params = arguments;
             if (!params.contains("last_lines")) params["last_lines"] = 50;
             return params;
         }},
    };
}

nlohmann::json text_result(const std::string& text, bool is_error) {
    return {{"content", {{{"type", "text"}, {"text", text}}}}, {"isError", is_error}};
}

// One tools/call: the daemon's answer as text (the output itself for ralph_output, else JSON).
nlohmann::json call_tool(const client_context& ctx, const tool& called,
                         const nlohmann::json& arguments) {
    try {
        // A refusal of ralphd comes as a client_error too, with its message.
        const nlohmann::json result =
            connection(ctx.socket).call(called.method, called.params(arguments));
        if (called.method == std::string_view(proto::method::loop_output::name))
            return text_result(result.get<proto::output_page>().data, false);
        return text_result(result.dump(), false);
    } catch (const client_error& e) {
        return text_result(
            e.hint().empty() ? e.what() : std::string(e.what()) + " (" + e.hint() + ")", true);
    }
}

nlohmann::json error_response(const nlohmann::json& id, int code, const std::string& message) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

// The response to one message; null for a notification.
nlohmann::json answer(const client_context& ctx, const std::vector<tool>& tools,
                      const std::string& line) {
    const auto message = nlohmann::json::parse(line, nullptr, false);
    if (message.is_discarded()) return error_response(nullptr, -32700, "Parse error");
    if (!message.is_object() || !message.contains("method") || !message["method"].is_string())
        return error_response(
            message.is_object() ? message.value("id", nlohmann::json()) : nlohmann::json(), -32600,
            "Invalid Request");
    if (!message.contains("id")) return nullptr;  // notifications/initialized and the like
    const nlohmann::json& id = message["id"];
    const std::string method = message["method"];
    const nlohmann::json params = message.value("params", nlohmann::json::object());
    nlohmann::json result;
    if (method == "initialize") {
        result = {{"protocolVersion", mcp_protocol_version},
                  {"capabilities", {{"tools", nlohmann::json::object()}}},
                  {"serverInfo", {{"name", "ralph"}, {"version", proto::daemon_version}}}};
    } else if (method == "ping") {
        result = nlohmann::json::object();
    } else if (method == "tools/list") {
        result["tools"] = nlohmann::json::array();
        for (const auto& t : tools)
            result["tools"].push_back({{"name", t.name},
                                       {"description", t.description},
                                       {"inputSchema", t.input_schema}});
    } else if (method == "tools/call") {
        const std::string name = params.value("name", std::string());
        const auto called =
            std::find_if(tools.begin(), tools.end(), [&](const tool& t) { return name == t.name; });
        if (called == tools.end()) return error_response(id, -32602, "Unknown tool: " + name);
        nlohmann::json arguments = params.value("arguments", nlohmann::json::object());
        if (!arguments.is_object())
            return error_response(id, -32602, "arguments must be an object");
        result = call_tool(ctx, *called, arguments);
    } else {
        return error_response(id, -32601, "Method not found: " + method);
    }
    return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

int run_mcp(const client_context& ctx) {
    const std::vector<tool> tools = make_tools();
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const nlohmann::json response = answer(ctx, tools, line);
        if (response.is_null()) continue;
        const std::string text = response.dump() + "\n";
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
    }
    return exit_code::ok;
}

}  // namespace

void register_mcp_command(CLI::App& app, client_context& ctx) {
    auto* cmd = app.add_subcommand(
        "mcp",
        "Serve the Model Context Protocol on stdin/stdout: tools to submit, list, get, cancel "
        "loops and read their output, for agents in IDEs");
    cmd->callback([&ctx] { ctx.exit_code = run_mcp(ctx); });
}

}  // namespace ralph::client
