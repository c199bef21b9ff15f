// Snapshots and their comparisons (see workspace.hpp): in a git work tree HEAD and the tree of
// the work tree (staging.hpp), compared by libgit2's diff of the two trees (statistics, the
// patch, one file's blob); elsewhere a content hash per file, compared key by key.
#include "daemon/workspace/workspace.hpp"

#include "common/unique_fd.hpp"
#include "daemon/workspace/git_repository.hpp"
#include "daemon/workspace/staging.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <system_error>
#include <utility>

namespace ralph::workspace {
namespace {

namespace fs = std::filesystem;

// strerror() may share a buffer between threads; the category's message does not.
std::string system_message(int error) { return std::generic_category().message(error); }

// The workspace's part of the snapshot tree `id`: all of it at the top of the work tree, the
// directory `prefix` of it otherwise; null (what libgit2 diffs as an empty tree) when the tree
// has no such directory.
bool workspace_tree(git_repository* repo, const std::string& id, const std::string& prefix,
                    tree_handle& tree, std::string& error) {
    if (!lookup_tree(repo, id, tree, error)) return false;
    if (prefix.empty()) return true;
    tree_entry_handle entry;
    if (!lookup_entry(tree.get(), prefix, entry, error)) return false;
    if (!entry || git_tree_entry_type(entry.get()) != GIT_OBJECT_TREE) {
        tree.reset();
        return true;
    }
    if (into(tree, git_tree_lookup, repo, git_tree_entry_id(entry.get())) < 0) {
        append_error(error, git_failure("cannot read " + prefix + " in tree " + id));
        return false;
    }
    return true;
}

// ---- plain directories: a content hash per file

std::string hex(std::uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

// FNV-1a 64: fast, good enough to notice a change, not meant against an adversary.
constexpr std::uint64_t fnv_offset = 14695981039346656037ull;
std::uint64_t fnv1a(std::uint64_t hash, const char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
        hash ^= static_cast<unsigned char>(data[i]);
        hash *= 1099511628211ull;
    }
    return hash;
}

std::string identify_file(const fs::path& path, fs::file_type type, std::uintmax_t max_content_size,
                          std::string& error) {
    if (type == fs::file_type::symlink) {
        std::error_code ec;
        std::string target = fs::read_symlink(path, ec).string();
        if (ec) {
            append_error(error, "cannot read the link " + path.string() + ": " + ec.message());
            return "unreadable";
        }
        return "link:" + hex(fnv1a(fnv_offset, target.data(), target.size()));
    }
    // O_NONBLOCK: a file replaced by a FIFO since the directory was read must not block us.
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0) {
        append_error(error, "cannot read " + path.string() + ": " + system_message(errno));
        return "unreadable";
    }
    if (!S_ISREG(info.st_mode)) return "unreadable";
    if (std::uintmax_t(info.st_size) > max_content_size)
        return "size:" + std::to_string(info.st_size) + ":" +
               std::to_string(std::int64_t(info.st_mtim.tv_sec) * 1000000000 +
                              info.st_mtim.tv_nsec);
    std::uint64_t hash = fnv_offset;
    std::array<char, 65536> buffer;
    while (true) {
        ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            append_error(error, "cannot read " + path.string() + ": " + system_message(errno));
            return "unreadable";
        }
        hash = fnv1a(hash, buffer.data(), std::size_t(n));
    }
    return "content:" + hex(hash);
}

