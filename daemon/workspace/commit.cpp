// commit_all (see workspace.hpp): the workspace staged as `git add -A -- .` and committed as
// `git commit -- .`, with no hook and no signature; and the identity and message of every commit
// ralph makes.
#include "daemon/workspace/commit.hpp"

#include "daemon/workspace/staging.hpp"
#include "daemon/workspace/workspace.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace ralph::workspace {
namespace {

constexpr const char* empty_tree_id = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

// The tree `git commit -- .` commits: HEAD's, with the workspace's part as `index` has it, so
// that what the user staged elsewhere stays staged and out of the commit. Written to the
// repository's objects through an index of its own, in memory.
bool tree_to_commit(git_repository* repo, git_index* index, git_commit* parent,
                    const repository& workspace, git_oid& tree_id, std::string& error) {
    const std::string under = workspace.under();
    index_handle staged;
    tree_handle head_tree;
    int code = into(staged, git_index_new);
    if (code == 0 && parent != nullptr && !under.empty()) {
        code = into(head_tree, git_commit_tree, parent);
        if (code == 0) code = git_index_read_tree(staged.get(), head_tree.get());
        if (code == 0) code = git_index_remove_directory(staged.get(), workspace.prefix.c_str(), 0);
    }
    for (std::size_t i = 0; code == 0 && i < git_index_entrycount(index); ++i) {
        const git_index_entry* entry = git_index_get_byindex(index, i);
        if (git_index_entry_stage(entry) == 0 && std::string_view(entry->path).starts_with(under))
            code = git_index_add(staged.get(), entry);
    }
    if (code == 0) code = git_index_write_tree_to(&tree_id, staged.get(), repo);
    if (code < 0) append_error(error, git_failure("cannot write the tree to commit"));
    return code == 0;
}

// One of the names of an author or committer, as git finds it: the environment variable
// (GIT_AUTHOR_NAME...), then the configuration (author.name, then user.name...), then ralph's.
std::string identity_part(git_config* config, const std::string& role, const std::string& part,
                          const char* fallback) {
    std::string variable = "GIT_" + role + "_" + part;
    std::transform(variable.begin(), variable.end(), variable.begin(),
                   [](unsigned char c) { return char(std::toupper(c)); });
    if (const char* value = std::getenv(variable.c_str()); value != nullptr) return value;
    for (const std::string& key : {role + "." + part, "user." + part}) {
        const char* value = nullptr;
        if (git_config_get_string(&value, config, key.c_str()) == 0) return value;
    }
    return fallback;
}

}  // namespace

signature_handle identity(git_config* config, const std::string& role, std::string& error) {
    std::string name = identity_part(config, role, "name", "ralph");
    std::string email = identity_part(config, role, "email", "ralph@localhost");
    signature_handle signature;
    if (into(signature, git_signature_now, name.c_str(), email.c_str()) < 0)
        append_error(error,
                     git_failure("invalid commit " + role + " " + name + " <" + email + ">"));
    return signature;
}

std::string cleaned_message(const std::string& message) {
    git_buf buffer = GIT_BUF_INIT;
    std::string text = message;
    if (git_message_prettify(&buffer, message.c_str(), 0, '#') == 0)
        text.assign(buffer.ptr, buffer.size);
    git_buf_dispose(&buffer);
    return text;
}

std::string commit_all(const std::filesystem::path& dir, const std::string& message,
                       std::string& error) {
    error.clear();
    repository repo = find_repository(dir, git_access::write);
    if (!repo.git) {
        error = repo.error.empty() ? "cannot commit in " + dir.string() + ": not a git work tree"
                                   : repo.error;
        return "";
    }
    git_repository* git = repo.git.get();
    // `git add -A -- .`: the workspace's changes staged in the repository's index, written
    // back as git add writes it.
    index_handle index = repository_index(git, dir, error);
    if (!index || !stage_workspace(git, index.get(), repo, true, dir, error)) return "";
    if (git_index_write(index.get()) < 0) {
        error = git_failure("cannot write the git index of " + dir.string());
        return "";
    }
    commit_handle parent;
    git_oid tree_id;
    if (!head_commit(git, dir, parent, error) ||
        !tree_to_commit(git, index.get(), parent.get(), repo, tree_id, error))
        return "";
    // Nothing to commit is not an error: the unchanged HEAD ("" without commits).
    if (parent ? git_oid_equal(&tree_id, git_commit_tree_id(parent.get()))
               : id_text(tree_id) == empty_tree_id)
        return parent ? id_text(*git_commit_id(parent.get())) : "";

    config_handle config;
    if (into(config, git_repository_config_snapshot, git) < 0) {
        error = git_failure("cannot read the git configuration of " + dir.string());
        return "";
    }
    signature_handle author = identity(config.get(), "author", error);
    signature_handle committer = identity(config.get(), "committer", error);
    if (!author || !committer) return "";
    tree_handle tree;
    if (into(tree, git_tree_lookup, git, &tree_id) < 0) {
        error = git_failure("cannot read the tree to commit in " + dir.string());
        return "";
    }
    const git_commit* parents[] = {parent.get()};
    git_oid commit_id;
    // HEAD's branch moves (or is born); libgit2 checks that it still points to `parent`.
    if (git_commit_create(&commit_id, git, "HEAD", author.get(), committer.get(), nullptr,
                          cleaned_message(message).c_str(), tree.get(), parent ? 1 : 0,
                          parents) < 0) {
        error = git_failure("cannot commit in " + dir.string());
        return "";
    }
    return id_text(commit_id);
}

}  // namespace ralph::workspace
