// `ralphctl completion bash|zsh|fish`: prints the shell's completion script for ralphctl,
// generated from the CLI11 definitions that parse the commands (cli.cpp), so that it offers
// exactly the commands and options there are. meson installs the three scripts where bash-
// completion, zsh and fish look for them. Commands, their subcommands (daemon status, ...) and
// options complete; an option's value completes as a file or a directory when the option checks
// for one (CLI11's FILE / DIR), else not at all.
#include "client/cli.hpp"

#include "client/output.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>

namespace ralph::client {
namespace {

enum class value_kind { none, text, file, directory };

struct option_doc {
    std::vector<std::string> flags;  // "-m", "--max-iterations"
    std::string description;
    value_kind value = value_kind::none;
};

struct command_doc {
    std::string path;  // " daemon status" for `ralphctl daemon status`; "" for ralphctl itself
    std::string name;
    std::string description;
    std::vector<option_doc> options;
    std::vector<std::string> subcommands;  // names
};

value_kind value_of(const CLI::Option& option) {
    if (option.get_expected_max() == 0) return value_kind::none;  // a flag
    const std::string type = option.get_type_name();
    if (type.find("DIR") != std::string::npos) return value_kind::directory;
    if (type.find("FILE") != std::string::npos) return value_kind::file;
    return value_kind::text;
}

// The options of `app` and of its option groups (nameless subcommands, each with a --help of its
// own that the command line never reaches); not the positionals.
std::vector<option_doc> options_of(const CLI::App& app) {
    std::vector<option_doc> docs;
    auto add = [&docs](const CLI::App& from, bool with_help) {
        for (const CLI::Option* option : from.get_options()) {
            if (!option->nonpositional() || (!with_help && option == from.get_help_ptr())) continue;
            option_doc doc;
            for (const auto& name : option->get_snames()) doc.flags.push_back("-" + name);
            for (const auto& name : option->get_lnames()) doc.flags.push_back("--" + name);
            doc.description = option->get_description();
            doc.value = value_of(*option);
            docs.push_back(std::move(doc));
        }
    };
    add(app, true);
    for (const CLI::App* group :
         app.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); }))
        add(*group, false);
    return docs;
}

// ralphctl and every command below it, depth first.
void describe(const CLI::App& app, const std::string& path, std::vector<command_doc>& out) {
    command_doc doc{path, app.get_name(), app.get_description(), options_of(app), {}};
    const auto named =
        app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
    for (const CLI::App* sub : named) doc.subcommands.push_back(sub->get_name());
    out.push_back(std::move(doc));
    for (const CLI::App* sub : named) describe(*sub, path + " " + sub->get_name(), out);
}

// A string in single quotes for any of the three shells.
std::string shell_quoted(std::string_view value) {
    std::string out = "'";
    for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

const char* kind_name(value_kind kind) {
    switch (kind) {
        case value_kind::file:
            return "file";
        case value_kind::directory:
            return "dir";
        default:
            return "text";
    }
}

// Shell functions bash and zsh share: the subcommands and the options of a command path, and
// what kind of value an option of a path takes (nothing printed: a flag or no such option).
std::string data_functions(const std::vector<command_doc>& commands) {
    std::string script = "_ralphctl_subcommands() {\n    case $1 in\n";
    for (const auto& command : commands)
        if (!command.subcommands.empty())
            script += fmt::format("        {}) echo {} ;;\n", shell_quoted(command.path),
                                  shell_quoted(text::join_words(command.subcommands, " ")));
    // A command's own options; ralphctl's (global) ones are offered with every command anyway.
    script += "    esac\n}\n_ralphctl_options() {\n    case $1 in\n";
    std::set<std::string> global;
    for (const auto& command : commands) {
        std::vector<std::string> flags;
        for (const auto& option : command.options)
            for (const auto& flag : option.flags)
                if (command.path.empty() ? global.insert(flag).second : !global.count(flag))
                    flags.push_back(flag);
        script += fmt::format("        {}) echo {} ;;\n", shell_quoted(command.path),
                              shell_quoted(text::join_words(flags, " ")));
    }
    script += "    esac\n}\n_ralphctl_value() {\n    case \"$1 $2\" in\n";
    const command_doc& root = commands.front();
    for (const auto& command : commands)
        for (const auto& option : command.options) {
            if (option.value == value_kind::none) continue;
            // Global options stand anywhere (CLI11's fallthrough).
            std::vector<std::string> patterns;
            for (const auto& flag : option.flags)
                patterns.push_back(&command == &root ? "*" + shell_quoted(" " + flag)
                                                     : shell_quoted(command.path + " " + flag));
            script += fmt::format("        {}) echo {} ;;\n", text::join_words(patterns, "|"),
                                  kind_name(option.value));
        }
    return script + "    esac\n}\n";
}

// Walks the words before the cursor: `key` becomes the path of the command being completed
// (words that name a subcommand of it), skipping options and the values they take.
constexpr const char* walk_words = R"sh(    local key="" skip=0 word i subcommands
    for ((i = FIRST; i < LAST; i++)); do
        word=${WORDS[i]}
        if ((skip)); then skip=0; continue; fi
        if [[ $word == -* ]]; then
            [[ $word != *=* && -n $(_ralphctl_value "$key" "$word") ]] && skip=1
            continue
        fi
        subcommands=" $(_ralphctl_subcommands "$key") "
        [[ $subcommands == *" $word "* ]] && key="$key $word"
    done
)sh";