// Adds the files below `root / relative` ("" is the root) to `snap.files`, in the byte order of
// their keys, until limits.max_files: so a truncated map holds exactly the smallest keys, which
// is what compare() relies on. Symbolic links are recorded, never followed.
void hash_directory(const fs::path& root, const std::string& relative, const file_limits& limits,
                    snapshot& snap) {
    struct child {
        std::string key;
        std::string order;  // a directory sorts as its key plus '/', as its files' keys do
        fs::file_type type;
    };
    std::vector<child> children;
    std::error_code ec;
    fs::directory_iterator it(root / relative, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::string name = it->path().filename().string();
        // Git's internals change on every git command; .ralph/ is ralph's own bookkeeping.
        if (name == ".git" || (relative.empty() && name == ".ralph")) continue;
        std::error_code type_ec;
        fs::file_type type = it->symlink_status(type_ec).type();
        if (type_ec) continue;  // gone since it was listed
        std::string key = relative.empty() ? name : relative + "/" + name;
        std::string order = type == fs::file_type::directory ? key + "/" : key;
        children.push_back({std::move(key), std::move(order), type});
    }
    if (ec) {
        append_error(snap.error, "cannot list " + (root / relative).string() + ": " + ec.message());
    }
    std::sort(children.begin(), children.end(),
              [](const child& a, const child& b) { return a.order < b.order; });
    for (const auto& entry : children) {
        if (snap.files_truncated) return;
        if (entry.type == fs::file_type::directory) {
            hash_directory(root, entry.key, limits, snap);
        } else if (entry.type == fs::file_type::regular || entry.type == fs::file_type::symlink) {
            if (snap.files.size() == limits.max_files) {
                snap.files_truncated = true;
                append_error(snap.error, "more than " + std::to_string(limits.max_files) +
                                             " files: only the first are compared");
                return;
            }
            snap.files[entry.key] =
                identify_file(root / entry.key, entry.type, limits.max_content_size, snap.error);
        }
        // Sockets, FIFOs and devices are not work.
    }
}

void compare_files(const snapshot& before, const snapshot& after, change_stats& stats) {
    // A truncated side only knows the keys up to its last one; beyond, nothing is compared.
    std::optional<std::string> limit;
    for (const snapshot* side : {&before, &after}) {
        if (!side->files_truncated || side->files.empty()) continue;
        const std::string& last = side->files.rbegin()->first;
        if (!limit || last < *limit) limit = last;
    }
    auto a = before.files.begin();
    auto b = after.files.begin();
    auto within = [&](const std::string& key) { return !limit || key <= *limit; };
    while (a != before.files.end() || b != after.files.end()) {
        if (b == after.files.end() || (a != before.files.end() && a->first < b->first)) {
            if (within(a->first)) ++stats.files_changed;  // removed
            ++a;
        } else if (a == before.files.end() || b->first < a->first) {
            if (within(b->first)) ++stats.files_changed;  // added
            ++b;
        } else {
            if (a->second != b->second) ++stats.files_changed;
            ++a;
            ++b;
        }
    }
    stats.tree_changed = stats.files_changed > 0;
}

// git_diff's notify callback: leaves the workspace's .ralph/ out of the diff (> 0: skipped).
int skip_ralph_directory(const git_diff* /*diff*/, const git_diff_delta* delta,
                         const char* /*matched_pathspec*/, void* /*payload*/) {
    for (const char* path : {delta->old_file.path, delta->new_file.path})
        if (path != nullptr && !in_workspace(path, "", false)) return 1;
    return 0;
}

// `git diff --find-renames <before> <after> -- . ':(exclude).ralph'` of two snapshot trees of
// the workspace `dir` in `repo`, with `context_lines` around each change: renames found whatever
// diff.renames says, so that nothing depends on the user's configuration.
bool diff_workspace(const repository& repo, const fs::path& dir, const std::string& before,
                    const std::string& after, std::uint32_t context_lines, diff_handle& diff,
                    std::string& error) {
    tree_handle old_tree, new_tree;
    if (!workspace_tree(repo.git.get(), before, repo.prefix, old_tree, error) ||
        !workspace_tree(repo.git.get(), after, repo.prefix, new_tree, error))
        return false;
    git_diff_options options;
    git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION);
    options.context_lines = context_lines;
    options.notify_cb = skip_ralph_directory;
    int code =
        into(diff, git_diff_tree_to_tree, repo.git.get(), old_tree.get(), new_tree.get(), &options);
    git_diff_find_options find;
    git_diff_find_options_init(&find, GIT_DIFF_FIND_OPTIONS_VERSION);
    find.flags = GIT_DIFF_FIND_RENAMES;
    if (code < 0 || git_diff_find_similar(diff.get(), &find) < 0) {
        append_error(error, git_failure("cannot diff the snapshots of " + dir.string()));
        return false;
    }
    return true;
}

