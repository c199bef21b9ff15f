// libFuzzer target: the daemon's request path from untrusted bytes. The bytes of a connection
// are read the way http_session reads them (one parser per request bounded by
// bound_request_parser, Beast's read algorithms, several requests on one connection) from a
// stream that hands them over in pieces the input chooses; each request is answered by
// answer_request (POST /rpc → rpc::method_registry::handle_text) or refused by
// answer_read_error. The registry has a typed handler for the request type of every method of
// proto/methods.hpp, answering what it read. Each request also passes the web gate of a TCP
// connection (server/web_gate) with a known token.
//
// Input: a mode byte, 8 bytes choosing the pieces, then either the raw bytes of the connection
// (odd mode) or a request body, sent as a well-formed POST /rpc (even mode: mutations of the
// JSON are not lost to a Content-Length that no longer matches).
//
// Oracles: nothing throws; a well-formed POST /rpc is read and answered 200 or 204; every answer
// has a Content-Length equal to its body; every JSON reply is valid JSON (UTF-8 included) and
// valid JSON-RPC 2.0; a request with an id gets a reply, with that id when the request is valid;
// a batch gets no more replies than members and at least one per member with an id; a typed
// handler sees the integers that were sent (a value it cannot hold is refused, never changed);
// the gate lets no request through that does not carry the token, and its own answers are
// 303, 401 or 403 with an empty body.
#include "common/beast.hpp"
#include "daemon/rpc/registry.hpp"
#include "daemon/server/http_rpc.hpp"
#include "daemon/server/web_gate.hpp"
#include "fuzz_input.hpp"
#include "proto/errors.hpp"
#include "proto/methods.hpp"
#include "proto/types.hpp"
#include "tests/support/run_awaitable.hpp"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using namespace ralph;
using nlohmann::json;
namespace http = beast::http;

// A SyncReadStream over the input's pieces, then end of file, as a client that sent them and
// closed its side.
class piece_stream {
  public:
    explicit piece_stream(std::vector<std::string_view> pieces) : pieces_(std::move(pieces)) {}

    template <typename MutableBufferSequence>
    std::size_t read_some(const MutableBufferSequence& buffers, beast::error_code& ec) {
        if (next_ == pieces_.size()) {
            ec = net::error::eof;
            return 0;
        }
        std::string_view& piece = pieces_[next_];
        const std::size_t n = net::buffer_copy(buffers, net::buffer(piece.data(), piece.size()));
        piece.remove_prefix(n);
        if (piece.empty()) ++next_;
        ec = {};
        return n;
    }

    template <typename MutableBufferSequence>
    std::size_t read_some(const MutableBufferSequence& buffers) {
        beast::error_code ec;
        const std::size_t n = read_some(buffers, ec);
        if (ec) throw beast::system_error(ec);
        return n;
    }

  private:
    std::vector<std::string_view> pieces_;
    std::size_t next_ = 0;
};

// A method with the name and request type of `Method` that answers the request it read.
template <typename Method>
struct echo {
    static constexpr const char* name = Method::name;
    using request = typename Method::request;
    using result = json;
    static constexpr proto::method_policy policy = Method::policy;
};

template <typename... Methods>
void add_echoes(rpc::method_registry& r, std::type_identity<std::tuple<Methods...>>) {
    (r.add<echo<Methods>>([](const typename Methods::request& request, rpc::call_context&) {
        return json(request);
    }),
     ...);
}

// Handlers that read the real request types of every method and answer what they read.
const rpc::method_registry& registry() {
    static const rpc::method_registry instance = [] {
        rpc::method_registry r;
        add_echoes(r, std::type_identity<proto::method::all_methods>{});
        // A handler with a bug: the registry must answer -32603 and go on.
        r.add("fuzz.throw", proto::any_caller,
              [](const json&, rpc::call_context&) -> json { throw std::runtime_error("a bug"); });
        return r;
    }();
    return instance;
}

// A valid request object by the specification (section 4), judged here on its own.
bool is_valid_request(const json& request) {
    if (!request.is_object()) return false;
    const auto version = request.find("jsonrpc");
    const auto method = request.find("method");
    const auto params = request.find("params");
    const auto id = request.find("id");
    return version != request.end() && *version == "2.0" && method != request.end() &&
           method->is_string() &&
           (params == request.end() || params->is_array() || params->is_object()) &&
           (id == request.end() || id->is_string() || id->is_number() || id->is_null());
}

