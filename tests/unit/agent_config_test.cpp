// The variables the agents' own configurations name (daemon/agents/agent_config, config_text),
// what of ralphd's environment each agent then gets, and the configuration failure's fix.
#include "daemon/agents/agent_config.hpp"
#include "daemon/agents/config_text.hpp"
#include "daemon/loop/classify.hpp"
#include "daemon/process/environment.hpp"
#include "tests/support/files.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>

namespace fs = std::filesystem;
using ralph::config_text::toml_string;
using strings = std::vector<std::string>;

namespace {

bool contains(const strings& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

// A loop whose agent finds its configuration under `home`, in `workspace`.
ralph::proto::submit_params loop_in(const fs::path& home, const fs::path& workspace = {}) {
    ralph::proto::submit_params spec;
    spec.workspace = workspace.string();
    spec.env["HOME"] = home.string();
    spec.env["XDG_CONFIG_HOME"] = (home / ".config").string();
    return spec;
}

strings names_of(const std::vector<ralph::configured_variable>& configured) {
    strings names;
    for (const auto& variable : configured) names.push_back(variable.name);
    return names;
}

}  // namespace

TEST_CASE("toml: the strings of a codex config.toml, with the keys leading to each") {
    const auto strings_read = ralph::config_text::toml_strings(R"(# codex
model = "gpt-5"   # a comment
model_provider = "gateway"
retries = 4
when = 1979-05-27 07:32:00

[model_providers.gateway]
name = "Company \"gateway\" \u00e9"
env_key = "MYGATEWAY_KEY"
env_http_headers = { "X-Team" = "TEAM_TOKEN", X-Org = 'ORG_ID' }
query_params = { api-version = "2025-04-01-preview" }

[ model_providers . "azure.eu" ]
env_key = 'AZURE_EU_KEY'

[mcp_servers.docs]
args = ["-y", """multi
line"""]
env_vars = ["DOCS_TOKEN",
  "DOCS_ORG",  # trailing comment
]
mcp_servers.docs.nested = { deep = { key = "DEEP" } }

[[profiles.list]]
instructions = '''
[model_providers.fake]
env_key = "NOT_A_KEY"
'''
)");
    auto has = [&](strings path, const std::string& value) {
        return std::find(strings_read.begin(), strings_read.end(),
                         toml_string{std::move(path), value}) != strings_read.end();
    };
    CHECK(has({"model"}, "gpt-5"));
    CHECK(has({"model_providers", "gateway", "name"}, "Company \"gateway\" \xc3\xa9"));
    CHECK(has({"model_providers", "gateway", "env_key"}, "MYGATEWAY_KEY"));
    CHECK(has({"model_providers", "gateway", "env_http_headers", "X-Team"}, "TEAM_TOKEN"));
    CHECK(has({"model_providers", "gateway", "env_http_headers", "X-Org"}, "ORG_ID"));
    CHECK(has({"model_providers", "azure.eu", "env_key"}, "AZURE_EU_KEY"));
    CHECK(has({"mcp_servers", "docs", "args"}, "multi\nline"));
    CHECK(has({"mcp_servers", "docs", "env_vars"}, "DOCS_TOKEN"));
    CHECK(has({"mcp_servers", "docs", "env_vars"}, "DOCS_ORG"));
    CHECK(has({"mcp_servers", "docs", "mcp_servers", "docs", "nested", "deep", "key"}, "DEEP"));
    // A multi-line string is a value, not tables.
    CHECK(has({"profiles", "list", "instructions"},
              "[model_providers.fake]\nenv_key = \"NOT_A_KEY\"\n"));
    CHECK_FALSE(has({"model_providers", "fake", "env_key"}, "NOT_A_KEY"));
}

TEST_CASE("toml: the reader stops at what it cannot read and keeps what came before") {
    const auto read =
        ralph::config_text::toml_strings("a = \"kept\"\nb = \"unterminated\nc = \"lost\"\n");
    CHECK(read == std::vector<toml_string>{{{"a"}, "kept"}});
    CHECK(ralph::config_text::toml_strings("x = " + std::string(100000, '[')).empty());
    CHECK(ralph::config_text::toml_strings("x = \"\\ud800\"").empty());  // a surrogate
    CHECK(ralph::config_text::toml_strings("").empty());
}

TEST_CASE("references: opencode's {env:NAME}, $NAME and ${NAME}, dotenv's ${NAME}, YAML") {
    using namespace ralph::config_text;
    CHECK(opencode_references(R"({"apiKey": "{env:GW_KEY}", "x": "{env:GW_KEY}{env:}",
        // "{env:COMMENTED}" opencode substitutes in comments too
        "bad": "{env:not a name}", "end": "{env:OPEN)") == strings{"GW_KEY", "COMMENTED"});
    CHECK(dollar_references("$A ${B} ${C:-x} ${F-y} $5 $ ${D E} x$G_1y ${H") ==
          strings{"A", "B", "C", "F", "G_1y"});

    const dotenv_file dotenv = read_dotenv(
        "# a comment\nexport AZURE_API_KEY=${VAULT_AZURE}\nBASE='${NOT_EXPANDED}'\n"
        "VERSION=\"${AZURE_API_KEY}-${OTHER:-x}\"\n");
    CHECK(dotenv.defined == strings{"AZURE_API_KEY", "BASE", "VERSION"});
    CHECK(dotenv.referenced == strings{"VAULT_AZURE", "OTHER"});

    const std::string conf =
        "  model: indented\nmodel:azure/no\nmodel: azure/gpt-4o # mine\n"
        "env-file: 'secrets.env'\n";
    CHECK(yaml_top_level_value(conf, "model") == "azure/gpt-4o");
    CHECK(yaml_top_level_value(conf, "env-file") == "secrets.env");
    CHECK(yaml_top_level_value(conf, "weak-model") == "");
}

TEST_CASE(
    "codex: a model provider's env_key passes, except from a file its --sandbox may rewrite") {
    ralph::test::temp_dir dir;
    const fs::path home = dir.path / "home";
    ralph::test::write_file(home / ".codex" / "config.toml", R"(model_provider = "gw"
[model_providers.gw]
base_url = "http://127.0.0.1:1/v1"
env_key = "MYGATEWAY_KEY"
[model_providers.gw.env_http_headers]
"X-Team" = "TEAM_TOKEN"
[mcp_servers.docs]
bearer_token_env_var = "DOCS_BEARER"
env_vars = ["DOCS_ORG", "not a name"]
)");
    ralph::proto::submit_params spec = loop_in(home);
    const ralph::agent& codex = ralph::codex_agent();
    const strings named = names_of(codex.configured_variables(ralph::place_of(spec)));
    CHECK(named == strings{"MYGATEWAY_KEY", "TEAM_TOKEN", "DOCS_BEARER", "DOCS_ORG"});
    strings variables = ralph::agent_variables(codex, spec);
    CHECK(contains(variables, "OPENAI_*"));
    CHECK(contains(variables, "MYGATEWAY_KEY"));

    // In a --sandbox, ~/.codex is writable: the agent would choose what it gets.
    spec.sandbox = true;
    variables = ralph::agent_variables(codex, spec);
    CHECK(contains(variables, "OPENAI_*"));
    CHECK_FALSE(contains(variables, "MYGATEWAY_KEY"));
    // A CODEX_HOME elsewhere is not.
    ralph::test::write_file(dir.path / "codex-home" / "config.toml",
                            "[model_providers.gw]\nenv_key = \"MYGATEWAY_KEY\"\n");
    spec.env["CODEX_HOME"] = (dir.path / "codex-home").string();
    CHECK(contains(ralph::agent_variables(codex, spec), "MYGATEWAY_KEY"));
}

TEST_CASE(
    "describe_environment: what the agent gets, what its configuration names but is "
    "withheld or unset") {
    ralph::test::temp_dir dir;
    const fs::path home = dir.path / "home";
    ralph::test::write_file(home / ".codex" / "config.toml",
                            "[model_providers.a]\nenv_key = \"RALPH_CFG_TEST_KEY\"\n"
                            "[model_providers.b]\nenv_key = \"RALPH_CFG_TEST_UNSET\"\n");
    ::setenv("RALPH_CFG_TEST_KEY", "secret", 1);
    ::setenv("OPENAI_BASE_URL", "http://127.0.0.1:1", 1);
    ::setenv("RALPH_CFG_TEST_OTHER_SECRET", "secret", 1);
    ::unsetenv("RALPH_CFG_TEST_UNSET");
    const ralph::proto::submit_params spec = loop_in(home);
    const ralph::agent& codex = ralph::codex_agent();

    auto described = ralph::describe_environment(codex, spec, ralph::env_policy());
    CHECK(contains(described.passed, "RALPH_CFG_TEST_KEY"));
    CHECK(contains(described.passed, "OPENAI_BASE_URL"));
    CHECK_FALSE(contains(described.passed, "RALPH_CFG_TEST_OTHER_SECRET"));
    CHECK_FALSE(contains(described.passed, "PATH"));  // every agent gets it
    CHECK(described.withheld.empty());
    CHECK(described.unset == strings{"RALPH_CFG_TEST_UNSET"});

    described = ralph::describe_environment(
        codex, spec, ralph::env_policy({"-RALPH_CFG_TEST_KEY", "-OPENAI_*"}));
    CHECK(described.withheld == strings{"OPENAI_BASE_URL", "RALPH_CFG_TEST_KEY"});
    CHECK_FALSE(contains(described.passed, "RALPH_CFG_TEST_KEY"));
    CHECK_FALSE(contains(described.withheld, "RALPH_CFG_TEST_OTHER_SECRET"));
    ::unsetenv("OPENAI_BASE_URL");
}

TEST_CASE("opencode: {env:NAME} of the global, custom, project and inline configurations") {
    ralph::test::temp_dir dir;
    const fs::path home = dir.path / "home";
    const fs::path repo = dir.path / "repo";
    const fs::path workspace = repo / "service";
    fs::create_directories(repo / ".git");
    ralph::test::write_file(home / ".config" / "opencode" / "opencode.json",
                            R"({"provider": {"gw": {"options": {"apiKey": "{env:GLOBAL_KEY}"}}}})");
    ralph::test::write_file(repo / "opencode.json", R"({"x": "{env:REPO_KEY}"})");
    ralph::test::write_file(workspace / ".opencode" / "opencode.jsonc",
                            "// {env:WORKSPACE_KEY}\n{}");
    ralph::test::write_file(dir.path / "custom.json", R"({"x": "{env:CUSTOM_KEY}"})");
    ralph::proto::submit_params spec = loop_in(home, workspace);
    spec.env["OPENCODE_CONFIG"] = (dir.path / "custom.json").string();
    spec.env["OPENCODE_CONFIG_CONTENT"] = R"({"y": "{env:INLINE_KEY}"})";
    const ralph::agent& opencode = ralph::opencode_agent();
    CHECK(names_of(opencode.configured_variables(ralph::place_of(spec))) ==
          strings{"GLOBAL_KEY", "CUSTOM_KEY", "REPO_KEY", "WORKSPACE_KEY", "INLINE_KEY"});
    // Sandboxed: the workspace's and ~/.config/opencode's files are the agent's to rewrite; the
    // repository's top, above the workspace, is not.
    spec.sandbox = true;
    const strings variables = ralph::agent_variables(opencode, spec);
    for (const char* name : {"CUSTOM_KEY", "REPO_KEY", "INLINE_KEY"})
        CHECK_MESSAGE(contains(variables, name), name);
    for (const char* name : {"GLOBAL_KEY", "WORKSPACE_KEY"})
        CHECK_MESSAGE(!contains(variables, name), name);
}

TEST_CASE("gemini, claude and aider: what their settings and config files name") {
    ralph::test::temp_dir dir;
    const fs::path home = dir.path / "home";
    const fs::path workspace = dir.path / "ws";
    ralph::test::write_file(home / ".gemini" / "settings.json", R"({
        // comments are allowed
        "$schema": "https://example.com/settings.schema.json",
        "mcpServers": {"gw": {"headers": {"Authorization": "Bearer ${GEMINI_MCP_TOKEN}"}}}})");
    ralph::test::write_file(workspace / ".gemini" / "settings.json",
                            R"({"model": {"name": "$WORKSPACE_MODEL"}})");
    ralph::test::write_file(home / ".claude" / "settings.json",
                            R"({"apiKeyHelper": "vault read -field=key \"$VAULT_PATH\"",
                                "env": {"CLAUDE_CODE_USE_BEDROCK": "1"}})");
    ralph::test::write_file(workspace / ".aider.conf.yml", "model: azure/gpt-4o\n");
    ralph::test::write_file(home / ".env", "AZURE_API_KEY=${VAULT_AZURE_KEY}\n");
    ralph::proto::submit_params spec = loop_in(home, workspace);
    const ralph::config_place place = ralph::place_of(spec);

    CHECK(names_of(ralph::gemini_agent().configured_variables(place)) ==
          strings{"GEMINI_MCP_TOKEN", "WORKSPACE_MODEL"});
    CHECK(contains(ralph::gemini_agent().environment_variables(), "GOOGLE_GEMINI_BASE_URL"));
    CHECK(names_of(ralph::claude_agent().configured_variables(place)) ==
          strings{"VAULT_PATH", "AWS_*"});
    CHECK(names_of(ralph::aider_agent().configured_variables(place)) ==
          strings{"AZURE_*", "VAULT_AZURE_KEY"});
    // --model wins over the config file's.
    spec.model = "bedrock/anthropic.claude-3";
    CHECK(names_of(ralph::aider_agent().configured_variables(ralph::place_of(spec))) ==
          strings{"AWS_*", "VAULT_AZURE_KEY"});
    spec.model = "together_ai/llama";
    CHECK(names_of(ralph::aider_agent().configured_variables(ralph::place_of(spec))) ==
          strings{"TOGETHER_AI_*", "TOGETHERAI_*", "VAULT_AZURE_KEY"});
    // Agents without a configuration of their own name nothing.
    CHECK(ralph::kiro_agent().configured_variables(place).empty());
    CHECK(ralph::command_agent().configured_variables(place).empty());
}

