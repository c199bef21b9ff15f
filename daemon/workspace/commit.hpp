// What a merge commit (merge.cpp) shares with commit_all (commit.cpp): who makes ralph's commits
// and how their message is kept. Internal to daemon/workspace/.
#pragma once

#include "daemon/workspace/git_repository.hpp"

#include <string>

namespace ralph::workspace {

// The author or the committer (`role`) of ralph's commits: the user's identity, or "ralph
// <ralph@localhost>" for the parts the repository has none of (daemons often run without a
// ~/.gitconfig; a missing identity must not fail the commit, nor replace the user's).
signature_handle identity(git_config* config, const std::string& role, std::string& error);

// The message as `git commit -m` keeps it: trailing spaces and surrounding blank lines dropped,
// one final newline.
std::string cleaned_message(const std::string& message);

}  // namespace ralph::workspace
