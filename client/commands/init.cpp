// `ralphctl init [--template default|plan|backlog] [--force] [--print-template] [DIR]`: writes
// the starter files of a loop style (common/templates.hpp) into DIR (default: the current
// directory), creating directories as needed, and says how to start a loop there. It never
// overwrites a file without --force: when any file exists it writes nothing at all and names
// them all (exit 1). --print-template prints the embedded prompt wrapper instead, the start of a
// `.ralph/prompt-template.md`. With --json: {"directory", "files": [...], "template"}.
// This command does not talk to the daemon.
#include "client/commands/commands.hpp"

#include "client/output.hpp"
#include "common/safe_open.hpp"
#include "common/templates.hpp"
#include "common/text.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>

namespace ralph::client {
namespace {

namespace fs = std::filesystem;

struct init_options {
    std::string template_name = "default";
    std::string directory = ".";
    bool force = false;
    bool print_template = false;
};

// A usage error (exit 2) naming the known templates for an unknown one.
CLI::Validator known_template() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            try {
                templates::init_template(value);
            } catch (const std::invalid_argument& e) {
                return e.what();
            }
            return {};
        },
        "NAME");
}

// Writes `relative` in `directory` (canonical) through no symbolic link: a cloned repository may
// have put one at PROMPT.md, and --force must not overwrite what it points to.
void write_file(const fs::path& directory, const fs::path& relative, const std::string& content) {
    try {
        unique_fd fd = safe_open::for_writing(directory, relative, O_WRONLY | O_CREAT | O_TRUNC);
        std::string_view rest = content;
        while (!rest.empty()) {
            const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw std::runtime_error("cannot write " + (directory / relative).string());
            rest.remove_prefix(std::size_t(n));
        }
        if (fd.close() != 0)
            throw std::runtime_error("cannot write " + (directory / relative).string());
    } catch (const std::runtime_error& e) {
        throw client_error(exit_code::failure, e.what());
    }
}

int run_init(const client_context& ctx, const init_options& options) {
    if (options.print_template) {
        if (ctx.json) {
            print_json({{"wrapper", std::string(templates::prompt_wrapper)}});
        } else {
            fmt::print("{}", templates::prompt_wrapper);
            std::fflush(stdout);
        }
        return exit_code::ok;
    }

    const auto& files = templates::init_template(options.template_name);
    fs::path directory = fs::absolute(options.directory).lexically_normal();
    // "/a/b/" normalises to "/a/b/": drop the empty last component.
    if (!directory.has_filename() && directory.has_parent_path() &&
        directory != directory.root_path())
        directory = directory.parent_path();

    // Check everything first, so that a refusal leaves the directory exactly as it was.
    std::vector<std::string> existing;
    for (const auto& file : files) {
        const fs::path path = directory / file.path;
        std::error_code ec;
        for (fs::path parent = path.parent_path();
             !parent.empty() && parent != parent.parent_path(); parent = parent.parent_path()) {
            const auto parent_status = fs::status(parent, ec);
            if (fs::exists(parent_status) && !fs::is_directory(parent_status))
                throw client_error(exit_code::failure,
                                   fmt::format("cannot write {}: {} is not a directory",
                                               path.string(), parent.string()));
        }
        const auto status = fs::symlink_status(path, ec);
        if (!fs::exists(status)) continue;
        if (fs::is_directory(status))
            throw client_error(exit_code::failure,
                               fmt::format("cannot write {}: it is a directory", path.string()));
        existing.push_back(file.path);
    }
    if (!existing.empty() && !options.force) {
        std::string names;
        for (const auto& name : existing) names += (names.empty() ? "" : ", ") + name;
        throw client_error(
            exit_code::failure,
            fmt::format("not overwriting existing files in {}: {}", directory.string(), names),
            "Nothing was written. Use --force to overwrite them.");
    }

    std::error_code ec;
    fs::create_directories(directory, ec);
    const fs::path canonical = fs::canonical(directory, ec);
    if (ec)
        throw client_error(exit_code::failure, fmt::format("cannot create directory {}: {}",
                                                           directory.string(), ec.message()));
    std::vector<std::string> written;
    for (const auto& file : files) {
        write_file(canonical, file.path, file.content);
        written.push_back(file.path);
    }

    if (ctx.json) {
        print_json({{"directory", directory.string()},
                    {"files", written},
                    {"template", options.template_name}});
        return exit_code::ok;
    }
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "Wrote the {} template in {}:\n", options.template_name,
                   directory.string());
    for (const auto& name : written) fmt::format_to(std::back_inserter(out), "  {}\n", name);
    fmt::format_to(std::back_inserter(out),
                   "Edit them, then start a loop with (any agent: see `ralphctl agents`):\n"
                   "  ralphctl submit --workspace {} --agent claude{}\n",
                   text::shell_quote(directory.string()),
                   options.template_name == "backlog" ? " --backlog" : "");
    write_stdout(out);
    return exit_code::ok;
}

}  // namespace

void register_init_command(CLI::App& app, client_context& ctx) {
    auto options = std::make_shared<init_options>();
    auto* cmd = app.add_subcommand(
        "init", "Write the starter files of a loop (PROMPT.md, SPECS.md, ...) without overwriting");
    cmd->add_option("--template", options->template_name,
                    "Loop style: default (PROMPT.md, SPECS.md, CONVENTIONS.md, .ralph/notes.md), "
                    "plan (PROMPT.md, plan.md, progress.md) or backlog (.ralph/prompt.md, "
                    "backlog.md, notepad.md)")
        ->check(known_template())
        ->capture_default_str();
    cmd->add_flag("--force", options->force, "Overwrite files that exist");
    cmd->add_flag("--print-template", options->print_template,
                  "Print the built-in prompt wrapper (to start a .ralph/prompt-template.md) and "
                  "write nothing");
    cmd->add_option("dir", options->directory, "Where to write the files")->capture_default_str();
    cmd->callback([&ctx, options] { ctx.exit_code = run_init(ctx, *options); });
}

}  // namespace ralph::client
