// What an on-done hook is given: its argv, its directory and the loop's outcome in its
// environment; the environment and PATH lookup that hooks and agents share. (Running hooks is
// tested end to end in tests/integration/test_hooks_worktree.py.)
#include "daemon/notify/hooks.hpp"
#include "common/paths.hpp"
#include "daemon/process/environment.hpp"
#include "daemon/process/process.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> as_map(
    const std::vector<std::pair<std::string, std::string>>& env) {
    return {env.begin(), env.end()};
}

ralph::proto::loop_info ended_loop() {
    ralph::proto::loop_info loop;
    loop.id = 7;
    loop.spec.name = "refactor";
    loop.spec.workspace = "/work/app";
    loop.spec.agent = "claude";
    loop.state = ralph::proto::loop_state::completed;
    loop.stop_reason = "completion signal <promise>COMPLETE</promise> in iteration 3";
    loop.iterations = 3;
    loop.usage.input_tokens = 1200;
    loop.usage.output_tokens = 34;
    return loop;
}

}  // namespace

TEST_CASE("hooks: the environment describes the ended loop; an unknown cost is empty") {
    auto loop = ended_loop();
    auto env = as_map(ralph::hook_environment(loop, "loop"));
    CHECK(env.at("RALPH_HOOK") == "loop");
    CHECK(env.at("RALPH_LOOP_ID") == "7");
    CHECK(env.at("RALPH_LOOP_NAME") == "refactor");
    CHECK(env.at("RALPH_STATE") == "completed");
    CHECK(env.at("RALPH_STOP_REASON") == loop.stop_reason);
    CHECK(env.at("RALPH_ITERATIONS") == "3");
    CHECK(env.at("RALPH_WORKSPACE") == "/work/app");
    CHECK(env.at("RALPH_WORKTREE_BRANCH") == "");
    CHECK(env.at("RALPH_AGENT") == "claude");
    CHECK(env.at("RALPH_INPUT_TOKENS") == "1200");
    CHECK(env.at("RALPH_OUTPUT_TOKENS") == "34");
    CHECK(env.at("RALPH_COST_USD") == "");

    loop.usage.cost_usd = 0.0125;
    loop.spec.worktree_branch = "ralph/loop-7";
    env = as_map(ralph::hook_environment(loop, "daemon"));
    CHECK(env.at("RALPH_HOOK") == "daemon");
    CHECK(env.at("RALPH_COST_USD") == "0.0125");
    CHECK(env.at("RALPH_WORKTREE_BRANCH") == "ralph/loop-7");
}

TEST_CASE("hooks: the command is split like a template and never interpreted") {
    CHECK(ralph::hook_argv("notify 'loop done' $HOME;x", "/w") ==
          std::vector<std::string>{"notify", "loop done", "$HOME;x"});
    // A relative path is relative to where the hook runs; names and absolute paths stay.
    CHECK(ralph::hook_argv("./scripts/done.sh a", "/w/app") ==
          std::vector<std::string>{"/w/app/scripts/done.sh", "a"});
    CHECK(ralph::hook_argv("/bin/true", "/w").front() == "/bin/true");
    CHECK_THROWS_AS(ralph::hook_argv("say 'unterminated", "/w"), std::invalid_argument);
    CHECK_THROWS_AS(ralph::hook_argv("  ", "/w"), std::invalid_argument);
}

TEST_CASE("hooks: they run in the workspace, else in the submitted one, else nowhere") {
    ralph::proto::submit_params spec;
    spec.workspace = fs::temp_directory_path().string();
    CHECK(ralph::hook_directory(spec) == spec.workspace);
    spec.workspace = "/nonexistent/ralph/worktrees/loop-1";
    CHECK(ralph::hook_directory(spec) == "");
    spec.worktree_source = fs::temp_directory_path().string();
    CHECK(ralph::hook_directory(spec) == spec.worktree_source);
}

