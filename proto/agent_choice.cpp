// The agents of a spec (proto/types.hpp): the loop's own and its fallbacks, the spec as an attempt
// on one of them or as the judge sees it, and the usage quotas they draw on (the ledger's keys).
#include "proto/types.hpp"

#include "common/text.hpp"

#include <stdexcept>

namespace ralph::proto {

agent_choice parse_agent_choice(std::string_view text) {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) return {std::string(text), ""};
    return {std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
}

std::vector<agent_choice> agents_of(const submit_params& spec) {
    std::vector<agent_choice> agents{{spec.agent, spec.model}};
    for (const auto& fallback : spec.fallback) agents.push_back(parse_agent_choice(fallback));
    return agents;
}

submit_params on_agent(const submit_params& spec, const agent_choice& choice) {
    if (choice == agent_choice{spec.agent, spec.model}) return spec;
    submit_params on = spec;
    on.agent = choice.agent;
    on.model = choice.model;
    on.args.clear();
    on.quota_key.clear();  // the loop's own agent's
    return on;
}

std::string quota_of(const submit_params& spec) {
    constexpr std::size_t max_quota_bytes = 64;
    std::string quota = spec.quota_key;
    if (quota.empty() && spec.agent == "command") {
        // The program, without its directory: one script reached by two paths is one quota.
        std::string program;
        try {
            const std::vector<std::string> words = text::split_command_words(spec.command);
            if (!words.empty()) program = words.front();
        } catch (const std::invalid_argument&) {
            // Checked at submit; a command that does not parse runs nothing to hold.
        }
        quota = "command:" + program.substr(program.find_last_of('/') + 1);
    } else if (quota.empty()) {
        quota = spec.agent;
    }
    quota.resize(text::utf8_head(quota, max_quota_bytes).size());
    return quota;
}

std::vector<std::string> quotas_of(const submit_params& spec) {
    std::vector<std::string> quotas;
    for (const auto& choice : agents_of(spec)) quotas.push_back(quota_of(on_agent(spec, choice)));
    return quotas;
}

submit_params as_judge(const submit_params& spec) {
    submit_params judge = spec;
    judge.agent = spec.judge;
    judge.model = spec.judge_model;
    judge.command = spec.judge_command;
    judge.args.clear();
    judge.fallback.clear();
    judge.quota_key.clear();
    return judge;
}

}  // namespace ralph::proto