void check_response_object(const json& response, const std::string& text) {
    fuzz::check(response.is_object(), "a response is not an object", text);
    fuzz::check(response.value("jsonrpc", json()) == "2.0", "a response without jsonrpc 2.0", text);
    fuzz::check(response.contains("id"), "a response without an id", text);
    const bool result = response.contains("result"), error = response.contains("error");
    fuzz::check(result != error, "a response needs exactly one of result and error", text);
    if (error) {
        const json& e = response["error"];
        fuzz::check(e.is_object() && e.contains("code") && e["code"].is_number_integer() &&
                        e.contains("message") && e["message"].is_string(),
                    "a malformed error object", text);
    }
}

// A typed handler answered what it read: every integer sent must be there unchanged.
void check_integers_read(const json& request, const json& response, const std::string& text) {
    const auto params = request.find("params");
    const auto result = response.find("result");
    if (params == request.end() || !params->is_object() || result == response.end() ||
        !result->is_object())
        return;
    for (const auto& [key, sent] : params->items()) {
        const auto read = result->find(key);
        if (!sent.is_number_integer() || read == result->end() || !read->is_number_integer())
            continue;
        // The same decimal text (nlohmann's == converts between signed and unsigned, so that
        // -1 would equal 18446744073709551615).
        fuzz::check(sent.dump() == read->dump(), "a handler read another integer than was sent",
                    key + " in " + text);
    }
}

// The grammar of a JSON number (RFC 8259 section 6) matches all of `token`.
bool is_json_number(std::string_view token) {
    std::size_t i = 0;
    const auto digits = [&] {
        const std::size_t from = i;
        while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) ++i;
        return i > from;
    };
    if (i < token.size() && token[i] == '-') ++i;
    if (i < token.size() && token[i] == '0')
        ++i;
    else if (!digits())
        return false;
    if (i < token.size() && token[i] == '.' && (++i, !digits())) return false;
    if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
        ++i;
        if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
        if (!digits()) return false;
    }
    return i == token.size();
}

