#include "daemon/loop/assessment.hpp"

#include "common/safe_open.hpp"
#include "common/text.hpp"
#include "daemon/loop/completion.hpp"
#include "daemon/loop/loop_memory.hpp"
#include "daemon/loop/prompt.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>

namespace ralph {
namespace {

// A summary is the first line of the final answer, cut to this many bytes.
constexpr std::size_t max_summary_bytes = 200;

}  // namespace

std::string summary_line(const std::string& text) {
    return text::first_line_within(text, max_summary_bytes);
}

std::string last_line(const std::string& text) {
    std::string_view rest = text;
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back())))
        rest.remove_suffix(1);
    return summary_line(std::string(rest.substr(rest.find_last_of('\n') + 1)));
}

std::string completion_rule(const proto::submit_params& spec, const std::string& final_answer) {
    if (contains_promise(final_answer, spec.completion_phrase))
        return "completion signal <promise>" + spec.completion_phrase + "</promise>";
    if (!spec.status_tag.empty()) {
        auto status = extract_status(final_answer, spec.status_tag);
        if (status && status_matches(*status, spec.status_value))
            return fmt::format("status <{}>{}</{}>", spec.status_tag, spec.status_value,
                               spec.status_tag);
    }
    if (!spec.legacy_phrase.empty() && contains_substring_ci(final_answer, spec.legacy_phrase))
        return "completion phrase \"" + spec.legacy_phrase + "\"";
    if (spec.backlog_rule) {
        auto specs = specs_path(spec);
        std::string text;
        if (!specs.empty() && read_workspace_file(spec.workspace, specs, text) &&
            count_checkboxes(text).all_done())
            return "every checkbox of " + specs.filename().string() + " is checked";
    }
    return {};
}

void read_verdict(const std::string& final_answer, proto::attempt_info& attempt) {
    const std::optional<judge_verdict> verdict = extract_verdict(final_answer);
    if (!verdict) {
        attempt.how = proto::termination::failed;
        attempt.failure = proto::failure_class::no_verdict;
        attempt.error =
            "the judge gave no verdict (<ralph_verdict>ACCEPT</ralph_verdict> or REJECT)";
        return;
    }
    attempt.verdict = verdict->accepted ? "accept" : "reject";
    attempt.verdict_reasons = verdict->reasons;
}

workspace_after look_at_workspace(const proto::loop_info& loop, std::int64_t iteration,
                                  const std::vector<std::string>& notes,
                                  const workspace::snapshot* before, std::int64_t now_ms) {
    const std::filesystem::path workspace_dir = loop.spec.workspace;
    workspace_after found;
    try {
        append_notes(workspace_dir, notes_file_name, iteration, notes, now_ms);
    } catch (const safe_open::link_refused& e) {
        found.notes_refused = e.what();
    } catch (const std::exception& e) {
        spdlog::warn("loop {}: {}", loop.id, e.what());
    }
    found.after = workspace::take_snapshot(workspace_dir);
    if (!before) return found;
    found.changes = workspace::compare(workspace_dir, *before, found.after);
    if (auto specs = specs_path(loop.spec); !specs.empty())
        found.specs_changed = workspace::file_changed(
            *before, found.after, workspace_dir, specs.lexically_relative(workspace_dir).string());
    return found;
}

void record_changes(proto::attempt_info& attempt, const workspace::snapshot* before,
                    const workspace_after& found) {
    attempt.head_after = found.after.head;
    // --commit moves HEAD afterwards, not the tree: tree_after stays the snapshot's.
    attempt.tree_after = found.after.tree;
    if (!before) return;
    const workspace::change_stats& changes = found.changes;
    attempt.files_changed = changes.files_changed;
    attempt.insertions = changes.insertions;
    attempt.deletions = changes.deletions;
    const bool changed = changes.progress() || found.specs_changed;
    if (changed || changes.error.empty()) attempt.progress = changed;
    if (!changes.error.empty())
        spdlog::warn("loop {}: iteration {}: what changed is known only in part: {}",
                     attempt.loop_id, attempt.iteration, changes.error);
}

}  // namespace ralph