// git_diff_print's callback: appends the line to the patch_text `payload` until its limit.
int append_patch_line(const git_diff_delta* /*delta*/, const git_diff_hunk* /*hunk*/,
                      const git_diff_line* line, void* payload) {
    auto& patch = *static_cast<std::pair<patch_text*, std::size_t>*>(payload);
    std::string text;
    if (line->origin == GIT_DIFF_LINE_CONTEXT || line->origin == GIT_DIFF_LINE_ADDITION ||
        line->origin == GIT_DIFF_LINE_DELETION)
        text += line->origin;
    text.append(line->content, line->content_len);
    if (patch.first->text.size() + text.size() > patch.second) {
        patch.first->cut = true;
        return 1;  // stops the printing
    }
    patch.first->text += text;
    return 0;
}

void compare_git(const fs::path& dir, const snapshot& before, const snapshot& after,
                 change_stats& stats) {
    // An empty HEAD is a repository without commits, unless the snapshot failed: then unknown.
    bool before_head_known = !before.head.empty() || before.error.empty();
    bool after_head_known = !after.head.empty() || after.error.empty();
    stats.head_moved = before_head_known && after_head_known && before.head != after.head;
    if (before.tree.empty() || after.tree.empty()) {
        stats.error = "no working tree to compare";
        append_error(stats.error, before.error);
        append_error(stats.error, after.error);
        return;
    }
    if (before.tree == after.tree) return;
    stats.tree_changed = true;

    // `git diff --numstat --find-renames <before> <after> -- . ':(exclude).ralph'`: the
    // workspace's directory of both trees, .ralph/ left out before renames are paired.
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git) {
        stats.error =
            repo.error.empty() ? dir.string() + " is no longer in a git work tree" : repo.error;
        return;
    }
    diff_handle diff;
    // Only the changed lines are counted.
    if (!diff_workspace(repo, dir, before.tree, after.tree, 0, diff, stats.error)) return;
    for (std::size_t i = 0; i < git_diff_num_deltas(diff.get()); ++i) {
        patch_handle patch;
        if (into(patch, git_patch_from_diff, diff.get(), i) < 0) {
            stats.error = git_failure("cannot diff the snapshots of " + dir.string());
            return;
        }
        ++stats.files_changed;
        // A binary file counts as changed with no lines, as in `git diff --numstat`.
        if (!patch || (git_diff_get_delta(diff.get(), i)->flags & GIT_DIFF_FLAG_BINARY) != 0)
            continue;
        std::size_t context = 0, added = 0, deleted = 0;
        git_patch_line_stats(&context, &added, &deleted, patch.get());
        stats.insertions += std::int64_t(added);
        stats.deletions += std::int64_t(deleted);
    }
}

// `relative_path` as a key of snapshot::files ("a/b.md"), or nothing when it is not inside `dir`.
std::optional<std::string> workspace_key(const fs::path& dir, std::string_view relative_path) {
    fs::path path(relative_path);
    if (path.is_absolute()) path = path.lexically_relative(dir);
    path = path.lexically_normal();
    std::string key = path.generic_string();
    while (!key.empty() && key.back() == '/') key.pop_back();
    if (key.empty() || key == "." || key == ".." || key.rfind("../", 0) == 0) return std::nullopt;
    return key;
}

// The id of the blob (or tree) at `path` of the snapshot tree `tree_id`, "" when it has none.
std::string entry_id(git_repository* repo, const std::string& tree_id, const std::string& path,
                     std::string& error) {
    tree_handle tree;
    tree_entry_handle entry;
    if (!lookup_tree(repo, tree_id, tree, error) || !lookup_entry(tree.get(), path, entry, error) ||
        !entry)
        return "";
    return id_text(*git_tree_entry_id(entry.get()));
}

}  // namespace

snapshot take_snapshot(const std::filesystem::path& dir, const file_limits& limits) {
    snapshot snap;
    repository repo = find_repository(dir, git_access::write);
    if (!repo.git) {
        append_error(snap.error, repo.error);
        snap.refused = repo.refused;
        hash_directory(dir, "", limits, snap);
        return snap;
    }
    snap.is_git = true;
    snap.head = head_id(repo.git.get(), dir, snap.error);
    snap.tree = write_working_tree(repo, dir, snap.error);
    return snap;
}