TEST_CASE("environment_with: the daemon's environment with overrides, the last of a key winning") {
    ::setenv("RALPH_ENV_TEST_KEPT", "daemon", 1);
    ::setenv("RALPH_ENV_TEST_REPLACED", "daemon", 1);
    const std::vector<std::string> env =
        ralph::environment_with({{"RALPH_ENV_TEST_REPLACED", "first"},
                                 {"RALPH_ENV_TEST_NEW", "new"},
                                 {"RALPH_ENV_TEST_REPLACED", "loop"}});
    std::map<std::string, int> seen;
    for (const auto& entry : env) ++seen[entry.substr(0, entry.find('='))];
    // Not a structured binding: CHECK_MESSAGE refers to it from a lambda, which Clang 14 refuses.
    for (const auto& entry : seen) CHECK_MESSAGE(entry.second == 1, entry.first);
    auto has = [&env](const std::string& entry) {
        return std::find(env.begin(), env.end(), entry) != env.end();
    };
    CHECK(has("RALPH_ENV_TEST_KEPT=daemon"));
    CHECK(has("RALPH_ENV_TEST_REPLACED=loop"));
    CHECK(has("RALPH_ENV_TEST_NEW=new"));
    CHECK(seen.size() == env.size());
}

TEST_CASE("search_path_with: the PATH of environment_with(loop_env), without building it") {
    const char* original = std::getenv("PATH");
    const std::string saved = original ? original : "";
    ::setenv("PATH", "/ralph/daemon/bin:/usr/bin", 1);
    auto both = [](const std::map<std::string, std::string>& loop_env) {
        const std::vector<std::pair<std::string, std::string>> overrides(loop_env.begin(),
                                                                         loop_env.end());
        CHECK(ralph::search_path_with(loop_env) ==
              ralph::search_path_of(ralph::environment_with(overrides)));
        return ralph::search_path_with(loop_env);
    };
    CHECK(both({}) == "/ralph/daemon/bin:/usr/bin");
    CHECK(both({{"HOME", "/x"}}) == "/ralph/daemon/bin:/usr/bin");
    CHECK(both({{"PATH", "/loop/bin"}}) == "/loop/bin");
    ::unsetenv("PATH");
    CHECK(both({}) == "/usr/local/bin:/usr/bin:/bin");
    if (original) ::setenv("PATH", saved.c_str(), 1);
}

TEST_CASE("find_executable: the first executable file of that name along the search path") {
    const fs::path dir = fs::temp_directory_path() / ("ralph-find-" + std::to_string(::getpid()));
    fs::create_directories(dir / "second");
    auto make = [](const fs::path& path, fs::perms perms) {
        std::ofstream(path) << "#!/bin/sh\n";
        fs::permissions(path, perms);
    };
    make(dir / "tool", fs::perms::owner_all);
    make(dir / "second" / "tool", fs::perms::owner_all);
    make(dir / "plain", fs::perms::owner_read | fs::perms::owner_write);
    fs::create_directories(dir / "subdir");
    const std::string search =
        "/nonexistent/ralph:" + dir.string() + ":" + (dir / "second").string();
    CHECK(ralph::paths::find_executable("tool", search) == dir / "tool");
    CHECK(
        ralph::paths::find_executable("tool", "/nonexistent/ralph:" + (dir / "second").string()) ==
        dir / "second" / "tool");
    CHECK(ralph::paths::find_executable("plain", search).empty());   // not executable
    CHECK(ralph::paths::find_executable("subdir", search).empty());  // a directory
    CHECK(ralph::paths::find_executable("missing", search).empty());
    CHECK(ralph::paths::find_executable((dir / "tool").string(), "") == dir / "tool");
    CHECK(ralph::paths::find_executable((dir / "plain").string(), search).empty());
    // Relative to the directory the program is to run in.
    CHECK(ralph::paths::find_executable("./tool", "/nonexistent/ralph", dir) == dir / "tool");
    CHECK(ralph::paths::find_executable("second/tool", "", dir) == dir / "second" / "tool");
    CHECK(ralph::paths::find_executable("tool", "/nonexistent/ralph:", dir) == dir / "tool");
    CHECK(ralph::paths::find_executable("./plain", "", dir).empty());
    fs::remove_all(dir);
}

