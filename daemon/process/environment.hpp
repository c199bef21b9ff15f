// The environment of the processes ralph starts for a loop (its agent, its --verify check and its
// hooks: notify/hooks.hpp): explicit, never ralphd's whole environment (SECURITY.md). An
// agent receives
// - the variables of ralphd's own environment that the policy passes: by default PATH, HOME,
//   the user, shell, locale, terminal, temporary directory, XDG base directories, proxies and
//   certificate bundles, git's author/committer identity, the variables its own adapter
//   reads (agent::environment_variables: ANTHROPIC_* for claude, OPENAI_* for codex...) and
//   those its own configuration names (agents/agent_config.hpp: a codex model provider's
//   env_key...);
//   `ralphd --env-policy +PATTERN|-PATTERN` passes or withholds more (the last rule that
//   matches a name decides; `+*` passes everything);
// - then the loop's `submit --env K=V` and ralph's RALPH_LOOP_ID, RALPH_ITERATION, RALPH_ATTEMPT
//   (and TMPDIR when the adapter gets a private one), which win over the above;
// - PWD set by spawn_process to the directory it runs in (process.hpp).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ralph {

class env_policy {
  public:
    // The default policy.
    env_policy() = default;
    // The default policy followed by `rules`, each "+PATTERN" or "-PATTERN" (PATTERN: letters,
    // digits, `_` and `*` wildcards). Throws std::invalid_argument naming a bad rule.
    explicit env_policy(const std::vector<std::string>& rules);

    // Why `rule` is not a valid rule, or "" (for the command line's check).
    static std::string rule_error(std::string_view rule);

    // Whether ralphd's variable `name` reaches an agent whose adapter reads the variables
    // matching `agent_variables`.
    bool passes(std::string_view name, const std::vector<std::string>& agent_variables) const;

  private:
    std::vector<std::pair<bool, std::string>> rules_;  // (pass, pattern), in order
};

// Patterns of the variables every agent gets from ralphd's environment unless a rule withholds
// them.
const std::vector<std::string>& default_passed_variables();

// The complete environment ("KEY=VALUE", sorted) of a process ralph starts for a loop: ralphd's
// own variables that `policy` passes to an agent reading `agent_variables`, then `overrides`
// in order (the loop's --env, ralph's variables; the last of a key wins).
std::vector<std::string> agent_environment(
    const env_policy& policy, const std::vector<std::string>& agent_variables,
    const std::vector<std::pair<std::string, std::string>>& overrides);

// The names of ralphd's variables that have a value, sorted.
std::vector<std::string> environment_names();

// Why an agent said it misses the variable `name`, and the fix: ralphd has it and does not pass
// it (the env policy, or a --sandbox loop's agent's own configuration), or ralphd lacks it.
std::string missing_variable_fix(std::string_view name);

// ralphd's whole environment with `overrides` applied: for ralphd's own --on-done hook of a loop
// without --sandbox and the desktop notification (hooks.hpp), and the lookups that must agree
// with them.
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& overrides);

}  // namespace ralph