// `body` with each number beyond a double's range (a JSON number token, outside strings, that
// strtod reads as infinite) written as 0: the daemon answers JSON that is valid but for such
// numbers with -32602 rather than a parse error. A scan of its own, not the daemon's method.
std::string zero_overflowing_numbers(std::string_view body) {
    const auto number_char = [](char c) { return c != '\0' && std::strchr("+-.0123456789eE", c); };
    std::string out;
    bool in_string = false, escaped = false;
    for (std::size_t i = 0; i < body.size();) {
        const char c = body[i];
        if (in_string || c == '"' || (c != '-' && !std::isdigit(static_cast<unsigned char>(c)))) {
            if (escaped)
                escaped = false;
            else if (in_string && c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = !in_string;
            out += c;
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < body.size() && number_char(body[end])) ++end;
        const std::string token(body.substr(i, end - i));
        const bool overflows =
            is_json_number(token) && std::isinf(std::strtod(token.c_str(), nullptr));
        out += overflows ? "0" : token;
        i = end;
    }
    return out;
}

// handle_text's reply (nullopt: none) to `body`, judged by the specification.
void check_reply(std::string_view body, const std::optional<std::string>& reply) {
    const json request = json::parse(body, nullptr, false);
    if (!reply) {
        // Only notifications go unanswered: a valid request without an id, or a batch of them.
        fuzz::check(!request.is_discarded(), "no reply to a body that is not JSON");
        if (request.is_array()) {
            fuzz::check(!request.empty(), "no reply to an empty batch");
            for (const json& member : request)
                fuzz::check(is_valid_request(member) && !member.contains("id"),
                            "no reply to a batch with a request", member.dump());
        } else {
            fuzz::check(is_valid_request(request) && !request.contains("id"),
                        "no reply to a request", request.dump());
        }
        return;
    }
    const json response = json::parse(*reply, nullptr, false);
    fuzz::check(!response.is_discarded(), "the reply is not valid JSON", *reply);

    if (request.is_discarded()) {
        check_response_object(response, *reply);
        fuzz::check(response.contains("error"), "a body that cannot be read has a result", *reply);
        if (json::accept(zero_overflowing_numbers(body))) {
            fuzz::check(response["error"].value("code", 0) == -32602,
                        "JSON with a number beyond a double's range needs Invalid params", *reply);
        } else {
            fuzz::check(response["id"].is_null() && response["error"].value("code", 0) == -32700,
                        "a body that is not JSON needs a parse error", *reply);
        }
        return;
    }
    if (request.is_array() && !response.is_array()) {
        // The batch as a whole was refused: empty or too large.
        check_response_object(response, *reply);
        fuzz::check(response.contains("error") && response["id"].is_null(),
                    "a batch answered with a single result", *reply);
        return;
    }
    if (!request.is_array()) {
        check_response_object(response, *reply);
        if (is_valid_request(request) && request.contains("id")) {
            fuzz::check(response["id"] == request["id"], "the reply has another id", *reply);
            check_integers_read(request, response, *reply);
        }
        return;
    }
    fuzz::check(response.is_array() && !response.empty(), "a batch reply must be a non-empty array",
                *reply);
    std::size_t with_id = 0;
    for (const json& member : request) with_id += member.is_object() && member.contains("id");
    fuzz::check(response.size() <= request.size() && response.size() >= with_id,
                "a batch reply has the wrong number of responses", *reply);
    for (const json& member : response) check_response_object(member, *reply);
}

void check_answer(const http_request& req, const http_response& res) {
    const std::string& body = res.body();
    fuzz::check(res[http::field::content_length] == std::to_string(body.size()),
                "Content-Length does not match the body");
    if (path_of(req.target()) == rpc_path && req.method() == http::verb::post) {
        fuzz::check(res.result() == http::status::ok || res.result() == http::status::no_content,
                    "POST /rpc answered with an HTTP error", body);
        return;
    }
    fuzz::check(
        res.result() == http::status::not_found || res.result() == http::status::method_not_allowed,
        "a request not for POST /rpc was not refused");
    fuzz::check(!json::parse(body, nullptr, false).is_discarded(),
                "an error body is not valid JSON", body);
}

// The web gate of a TCP listener on port 7177 whose token is `known_token`.
constexpr std::string_view known_token =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
std::filesystem::path gate_directory;  // removed at exit
web_gate& gate() {
    static web_gate instance = [] {
        char directory[] = "/tmp/fuzz-web-gate-XXXXXX";
        gate_directory = ::mkdtemp(directory);
        std::atexit([] { std::filesystem::remove_all(gate_directory); });
        const std::filesystem::path file = gate_directory / "token";
        std::ofstream(file) << known_token << "\n";
        return web_gate(file, 7177);
    }();
    return instance;
}

void check_gate(const http_request& req) {
    const web_gate::verdict verdict = gate().check(req, "192.0.2.1", web_gate::clock::now());
    std::string request_text;
    for (const auto& field : req) request_text += std::string(to_std(field.value())) + "\n";
    request_text += std::string(to_std(req.target()));
    fuzz::check(verdict.answer.has_value() || request_text.find(known_token) != std::string::npos,
                "the web gate let a request without the token through");
    if (!verdict.answer) return;
    const auto status = verdict.answer->result();
    fuzz::check(status == http::status::see_other || status == http::status::unauthorized ||
                    status == http::status::forbidden,
                "the web gate answered with another status");
    fuzz::check(
        verdict.answer->body().empty() && (*verdict.answer)[http::field::content_length] == "0",
        "the web gate's answer has a body");
}

// Serves one connection as http_session::serve does; returns how many requests were answered.
std::size_t serve(piece_stream& stream) {
    const server_limits limits;
    beast::flat_buffer buffer;
    std::size_t answered = 0;
    for (;;) {
        http_request_parser parser;
        bound_request_parser(parser, limits);
        beast::error_code ec;
        http::read_header(stream, buffer, parser, ec);
        if (!ec && !parser.is_done()) http::read(stream, buffer, parser, ec);
        if (ec) {
            if (auto refusal = answer_read_error(ec, limits))
                fuzz::check(!json::parse(refusal->body(), nullptr, false).is_discarded(),
                            "a refusal's body is not valid JSON", refusal->body());
            return answered;
        }
        const http_request req = parser.release();
        check_gate(req);
        // The daemon hands a WebSocket upgrade over to a websocket_session.
        if (beast::websocket::is_upgrade(req) && path_of(req.target()) == rpc_path) return answered;
        const http_response res = test::run_awaitable(answer_request(req, registry(), false));
        check_answer(req, res);
        if (path_of(req.target()) == rpc_path && req.method() == http::verb::post) {
            check_reply(req.body(), res.result() == http::status::ok
                                        ? std::optional<std::string>(res.body())
                                        : std::nullopt);
        }
        ++answered;
        if (!req.keep_alive()) return answered;
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);  // the handler with a bug is logged
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::input_reader input(std::string_view(reinterpret_cast<const char*>(data), size));
    const bool raw = input.take_byte() & 1;
    const std::uint64_t seed = input.take_u64();
    const std::string_view rest = input.rest();

    if (raw) {
        piece_stream stream(fuzz::split_pieces(rest, seed));
        serve(stream);
        return 0;
    }
    const std::string request =
        "POST /rpc HTTP/1.1\r\nHost: ralph\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(rest.size()) + "\r\n\r\n" + std::string(rest);
    piece_stream stream(fuzz::split_pieces(request, seed));
    const bool fits = rest.size() <= server_limits{}.max_body_bytes;
    fuzz::check(serve(stream) == 1 || !fits, "a well-formed POST /rpc was not answered");
    return 0;
}