TEST_CASE("classify: a missing variable is a configuration failure whose error says the fix") {
    ::setenv("RALPH_CFG_TEST_HELD", "secret", 1);
    ::unsetenv("RALPH_CFG_TEST_ABSENT");
    for (const char* name : {"RALPH_CFG_TEST_HELD", "RALPH_CFG_TEST_ABSENT"}) {
        ralph::proto::attempt_info attempt;
        ralph::agent_stream::summary said;
        said.failure = ralph::agent_stream::failure_hint::config;
        said.error = std::string("Missing environment variable: `") + name + "`.";
        classify_attempt(attempt, ralph::attempt_end::by_itself, 1 << 8, said);
        CHECK(attempt.failure == ralph::proto::failure_class::config);
        CHECK(attempt.error.starts_with(said.error));
        CHECK(attempt.error.find(std::string("--env ") + name + "=") != std::string::npos);
        const bool held = std::string(name) == "RALPH_CFG_TEST_HELD";
        CHECK((attempt.error.find(std::string("--env-policy +") + name) != std::string::npos) ==
              held);
        CHECK((attempt.error.find("not in ralphd's environment") != std::string::npos) == !held);
    }
    ralph::proto::attempt_info attempt;
    ralph::agent_stream::summary said;
    said.failure = ralph::agent_stream::failure_hint::config;
    said.error = "The model `nope` does not exist or you do not have access to it.";
    classify_attempt(attempt, ralph::attempt_end::by_itself, 1 << 8, said);
    CHECK(attempt.failure == ralph::proto::failure_class::config);
    CHECK(attempt.error.find("ralphctl agents") != std::string::npos);

    ralph::proto::attempt_info untrusted;
    said.error = "Gemini CLI is not running in a trusted directory. To proceed, ...";
    classify_attempt(untrusted, ralph::attempt_end::by_itself, 55 << 8, said);
    CHECK(untrusted.failure == ralph::proto::failure_class::config);
    CHECK(untrusted.error.find("--env GEMINI_CLI_TRUST_WORKSPACE=true") != std::string::npos);
    CHECK(untrusted.error.find("ralphctl agents") == std::string::npos);
}
