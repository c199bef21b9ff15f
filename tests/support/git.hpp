// Test support: the `git` program for the set-ups and oracles of tests on git work trees
// (tests/unit/workspace_test.cpp), and libgit2's configuration, both kept from the user's: the
// tests never read ~/.gitconfig or /etc/gitconfig (an identity, signing, hooks), neither in the
// git of their set-ups nor in the libgit2 of the code under test.
#pragma once

#include <doctest/doctest.h>
#include <git2.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace ralph::test {

// Where libgit2 looks for the user's and the system's configuration (its default: $HOME, the
// XDG directory, /etc). "/dev/null" is not a directory: no configuration is found under it.
inline void set_git_config_search_path(const std::string& directory) {
    for (int level : {GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_GLOBAL,
                      GIT_CONFIG_LEVEL_PROGRAMDATA})
        REQUIRE(git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, directory.c_str()) == 0);
}

// Keeps both git and libgit2 from the user's and the system's configuration, for the rest of
// the process. run_git does it before the first git of a set-up, so before the code under test
// meets a repository.
inline void hermetic_git() {
    ::setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    ::setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    static const bool libgit2_hermetic = [] {
        git_libgit2_init();  // reference-counted: the code under test's own init adds to it
        set_git_config_search_path("/dev/null");
        return true;
    }();
    (void)libgit2_hermetic;
}

struct command_result {
    int status = -1;
    std::string output;
};

// Runs `git -C dir args...` with stdin from /dev/null: its exit status and stdout.
inline command_result run_git(const std::filesystem::path& dir,
                              const std::vector<std::string>& args) {
    hermetic_git();
    std::vector<std::string> all = {"git", "-C", dir.string()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& arg : all) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int out[2];
    REQUIRE(::pipe(out) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    REQUIRE(rc == 0);
    command_result result;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(out[0], buffer, sizeof buffer)) > 0)
        result.output.append(buffer, std::size_t(n));
    ::close(out[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

// run_git for a set-up or a check that must succeed: its stdout.
inline std::string git(const std::filesystem::path& dir, const std::vector<std::string>& args) {
    auto result = run_git(dir, args);
    INFO("git " << args.at(0) << " in " << dir);
    REQUIRE(result.status == 0);
    return result.output;
}

}  // namespace ralph::test
