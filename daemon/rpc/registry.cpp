// JSON-RPC 2.0 dispatch (https://www.jsonrpc.org/specification): request validation, batches,
// silent notifications, and the single place where exceptions become error objects.
#include "daemon/rpc/registry.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <utility>

namespace ralph::rpc {
namespace {

using nlohmann::json;

// The message of a kind as the error table spells it ("Invalid Request", "Method not found"...).
std::string standard_message(proto::error_kind kind) {
    return proto::make_error_code(kind).message();
}

json error_response(json id, int code, std::string message, json data = nullptr) {
    json error{{"code", code}, {"message", std::move(message)}};
    if (!data.is_null()) error["data"] = std::move(data);
    return json{{"jsonrpc", "2.0"}, {"error", std::move(error)}, {"id", std::move(id)}};
}

// An error whose message is the standard text of its kind; the detail goes to "data".
json standard_error(json id, proto::error_kind kind, std::string detail) {
    return error_response(std::move(id), proto::rpc_code(kind), standard_message(kind),
                          std::move(detail));
}

json error_from(json id, const proto::rpc_error& e) {
    switch (e.kind()) {
        case proto::error_kind::parse_error:
        case proto::error_kind::invalid_request:
        case proto::error_kind::method_not_found:
            // Clients match these three on the message text the specification gives them.
            return error_response(std::move(id), e.code(), standard_message(e.kind()),
                                  e.data().is_null() ? json(e.what()) : e.data());
        default:
            return error_response(std::move(id), e.code(), e.what(), e.data());
    }
}

// Why `request` is not a valid request object, or an empty string when it is one.
std::string request_problem(const json& request) {
    if (!request.is_object())
        return std::string("a request must be an object, not ") + request.type_name();
    auto version = request.find("jsonrpc");
    if (version == request.end() || *version != "2.0") return "\"jsonrpc\" must be \"2.0\"";
    auto method = request.find("method");
    if (method == request.end() || !method->is_string()) return "\"method\" must be a string";
    auto params = request.find("params");
    if (params != request.end() && !params->is_array() && !params->is_object())
        return "\"params\" must be an array or an object";
    auto id = request.find("id");
    if (id != request.end() && !id->is_string() && !id->is_number() && !id->is_null())
        return "\"id\" must be a string, a number or null";
    return {};
}

// e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 9: ..."; the
// client only needs the part after the tag.
std::string parser_message(const nlohmann::detail::exception& error) {
    std::string detail = error.what();
    if (auto tag_end = detail.find("] "); tag_end != std::string::npos)
        detail.erase(0, tag_end + 2);
    return detail;
}

// A number too large for a double (1e400, an id of a thousand digits) fails the whole parse with
// no position but a byte offset. This parses the text again, event by event, to name the field
// it was in ("params.timeout_s", "[2].id") and, when the request's id came before it, that id.
class number_overflow_locator : public nlohmann::json_sax<json> {
  public:
    std::string field;  // where the number was; empty when the failure was something else
    json id;            // the top-level request's "id", when it was read before the failure
    std::size_t token_start = 0, token_size = 0;  // the number's place in the text
    std::string syntax_error;  // the parser's message when the failure was something else

    bool overflowed() const { return token_size != 0; }

    bool null() override { return value(nullptr); }
    bool boolean(bool) override { return value(nullptr); }
    bool number_integer(number_integer_t v) override { return value(v); }
    bool number_unsigned(number_unsigned_t v) override { return value(v); }
    bool number_float(number_float_t v, const string_t&) override { return value(v); }
    bool string(string_t& v) override { return value(v); }
    bool binary(binary_t&) override { return value(nullptr); }
    bool start_object(std::size_t) override { return open(false); }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(true); }
    bool end_array() override { return close(); }
    bool key(string_t& name) override {
        path_.back().key = name;
        return true;
    }
    bool parse_error(std::size_t position, const std::string& token,
                     const nlohmann::detail::exception& error) override {
        // 406: "number overflow parsing '1e400'"; `position` is just past the number.
        if (error.id == 406 && token.size() <= position) {
            field = describe_path();
            token_start = position - token.size();
            token_size = token.size();
        } else {
            syntax_error = parser_message(error);
        }
        return false;
    }

  private:
    struct level {
        bool array = false;
        std::size_t index = 0;  // of the next element, in an array
        std::string key;        // of the current member, in an object
    };

    bool open(bool array) {
        path_.push_back({array, 0, {}});
        return true;
    }
    bool close() {
        path_.pop_back();
        return after_value();
    }
    bool value(json v) {
        if (path_.size() == 1 && !path_.back().array && path_.back().key == "id" &&
            (v.is_string() || v.is_number()))
            id = std::move(v);
        return after_value();
    }
    bool after_value() {
        if (!path_.empty() && path_.back().array) ++path_.back().index;
        return true;
    }
    std::string describe_path() const {
        std::string path;
        for (const auto& level : path_) {
            if (level.array) {
                path += "[" + std::to_string(level.index) + "]";
            } else {
                if (!path.empty()) path += '.';
                path += level.key;
            }
        }
        return path;
    }

