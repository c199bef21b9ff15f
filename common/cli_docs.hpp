// What the shell completions and the man pages are generated from: the commands and options of a
// CLI11 program, read from the same definitions that parse its command line, so that neither
// can name an option that does not exist.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ralph::cli_docs {

enum class value_kind { none, text, file, directory };  // none: a flag

struct option_doc {
    std::vector<std::string> flags;  // "-m", "--max-iterations"
    std::string description;
    std::string type;  // CLI11's type name, e.g. "INT:N>=0", "TEXT:DIR"
    value_kind value = value_kind::none;
};

struct command_doc {
    std::string path;  // " daemon status" for `ralphctl daemon status`; "" for the program
    std::string name;
    std::string description;
    std::vector<option_doc> options;       // with those of its option groups; no positionals
    std::vector<std::string> positionals;  // "prompt", "ID", ...
    std::vector<std::string> subcommands;  // names
};

// The program and every command below it, depth first (the program first).
std::vector<command_doc> describe(const CLI::App& app);

// A man page (man(7) macros): NAME, SYNOPSIS, DESCRIPTION, OPTIONS, and COMMANDS with theirs
// (when there are commands), then `more_roff`, sections the caller writes in roff.
std::string man_page(const std::vector<command_doc>& commands, std::string_view section,
                     std::string_view version, std::string_view description,
                     std::string_view more_roff);

}  // namespace ralph::cli_docs
