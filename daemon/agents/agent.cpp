#include "daemon/agents/agent.hpp"

#include "daemon/store/output_log.hpp"
#include "proto/errors.hpp"

#include <array>

namespace ralph {
namespace {

constexpr std::size_t final_answer_window = 256 << 10;

}  // namespace

const agent& find_agent(std::string_view name) {
    const std::array<const agent*, 2> agents{&command_agent(), &demo_agent()};
    std::string known;
    for (const agent* candidate : agents) {
        if (candidate->name() == name) return *candidate;
        known += (known.empty() ? "" : ", ") + std::string(candidate->name());
    }
    throw proto::rpc_error(proto::error_kind::agent_unavailable,
                           "unknown agent '" + std::string(name) + "' (known: " + known + ")");
}

void text_output_parser::feed(output_stream stream, std::string_view bytes) {
    if (stream != output_stream::stdout_stream) return;
    if (bytes.size() >= final_answer_window) {
        tail_.assign(bytes.substr(bytes.size() - final_answer_window));
        return;
    }
    tail_.append(bytes);
    // Trim in large steps so a flood does not cost a memmove per read.
    if (tail_.size() > 2 * final_answer_window) tail_.erase(0, tail_.size() - final_answer_window);
}

}  // namespace ralph