change_stats compare(const std::filesystem::path& dir, const snapshot& before,
                     const snapshot& after) {
    change_stats stats;
    if (before.is_git != after.is_git) {
        // e.g. the agent ran `git init`: certainly a change, but nothing to diff against.
        stats.tree_changed = true;
        stats.head_moved = before.head != after.head;
        stats.error = "the workspace became or stopped being a git repository: no diff statistics";
        append_error(stats.error, before.error);
        append_error(stats.error, after.error);
        return stats;
    }
    if (before.is_git)
        compare_git(dir, before, after, stats);
    else
        compare_files(before, after, stats);
    return stats;
}

patch_text diff_snapshots(const std::filesystem::path& dir, const snapshot& before,
                          const snapshot& after, std::size_t limit) {
    patch_text patch;
    if (!before.is_git || !after.is_git || before.tree.empty() || after.tree.empty()) {
        patch.error = "no git snapshots to compare";
        append_error(patch.error, before.error);
        append_error(patch.error, after.error);
        return patch;
    }
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git) {
        patch.error =
            repo.error.empty() ? dir.string() + " is no longer in a git work tree" : repo.error;
        return patch;
    }
    diff_handle diff;
    if (!diff_workspace(repo, dir, before.tree, after.tree, 3, diff, patch.error)) return patch;
    std::pair<patch_text*, std::size_t> payload{&patch, limit};
    const int code = git_diff_print(diff.get(), GIT_DIFF_FORMAT_PATCH, append_patch_line, &payload);
    if (code < 0 && !patch.cut)
        patch.error = git_failure("cannot print the diff of the snapshots of " + dir.string());
    return patch;
}

std::string check_out_snapshot(const std::filesystem::path& dir, const snapshot& snap,
                               const std::filesystem::path& target) {
    const std::string what =
        "cannot check the snapshot of " + dir.string() + " out into " + target.string();
    if (!snap.is_git || snap.tree.empty()) return what + ": it is not a git snapshot";
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git)
        return what + ": " + (repo.error.empty() ? "not in a git work tree" : repo.error);
    std::string error;
    tree_handle tree;
    if (!workspace_tree(repo.git.get(), snap.tree, repo.prefix, tree, error))
        return what + ": " + error;
    std::error_code ec;
    fs::remove_all(target, ec);
    fs::create_directories(target, ec);
    if (ec) return what + ": " + ec.message();
    if (!tree) return "";  // the workspace's directory is empty in the snapshot
    git_checkout_options options;
    git_checkout_options_init(&options, GIT_CHECKOUT_OPTIONS_VERSION);
    // Every file written, into `target` only: neither the user's index nor work tree is touched,
    // and no filter driver runs (see the top of workspace.hpp).
    options.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX;
    options.disable_filters = 1;
    const std::string target_directory = target.string();
    options.target_directory = target_directory.c_str();
    if (git_checkout_tree(repo.git.get(), reinterpret_cast<git_object*>(tree.get()), &options) < 0)
        return git_failure(what);
    return "";
}

bool file_changed(const snapshot& before, const snapshot& after, const std::filesystem::path& dir,
                  std::string_view relative_path) {
    auto key = workspace_key(dir, relative_path);
    if (!key) return false;
    if (before.is_git != after.is_git) return true;  // as compare() says of the whole tree
    if (!before.is_git) {
        auto a = before.files.find(*key);
        auto b = after.files.find(*key);
        std::string before_hash = a == before.files.end() ? "" : a->second;
        std::string after_hash = b == after.files.end() ? "" : b->second;
        return before_hash != after_hash;
    }
    if (before.tree.empty() || after.tree.empty() || before.tree == after.tree) return false;
    repository repo = find_repository(dir, git_access::read);
    if (!repo.git) return false;
    std::string error;
    const std::string path = repo.under() + *key;
    std::string before_id = entry_id(repo.git.get(), before.tree, path, error);
    std::string after_id = entry_id(repo.git.get(), after.tree, path, error);
    return error.empty() && before_id != after_id;
}

}  // namespace ralph::workspace