    std::vector<level> path_;
};

// The reply to a body whose parse stopped at a number beyond a double's range. JSON that is valid
// but for such numbers is an invalid parameter, naming the first one's field; anything else wrong
// with the body (found by parsing it again with each such number read as 0) is a parse error.
json number_overflow_error(std::string_view body) {
    number_overflow_locator first;
    json::sax_parse(body, &first);
    std::string text(body);
    number_overflow_locator rest = first;
    while (rest.overflowed()) {
        // "0 ", not "0": what follows the number must not join the 0 into a number of its own
        // ("1.5e999.5e999" is no JSON, "0.5e999" would be).
        text.replace(rest.token_start, rest.token_size, "0 ");
        rest = number_overflow_locator();
        json::sax_parse(text, &rest);
    }
    if (!rest.syntax_error.empty())
        return standard_error(nullptr, proto::error_kind::parse_error, rest.syntax_error);
    const std::string field = first.field.empty() ? "a number" : first.field;
    return error_from(std::move(first.id),
                      proto::rpc_error(proto::error_kind::invalid_params,
                                       field + ": the number is out of range (larger than any the "
                                               "API accepts)"));
}

// Throws the refusal of a call of `method` that its `policy` does not allow on the connection of
// `ctx`: a web client's call of a method not for the web, a plain POST of one that needs a session.
void check_policy(const std::string& method, proto::method_policy policy, const call_context& ctx) {
    // JSON-RPC's -32601 is "the method does not exist / is not available".
    if (ctx.web && !policy.web_allowed())
        throw proto::rpc_error(proto::error_kind::method_not_found,
                               method +
                                   " is not available to a web client (ralphd --listen): it "
                                   "is for ralphd --peer's link, which comes over ssh to the "
                                   "Unix socket");
    if (policy.needs_session && ctx.session == nullptr)
        throw proto::rpc_error(proto::error_kind::invalid_params,
                               method +
                                   " sends notifications and needs a WebSocket session (GET "
                                   "/rpc with Upgrade: websocket)");
}

}  // namespace

void method_registry::add_handler(std::string name, proto::method_policy policy, handler fn) {
    if (methods_.contains(name)) throw std::logic_error("method registered twice: " + name);
    methods_.emplace(std::move(name), entry{policy, std::move(fn)});
}

std::map<std::string, proto::method_policy, std::less<>> method_registry::policies() const {
    std::map<std::string, proto::method_policy, std::less<>> result;
    for (const auto& [name, method] : methods_) result.emplace(name, method.policy);
    return result;
}

awaitable<std::optional<json>> method_registry::handle(const json& request,
                                                       call_context& ctx) const {
    if (std::string problem = request_problem(request); !problem.empty())
        co_return standard_error(nullptr, proto::error_kind::invalid_request, std::move(problem));

    const std::string& method = request.at("method").get_ref<const std::string&>();
    auto id_it = request.find("id");
    const bool notification = id_it == request.end();
    json id = notification ? json(nullptr) : *id_it;

    auto method_it = methods_.find(method);
    if (method_it == methods_.end()) {
        if (notification) co_return std::nullopt;
        co_return standard_error(std::move(id), proto::error_kind::method_not_found,
                                 "no method named '" + method + "'");
    }

    static const json no_params;  // null: the handler sees absent params as null
    auto params_it = request.find("params");
    const json& params = params_it == request.end() ? no_params : *params_it;

    json response;
    try {
        check_policy(method, method_it->second.policy, ctx);
        json result = co_await method_it->second.fn(params, ctx);
        response = json{{"jsonrpc", "2.0"}, {"result", std::move(result)}, {"id", id}};
    } catch (const proto::rpc_error& e) {
        response = error_from(std::move(id), e);
    } catch (...) {
        response = failure_response(std::move(id), method);
    }
    if (notification) co_return std::nullopt;
    co_return response;
}

json method_registry::failure_response(json id, std::string_view method) const {
    try {
        throw;
    } catch (const std::exception& e) {
        if (is_storage_error_ && is_storage_error_(e))
            return error_from(std::move(id),
                              proto::rpc_error(proto::error_kind::storage_unavailable,
                                               std::string("ralph cannot write its state: ") +
                                                   e.what() + " (see ralphctl daemon status)"));
        spdlog::error("method {} failed: {}", method, e.what());
    } catch (...) {
        spdlog::error("method {} failed: a non-standard exception", method);
    }
    // A bug: the details go to the log, never to the client.
    return error_response(std::move(id), proto::rpc_code(proto::error_kind::internal_error),
                          standard_message(proto::error_kind::internal_error));
}

awaitable<std::optional<std::string>> method_registry::handle_text(std::string_view body,
                                                                   call_context& ctx) const {
    json request;
    try {
        request = json::parse(body);
    } catch (const json::parse_error& e) {
        co_return serialize(
            standard_error(nullptr, proto::error_kind::parse_error, parser_message(e)));
    } catch (const json::out_of_range&) {
        co_return serialize(number_overflow_error(body));
    }

    if (!request.is_array()) {
        std::optional<json> response = co_await handle(request, ctx);
        if (!response) co_return std::nullopt;
        co_return serialize(*response);
    }

    if (request.empty())
        co_return serialize(standard_error(nullptr, proto::error_kind::invalid_request,
                                           "a batch must hold at least one request"));
    if (request.size() > limits_.max_batch)
        co_return serialize(
            standard_error(nullptr, proto::error_kind::invalid_request,
                           "a batch may hold at most " + std::to_string(limits_.max_batch) +
                               " requests, this one has " + std::to_string(request.size())));

    json responses = json::array();
    for (const auto& element : request) {
        std::optional<json> response = co_await handle(element, ctx);
        if (response) responses.push_back(std::move(*response));
    }
    // A batch of notifications gets no reply at all, not an empty array.
    if (responses.empty()) co_return std::nullopt;
    co_return serialize(responses);
}

json standard_error_response(proto::error_kind kind, std::string detail) {
    return standard_error(nullptr, kind, std::move(detail));
}

std::string serialize(const json& message) {
    return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

json make_notification(std::string_view method, json params) {
    return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

}  // namespace ralph::rpc