TEST_CASE(
    "env_policy: defaults and the agent's own variables pass, the last matching rule decides") {
    const ralph::env_policy defaults;
    const std::vector<std::string> claude{"ANTHROPIC_*", "CLAUDE_*"};
    for (const char* name : {"PATH", "HOME", "LANG", "LC_ALL", "https_proxy", "TERM"})
        CHECK_MESSAGE(defaults.passes(name, {}), name);
    for (const char* name : {"AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "GIT_DIR", "PWD", "OLDPWD",
                             "RALPH_SOCKET", "SSH_AUTH_SOCK"})
        CHECK_MESSAGE(!defaults.passes(name, claude), name);
    CHECK(defaults.passes("ANTHROPIC_API_KEY", claude));
    CHECK_FALSE(defaults.passes("ANTHROPIC_API_KEY", {}));

    const ralph::env_policy custom({"+AWS_*", "-ANTHROPIC_API_KEY", "-LANG", "+LANG"});
    CHECK(custom.passes("AWS_SECRET_ACCESS_KEY", claude));
    CHECK_FALSE(custom.passes("ANTHROPIC_API_KEY", claude));
    CHECK(custom.passes("ANTHROPIC_BASE_URL", claude));
    CHECK(custom.passes("LANG", {}));
    CHECK(ralph::env_policy({"+*"}).passes("ANYTHING", {}));
    CHECK(ralph::env_policy({"-*"}).passes("PATH", {}));  // PATH always passes

    CHECK(ralph::env_policy::rule_error("AWS_*").find("+PATTERN") != std::string::npos);
    CHECK(ralph::env_policy::rule_error("+A B") != "");
    CHECK(ralph::env_policy::rule_error("-PATH") != "");
    CHECK_THROWS_AS(ralph::env_policy({"+"}), std::invalid_argument);
}

TEST_CASE("agent_environment: only what the policy passes, then the overrides") {
    ::setenv("RALPH_ENV_TEST_SECRET", "daemon", 1);
    ::setenv("RALPH_ENV_TEST_AGENT_KEY", "key", 1);
    const std::vector<std::string> env = ralph::agent_environment(
        ralph::env_policy(), {"RALPH_ENV_TEST_AGENT_*"}, {{"LOOP_VAR", "loop"}});
    auto has = [&env](const std::string& entry) {
        return std::find(env.begin(), env.end(), entry) != env.end();
    };
    CHECK(has("RALPH_ENV_TEST_AGENT_KEY=key"));
    CHECK(has("LOOP_VAR=loop"));
    for (const auto& entry : env) CHECK_FALSE(entry.starts_with("RALPH_ENV_TEST_SECRET="));
}

TEST_CASE(
    "hooks: a loop's own hook and every hook of a sandboxed loop get the loop's environment") {
    ::setenv("RALPH_ENV_TEST_HOOK_SECRET", "daemon", 1);
    auto loop = ended_loop();
    loop.spec.env = {{"LOOP_VAR", "loop"}};
    auto names = [](const std::vector<std::string>& env) {
        std::map<std::string, std::string> found;
        for (const auto& entry : env)
            found[entry.substr(0, entry.find('='))] = entry.substr(entry.find('=') + 1);
        return found;
    };
    const ralph::env_policy policy;
    auto own = names(ralph::hook_process_environment(loop, "loop", policy));
    CHECK(own.count("RALPH_ENV_TEST_HOOK_SECRET") == 0);
    CHECK(own.at("LOOP_VAR") == "loop");
    CHECK(own.at("RALPH_HOOK") == "loop");
    CHECK(own.count("PATH") == 1);
    // ralphd's own hook of a loop without --sandbox, and the notification: ralphd's environment.
    for (const char* hook : {"daemon", "notify"}) {
        auto daemons = names(ralph::hook_process_environment(loop, hook, policy));
        CHECK_MESSAGE(daemons.at("RALPH_ENV_TEST_HOOK_SECRET") == "daemon", hook);
        CHECK_MESSAGE(daemons.count("LOOP_VAR") == 0, hook);
        CHECK_MESSAGE(daemons.at("RALPH_HOOK") == hook, hook);
    }
    loop.spec.sandbox = true;
    auto sandboxed = names(ralph::hook_process_environment(loop, "daemon", policy));
    CHECK(sandboxed.count("RALPH_ENV_TEST_HOOK_SECRET") == 0);
    CHECK(sandboxed.at("LOOP_VAR") == "loop");
    // The policy decides as for the agent.
    own = names(ralph::hook_process_environment(loop, "loop",
                                                ralph::env_policy({"+RALPH_ENV_TEST_HOOK_*"})));
    CHECK(own.at("RALPH_ENV_TEST_HOOK_SECRET") == "daemon");
}
