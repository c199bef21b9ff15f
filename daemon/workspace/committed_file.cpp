// A file of the workspace as its HEAD commit has it (read_committed_file, workspace.hpp): read
// from the repository's objects, never from the working tree, which an agent writes.
#include "daemon/workspace/workspace.hpp"

#include "daemon/workspace/git_repository.hpp"

#include <fmt/format.h>

namespace ralph::workspace {

using blob_handle = git_handle<git_blob, git_blob_free>;

committed_file read_committed_file(const std::filesystem::path& dir,
                                   const std::string& relative_path, std::size_t limit) {
    committed_file file;
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git) {
        file.error = repo.error;
        return file;
    }
    commit_handle head;
    if (!head_commit(repo.git.get(), dir, head, file.error) || !head) return file;
    file.commit = id_text(*git_commit_id(head.get()));
    const std::string name = relative_path + " of commit " + file.commit.substr(0, 12);
    tree_handle tree;
    if (into(tree, git_commit_tree, head.get()) < 0) {
        file.error = git_failure("cannot read the tree of commit " + file.commit);
        return file;
    }
    tree_entry_handle entry;
    if (!lookup_entry(tree.get(), repo.under() + relative_path, entry, file.error) || !entry)
        return file;
    const git_filemode_t mode = git_tree_entry_filemode(entry.get());
    if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE) {
        file.problem = name + " is not a regular file";
        return file;
    }
    blob_handle blob;
    if (into(blob, git_blob_lookup, repo.git.get(), git_tree_entry_id(entry.get())) < 0) {
        file.error = git_failure("cannot read " + name);
        return file;
    }
    const auto size = static_cast<std::size_t>(git_blob_rawsize(blob.get()));
    if (size > limit) {
        file.problem = fmt::format("{} is {} bytes, more than the {} allowed", name, size, limit);
        return file;
    }
    file.found = true;
    file.text.assign(static_cast<const char*>(git_blob_rawcontent(blob.get())), size);
    return file;
}

}  // namespace ralph::workspace