std::string with_words(std::string_view first, std::string_view last, std::string_view words) {
    std::string script = walk_words;
    for (auto [from, to] :
         {std::pair{std::string_view("FIRST"), first}, {"LAST", last}, {"WORDS", words}})
        script.replace(script.find(from), from.size(), to);
    return script;
}

std::string bash_script(const std::vector<command_doc>& commands) {
    return "# bash completion for ralphctl; generated by `ralphctl completion bash`.\n" +
           data_functions(commands) + "_ralphctl() {\n" +
           with_words("1", "COMP_CWORD", "COMP_WORDS") +
           R"sh(    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    case $(_ralphctl_value "$key" "$prev") in
        file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;
        text) COMPREPLY=(); return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_ralphctl_options "$key") ${key:+$(_ralphctl_options "")}" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_ralphctl_subcommands "$key")" -- "$cur"))
    fi
}
complete -F _ralphctl ralphctl
)sh";
}

std::string zsh_script(const std::vector<command_doc>& commands) {
    return "#compdef ralphctl\n# zsh completion for ralphctl; generated by `ralphctl completion "
           "zsh`.\n" +
           data_functions(commands) + "_ralphctl() {\n" + with_words("2", "CURRENT", "words") +
           R"sh(    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    case $(_ralphctl_value "$key" "$prev") in
        file) _files; return ;;
        dir) _files -/; return ;;
        text) return 1 ;;
    esac
    if [[ $cur == -* ]]; then
        compadd -- ${=$(_ralphctl_options "$key")} ${key:+${=$(_ralphctl_options "")}}
    else
        compadd -- ${=$(_ralphctl_subcommands "$key")}
    fi
}
_ralphctl "$@"
)sh";
}

std::string fish_script(const std::vector<command_doc>& commands) {
    std::string script =
        "# fish completion for ralphctl; generated by `ralphctl completion fish`.\n"
        "complete -c ralphctl -f\n";
    for (const auto& command : commands) {
        // Where this command's words apply: after its path, before any of its subcommands.
        std::vector<std::string> conditions;
        std::vector<std::string> path_words;
        for (std::size_t start = 1; start < command.path.size();) {
            const auto end = command.path.find(' ', start);
            path_words.push_back(
                command.path.substr(start, end == std::string::npos ? end : end - start));
            start = end == std::string::npos ? command.path.size() : end + 1;
        }
        for (const auto& word : path_words)
            conditions.push_back("__fish_seen_subcommand_from " + word);
        if (!command.subcommands.empty())
            conditions.push_back("not __fish_seen_subcommand_from " +
                                 text::join_words(command.subcommands, " "));
        const std::string condition =
            conditions.empty() ? std::string()
                               : " -n " + shell_quoted(text::join_words(conditions, "; and "));
        for (const auto& name : command.subcommands) {
            const auto sub = std::find_if(
                commands.begin(), commands.end(),
                [&](const command_doc& c) { return c.path == command.path + " " + name; });
            script += fmt::format("complete -c ralphctl{} -a {} -d {}\n", condition,
                                  shell_quoted(name), shell_quoted(sub->description));
        }
        // A command's options follow its words; those of ralphctl itself stand anywhere.
        const std::vector<std::string> seen(conditions.begin(),
                                            conditions.begin() + long(path_words.size()));
        const std::string option_condition =
            seen.empty() ? std::string() : " -n " + shell_quoted(text::join_words(seen, "; and "));
        for (const auto& option : command.options) {
            std::string flags;
            for (const auto& flag : option.flags)
                flags += flag.starts_with("--") ? " -l " + shell_quoted(flag.substr(2))
                                                : " -s " + shell_quoted(flag.substr(1));
            const char* value = option.value == value_kind::none   ? ""
                                : option.value == value_kind::file ? " -r -F"
                                : option.value == value_kind::directory
                                    ? " -r -f -a '(__fish_complete_directories)'"
                                    : " -x";
            script += fmt::format("complete -c ralphctl{}{}{} -d {}\n", option_condition, flags,
                                  value, shell_quoted(option.description));
        }
    }
    return script;
}

}  // namespace

void register_completion_command(CLI::App& app, client_context& ctx) {
    auto shell = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand(
        "completion",
        "Print the completion script of a shell: bash, zsh or fish (installed with ralph)");
    cmd->add_option("shell", *shell, "bash, zsh or fish")
        ->required()
        ->check(CLI::IsMember({"bash", "zsh", "fish"}));
    cmd->callback([&ctx, shell] {
        // Every command's options, whatever this run of ralphctl defined.
        client_context scratch = ctx;
        CLI::App full("", "ralphctl");
        define_cli(full, scratch, {});
        std::vector<command_doc> commands;
        describe(full, "", commands);
        const std::string script = *shell == "bash"  ? bash_script(commands)
                                   : *shell == "zsh" ? zsh_script(commands)
                                                     : fish_script(commands);
        std::fwrite(script.data(), 1, script.size(), stdout);
        ctx.exit_code = exit_code::ok;
    });
}

}  // namespace ralph::client
