#include "common/cli_docs.hpp"

namespace ralph::cli_docs {
namespace {

value_kind value_of(const CLI::Option& option) {
    if (option.get_expected_max() == 0) return value_kind::none;
    const std::string type = option.get_type_name();
    if (type.find("DIR") != std::string::npos) return value_kind::directory;
    if (type.find("FILE") != std::string::npos) return value_kind::file;
    return value_kind::text;
}

// The options of `app` and of its option groups (nameless subcommands, each with a --help of its
// own that the command line never reaches), and the names of its positionals.
void add_options(const CLI::App& app, command_doc& doc) {
    auto add = [&doc](const CLI::App& from, bool with_help) {
        for (const CLI::Option* option : from.get_options()) {
            if (!option->nonpositional()) {
                doc.positionals.push_back(option->get_name());
                continue;
            }
            if (option->get_group().empty()) continue;  // hidden from --help: from here too
            if (!with_help && option == from.get_help_ptr()) continue;
            option_doc entry;
            for (const auto& name : option->get_snames()) entry.flags.push_back("-" + name);
            for (const auto& name : option->get_lnames()) entry.flags.push_back("--" + name);
            entry.description = option->get_description();
            entry.type = option->get_type_name();
            entry.value = value_of(*option);
            doc.options.push_back(std::move(entry));
        }
    };
    add(app, true);
    for (const CLI::App* group :
         app.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); }))
        add(*group, false);
}

void describe(const CLI::App& app, const std::string& path, std::vector<command_doc>& out) {
    command_doc doc{path, app.get_name(), app.get_description(), {}, {}, {}};
    add_options(app, doc);
    // Commands hidden from --help (an empty group) are left out here too.
    const auto named = app.get_subcommands(
        [](const CLI::App* sub) { return !sub->get_name().empty() && !sub->get_group().empty(); });
    for (const CLI::App* sub : named) doc.subcommands.push_back(sub->get_name());
    out.push_back(std::move(doc));
    for (const CLI::App* sub : named) describe(*sub, path + " " + sub->get_name(), out);
}

// Text for roff: backslashes and hyphens escaped, no line starting with a control character.
std::string roff(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '\\')
            out += "\\e";
        else if (c == '-')
            out += "\\-";
        else
            out += c;
        if (c == '\n') out += "\\&";
    }
    if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
    return out;
}

std::string upper(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::string option_entries(const std::vector<option_doc>& options) {
    std::string out;
    for (const auto& option : options) {
        out += ".TP\n";
        std::string flags;
        for (const auto& flag : option.flags)
            flags += (flags.empty() ? "\\fB" : ", \\fB") + roff(flag) + "\\fR";
        if (option.value != value_kind::none) flags += " \\fI" + roff(option.type) + "\\fR";
        out += flags + "\n" + roff(option.description) + "\n";
    }
    return out;
}

}  // namespace

std::vector<command_doc> describe(const CLI::App& app) {
    std::vector<command_doc> out;
    describe(app, "", out);
    return out;
}

std::string man_page(const std::vector<command_doc>& commands, std::string_view section,
                     std::string_view version, std::string_view description,
                     std::string_view more_roff) {
    const command_doc& program = commands.front();
    std::string out = ".TH " + upper(program.name) + " " + std::string(section) + " \"\" \"" +
                      program.name + " " + std::string(version) + "\"\n";
    out += ".SH NAME\n" + program.name + " \\- " + roff(program.description) + "\n";
    out += ".SH SYNOPSIS\n.B " + program.name + "\n[\\fIOPTIONS\\fR]";
    if (!program.subcommands.empty()) out += " \\fICOMMAND\\fR [\\fIARGS\\fR]";
    out += "\n.SH DESCRIPTION\n" + std::string(description) + "\n";
    out += ".SH OPTIONS\n" + option_entries(program.options);
    if (commands.size() > 1) out += ".SH COMMANDS\n";
    for (std::size_t i = 1; i < commands.size(); ++i) {
        const auto& command = commands[i];
        out += ".SS \"" + roff(program.name + command.path);
        for (const auto& positional : command.positionals) out += " " + upper(positional);
        out += "\"\n" + roff(command.description) + "\n";
        if (!command.options.empty()) out += ".RS\n" + option_entries(command.options) + ".RE\n";
    }
    return out + std::string(more_roff);
}

}  // namespace ralph::cli_docs
