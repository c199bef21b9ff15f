// Small readers of the configuration formats of the agent CLIs, for one question only: which
// environment variables does a configuration name (daemon/agents/agent_config)? They read the
// user's files, so any bytes are fine: nothing throws, nesting is bounded, and a reader stops at
// what it cannot read, keeping what came before (the CLI itself says what is wrong with its file).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ralph::config_text {

// A string value of a TOML document and the keys leading to it: the table's, then the dotted
// key's, then an inline table's ([model_providers.x] env_key = "K" is {model_providers, x,
// env_key}). The strings of an array share the array's path.
struct toml_string {
    std::vector<std::string> path;
    std::string value;
    bool operator==(const toml_string&) const = default;
};
// Every string value of `text`: tables, arrays of tables, dotted and quoted keys, basic,
// literal and multi-line strings, arrays and inline tables (codex's config.toml). Everything
// else (numbers, dates, booleans) is skipped.
std::vector<toml_string> toml_strings(std::string_view text);

// The NAME of every {env:NAME} in `text`, as opencode substitutes them in its config files (in
// the raw text, comments included).
std::vector<std::string> opencode_references(std::string_view text);

// The NAME of every $NAME and ${NAME} (${NAME:-default} names NAME) in `text`: gemini's
// settings values, and the shell commands of claude's settings (apiKeyHelper...). Only names a
// variable can have: "$5" names none.
std::vector<std::string> dollar_references(std::string_view text);

// A .env file as python-dotenv reads it (aider): the names it defines, and the ${NAME} its
// values refer to (not in single quotes, not defined by the file itself above).
struct dotenv_file {
    std::vector<std::string> defined;
    std::vector<std::string> referenced;
};
dotenv_file read_dotenv(std::string_view text);

// The value of a top-level `key: value` of a YAML file (aider's .aider.conf.yml `model:`),
// unquoted, without a trailing comment; "" when absent or not a plain scalar.
std::string yaml_top_level_value(std::string_view text, std::string_view key);

// Whether `name` can be an environment variable's name: [A-Za-z_][A-Za-z0-9_]*.
bool is_variable_name(std::string_view name);

}  // namespace ralph::config_text
