// The assessment of an attempt that exited: what it left for the next ones (its notes, its
// feedback), what it did to the workspace (the snapshot after it compared with the one before:
// diff stats and progress), which completion rule its final answer meets, and a judge's
// verdict. Functions of the attempt's record, its final answer and its snapshots; the attempt
// (loop/attempt) runs the file system work on the pool and --verify, and stores the result.
#pragma once

#include "daemon/workspace/workspace.hpp"
#include "proto/types.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ralph {

// The completion rule the final answer (and the specs file, for the backlog rule) meets, as the
// stop reason names it; "" for none.
std::string completion_rule(const proto::submit_params& spec, const std::string& final_answer);

// A judge's <ralph_verdict> into `attempt` (verdict, verdict_reasons); none makes the attempt
// failed with class no_verdict.
void read_verdict(const std::string& final_answer, proto::attempt_info& attempt);

// The workspace after an attempt, as one trip to the pool finds it: the attempt's notes
// appended to .ralph/notes.md, the snapshot after, and what changed since `before`.
struct workspace_after {
    std::string notes_refused;  // a link where the notes go: what was refused
    workspace::snapshot after;
    workspace::change_stats changes;
    bool specs_changed = false;
};
// Blocks (libgit2, file hashes): on the pool. `before` is null when it is not known.
workspace_after look_at_workspace(const proto::loop_info& loop, std::int64_t iteration,
                                  const std::vector<std::string>& notes,
                                  const workspace::snapshot* before, std::int64_t now_ms);

// What the attempt did, into its record: HEAD and tree after, diff stats and progress. Without
// the snapshot before (an adopted attempt in a plain directory) what changed is unknown and
// progress stays unknown, which counts as progress; so it does when what changed is known only
// in part and that part shows no change.
void record_changes(proto::attempt_info& attempt, const workspace::snapshot* before,
                    const workspace_after& found);

// The first line of `text`, cut to 200 bytes: an attempt's summary, a stop reason's quote.
std::string summary_line(const std::string& text);
// The last line of `text` that is not blank, cut the same way: what a failed check said last.
std::string last_line(const std::string& text);

}  // namespace ralph
