// ralphctl's command line: the global options and the commands (CLI11), defined in one place for
// parsing (main.cpp) and for the shell completions generated from it (commands/completion.cpp).
#pragma once

#include "client/commands/commands.hpp"
#include "common/cli_docs.hpp"

#include <string_view>
#include <vector>

namespace ralph::client {

// The command word of the arguments: the first that is neither an option nor --socket's (or
// --host's, -H's) value.
std::string_view command_word(int argc, char** argv);

// What --host or $RALPH_HOST names, for `command`: an address (resolve_host). `auto` makes
// submit place its loop on the host with the most room (ctx.place_anywhere); for any other
// command, which acts on a daemon it is told, it is a usage error saying so.
std::string host_address(client_context& ctx, const std::string& value, std::string_view command);

// Names `app` and adds the global options and the command named `command`, or every command when
// no command has that name (help, errors). Building every command's options is a third of
// ralphctl's start-up, and scripts run it often.
void define_cli(CLI::App& app, client_context& ctx, std::string_view command);

// Every command and option of ralphctl, whichever this run defined: for the completions and the
// manual page.
std::vector<cli_docs::command_doc> describe_cli();

}  // namespace ralph::client
