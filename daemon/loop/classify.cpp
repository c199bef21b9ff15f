#include "daemon/loop/classify.hpp"

#include "daemon/agents/config_text.hpp"
#include "daemon/process/environment.hpp"

#include <sys/wait.h>

#include <fmt/format.h>

namespace ralph {
namespace {

// The variable a "Missing environment variable: `NAME`" (codex's words) names; "" when none.
std::string missing_variable(std::string_view error) {
    constexpr std::string_view said = "environment variable: `";
    const auto at = error.find(said);
    if (at == std::string_view::npos) return {};
    const auto start = at + said.size();
    const auto end = error.find('`', start);
    if (end == std::string_view::npos) return {};
    return std::string(error.substr(start, end - start));
}

// A configuration failure's message says what to do about it.
std::string with_fix(const std::string& error) {
    if (const std::string name = missing_variable(error); config_text::is_variable_name(name))
        return error + " — " + missing_variable_fix(name);
    // gemini-cli runs headless only in a folder its user trusted, and a loop's workspace or
    // worktree may be one it has never seen (README, Agents' environment).
    if (error.find("not running in a trusted directory") != std::string::npos)
        return error +
               " — trust the loop's workspace in gemini (its ~/.gemini/trustedFolders.json), or "
               "give gemini GEMINI_CLI_TRUST_WORKSPACE=true: in ralphd's environment, or submit "
               "the loop with --env GEMINI_CLI_TRUST_WORKSPACE=true";
    return error +
           " — the agent's setup needs fixing: `ralphctl agents` shows the variables its "
           "configuration names that it does not get (pass them with ralphd --env-policy +NAME "
           "or submit --env NAME=…), and --model must name a model it knows";
}

}  // namespace

void classify_attempt(proto::attempt_info& attempt, attempt_end end,
                      const std::optional<int>& wait_status, const agent_stream::summary& said) {
    using proto::failure_class;
    using proto::termination;
    if (wait_status && WIFEXITED(*wait_status)) attempt.exit_code = WEXITSTATUS(*wait_status);
    if (wait_status && WIFSIGNALED(*wait_status)) attempt.signal = WTERMSIG(*wait_status);
    // What the agent said about an error, when it said anything.
    failure_class stated = failure_class::none;
    switch (said.failure) {
        case agent_stream::failure_hint::none:
            break;
        case agent_stream::failure_hint::rate_limit:
            stated = failure_class::rate_limit;
            break;
        case agent_stream::failure_hint::transient:
            stated = failure_class::transient;
            break;
        case agent_stream::failure_hint::auth:
            stated = failure_class::auth;
            break;
        case agent_stream::failure_hint::config:
            stated = failure_class::config;
            break;
    }
    if (end == attempt_end::cancelled) {
        attempt.how = termination::cancelled;
    } else if (end == attempt_end::stopped) {
        attempt.how = termination::interrupted;
    } else if (end == attempt_end::timed_out) {
        attempt.how = termination::timeout;
        attempt.failure = failure_class::timeout;
    } else if (!wait_status) {
        attempt.how = termination::interrupted;
        attempt.failure = failure_class::crash;
        attempt.error =
            "the agent's supervisor (ralph-shim) ended without its exit status (killed, or the "
            "machine restarted)";
    } else if (WIFEXITED(*wait_status) && WEXITSTATUS(*wait_status) == 0 &&
               (stated == failure_class::none || said.has_final_answer)) {
        attempt.how = termination::exited;
    } else if (WIFEXITED(*wait_status)) {
        // A non-zero exit, or a zero exit after an error and no answer (claude reports API
        // errors as a "success" result with is_error set).
        attempt.how = termination::failed;
        attempt.failure = stated != failure_class::none ? stated : failure_class::crash;
        attempt.error = !said.error.empty()
                            ? said.error
                            : fmt::format("agent exited with status {}", WEXITSTATUS(*wait_status));
        if (attempt.failure == failure_class::config) attempt.error = with_fix(attempt.error);
    } else {
        attempt.how = termination::crashed;
        attempt.failure = stated != failure_class::none ? stated : failure_class::crash;
        attempt.error = fmt::format("agent killed by signal {}{}", WTERMSIG(*wait_status),
                                    said.error.empty() ? "" : " after: " + said.error);
        if (attempt.failure == failure_class::config) attempt.error = with_fix(attempt.error);
    }
}

}  // namespace ralph
