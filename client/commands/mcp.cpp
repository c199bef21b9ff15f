// `ralphctl mcp` (README, "Using it"): a Model Context Protocol server on stdin/stdout, so that an
// agent in an IDE can start and watch loops. Its tools are ralph_submit, ralph_list, ralph_get,
// ralph_cancel and ralph_output, each one call to ralphd: the tool's arguments are read as the
// method's request type (proto/), and its input schema names them by proto::field_name, the
// names those types read. MCP's stdio transport: one JSON-RPC 2.0
// message per line; stdout carries only those, diagnostics go to stderr. It ends at the end of
// stdin. A failing tool (ralphd refused, or is not running) is a result with isError, as MCP has
// it, so that the model reads why.
#include "client/commands/commands.hpp"

#include "client/connection.hpp"
#include "client/output.hpp"
#include "proto/errors.hpp"
#include "proto/field_names.hpp"
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
    // Reads the tool's arguments as the request of its method, calls ralphd, and gives the
    // answer as text for the model.
    std::function<std::string(connection& daemon, const nlohmann::json& arguments)> call;
};

// A property of an input schema. Its name is a proto::field_name: the schema names what the
// request's from_json reads.
nlohmann::json property(const char* type, const char* description) {
    return {{"type", type}, {"description", description}};
}

nlohmann::json object_schema(nlohmann::json properties, nlohmann::json required) {
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)}};
}

// The tool's arguments as Method's request — read by its from_json, the daemon's own check, so a
// bad argument is refused as ralphd would refuse it — and the result as JSON.
template <typename Method>
std::string call_method(connection& daemon, const nlohmann::json& arguments) {
    return nlohmann::json(daemon.call<Method>(arguments.get<typename Method::request>())).dump();
}

std::vector<tool> make_tools() {
    namespace field = proto::field_name;
    namespace method = proto::method;
    // A local, not a global: every run of ralphctl would build it at start.
    const nlohmann::json id_property = property("integer", "The loop's id");
    return {
        {"ralph_submit",
         "Queue a Ralph loop: ralphd runs an AI coding agent on the prompt in the workspace, again "
         "and again, until it answers <promise>COMPLETE</promise> or max_iterations is reached. "
         "Returns the new loop (its id is for the other tools).",
         object_schema(
             {{field::workspace,
               property("string", "Absolute path of the directory the agent works in")},
              {field::prompt, property("string", "The task (else PROMPT.md in the workspace)")},
              {field::agent,
               property("string", "claude, codex, opencode, gemini, aider, kiro, command or demo")},
              {field::command,
               property("string",
                        "Argv template for agent command, e.g. 'my-agent {prompt_file}'")},
              {field::max_iterations, property("integer", "0 = unlimited; default 30")},
              {field::name, property("string", "Shown in lists")},
              {field::idempotency_key, property("string", "Submit at most once with this key")},
              {field::allow_dirty, property("boolean", "Start on uncommitted changes")}},
             {field::workspace}),
         call_method<method::loop_submit>},
        {"ralph_list", "List loops: those not ended and the latest ended ones, newest first.",
         object_schema({{field::limit, property("integer", "At most this many")}},
                       nlohmann::json::array()),
         call_method<method::loop_list>},
        {"ralph_get", "A loop: its state, iterations, limits, usage and stop reason.",
         object_schema({{field::id, id_property}}, {field::id}), call_method<method::loop_get>},
        {"ralph_cancel", "Cancel a loop; a running agent is stopped with its whole process group.",
         object_schema({{field::id, id_property}}, {field::id}), call_method<method::loop_cancel>},
        {"ralph_output", "The last lines of a loop's output (what its agent printed).",
         object_schema({{field::id, id_property},
                        {field::last_lines, property("integer", "How many; default 50")}},
                       {field::id}),
         [](connection& daemon, const nlohmann::json& arguments) {
             auto request = arguments.get<proto::output_request>();
             if (!request.last_lines) request.last_lines = 50;
             // A page holds one attempt's output: read on to the end, max_bytes in all.
             auto page = daemon.call<method::loop_output>(request);
             std::string output = page.data;
             const std::int64_t end = page.end_offset;
             const std::int64_t budget = request.max_bytes;
             while (page.next_offset > page.offset && page.next_offset < end &&
                    std::int64_t(output.size()) < budget) {
                 request.offset = page.next_offset;
                 request.last_lines.reset();
                 request.max_bytes = budget - std::int64_t(output.size());
                 page = daemon.call<method::loop_output>(request);
                 output += page.data;
             }
             return output;
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
        connection daemon(ctx.socket);
        return text_result(called.call(daemon, arguments), false);
    } catch (const proto::rpc_error& e) {
        return text_result(e.what(), true);  // the arguments are not the method's params
    } catch (const client_error& e) {
        // A refusal of ralphd comes as a client_error too, with its message.
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
