// libFuzzer target: the readers of the agent CLIs' configuration files (daemon/agents/
// config_text): codex's TOML, opencode's {env:NAME}, $NAME references, .env files and YAML keys,
// all read from the user's files (and, in a workspace, from what an agent wrote).
//
// Input: two sections (fuzz_input.hpp): a config file's text, and a value.
//
// Oracles, from config_text.hpp:
// - nothing throws and nothing recurses without bound (deep nesting is in the corpus's reach);
// - every name a reader returns can name a variable;
// - every TOML string is valid UTF-8 when the text is (escapes make only valid code points), and
//   every path has a key;
// - any valid UTF-8 value written as a TOML basic string (escaped), or as a literal string when
//   it can be one, in a table, reads back as itself with its table's and key's path;
// - {env:NAME} and ${NAME} around a valid name are found.
#include "daemon/agents/config_text.hpp"
#include "fuzz_input.hpp"

#include <cstdint>
#include <string>

namespace {

using namespace ralph;

void check_names(const std::vector<std::string>& names, std::string_view what) {
    for (const auto& name : names) fuzz::check(config_text::is_variable_name(name), what, name);
}

// `value` as a TOML basic string.
std::string basic_string(std::string_view value) {
    std::string out = "\"";
    for (unsigned char c : value) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c < 0x20 || c == 0x7f) {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

void check_toml(std::string_view text, std::string_view value) {
    for (const auto& string : config_text::toml_strings(text)) {
        fuzz::check(!string.path.empty(), "a TOML string without a key");
        if (fuzz::is_valid_utf8(text))
            fuzz::check(fuzz::is_valid_utf8(string.value), "TOML made invalid UTF-8", string.value);
    }
    if (!fuzz::is_valid_utf8(value)) return;
    const std::vector<config_text::toml_string> expected{{{"table", "key"}, std::string(value)}};
    const std::string basic = "[table]\nkey = " + basic_string(value) + " # comment\n";
    fuzz::check(config_text::toml_strings(basic) == expected, "a basic string did not read back",
                basic);
    if (value.find_first_of("'\n\r") == std::string_view::npos) {
        const std::string literal = "[table]\nkey = '" + std::string(value) + "'";
        fuzz::check(config_text::toml_strings(literal) == expected,
                    "a literal string did not read back", literal);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto sections =
        fuzz::split_sections(std::string_view(reinterpret_cast<const char*>(data), size), 2);
    const std::string_view text = sections[0], value = sections[1];

    check_toml(text, value);
    check_names(config_text::opencode_references(text), "opencode_references");
    check_names(config_text::dollar_references(text), "dollar_references");
    const config_text::dotenv_file dotenv = config_text::read_dotenv(text);
    check_names(dotenv.defined, "read_dotenv defined");
    check_names(dotenv.referenced, "read_dotenv referenced");
    (void)config_text::yaml_top_level_value(text, "model");
    (void)config_text::yaml_top_level_value(text, value);

    if (config_text::is_variable_name(value)) {
        const std::string name(value);
        const auto found = config_text::opencode_references("{env:" + name + "}");
        fuzz::check(found.size() == 1 && found[0] == name, "{env:NAME} not found", name);
        const auto dollar = config_text::dollar_references("${" + name + "}");
        fuzz::check(dollar.size() == 1 && dollar[0] == name, "${NAME} not found", name);
    }
    return 0;
}
