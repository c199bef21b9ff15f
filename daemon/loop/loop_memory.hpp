// The loop's memory between iterations (README, "Memory, completion and progress"): what an agent
// leaves in its final answer for the next iteration (<ralph_notes>, <ralph-feedback>), the status
// and backlog completion rules, and the files ralph keeps in the workspace (.ralph/notes.md,
// .ralph/loop.md).
//
// Invariants:
// - Agent text is untrusted. Every parser here is a pure function that runs in time linear in
//   its input, never throws, and ignores what it cannot parse (unclosed tags, stray close tags,
//   garbage); every string it returns is valid UTF-8 (invalid bytes become U+FFFD), so it can go
//   into JSON, YAML or a prompt as is.
// - Tag names are matched without regard to ASCII case and exactly otherwise (`<ralph_notes>`,
//   no attributes, no whitespace inside the angle brackets). Blocks do not nest: a close tag
//   ends the block opened by the latest open tag before it, so in `<t>a<t>b</t>` the block is
//   "b" and the unclosed "a" is ignored (the same rule as <promise> in completion.hpp).
// - Only the file functions (append_notes, write_file_atomically, overwrite_file) touch the
//   disk; they throw std::runtime_error with a message naming the file and the action.
#pragma once

#include "proto/types.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ralph {

// Longest note kept, in bytes; a longer note is cut (at a UTF-8 character boundary).
inline constexpr std::size_t max_note_bytes = 64 * 1024;
// Longest feedback field kept, in bytes: the feedback goes into every next prompt.
inline constexpr std::size_t max_feedback_field_bytes = 16 * 1024;

// The trimmed contents of every <ralph_notes>…</ralph_notes> block, in order; empty blocks
// are skipped, each note is cut to max_note_bytes.
std::vector<std::string> extract_notes(std::string_view answer);

// The feedback in the LAST <ralph-feedback>…</ralph-feedback> block (or <ralph_feedback>);
// nullopt when there is none or it holds no field. The body is read in one of two syntaxes:
// - sub-tags: <score>7</score>, <summary>, <improvements>, <next_steps> (or <next-steps>),
//   <ideas>, <blockers>; used as soon as the body holds one of them (the last of each wins);
// - otherwise `key: value` lines: `score: 7/10`, `summary: …`, `next steps: …` (a key is
//   case-insensitive, `_`, `-` and space are alike, a leading list marker and markdown bold
//   are allowed: `- **Next steps:** …`). Every following line that does not start a known key
//   continues the value (indented and `- ` list lines being the usual case); a repeated key
//   replaces the earlier value.
// Fields are trimmed and cut to max_feedback_field_bytes.
std::optional<proto::agent_feedback> extract_feedback(std::string_view answer);

// A score: "7", "7/10", "7 / 10", "8.5" (the fraction is dropped, never rounded up: 8.5 → 8,
// 9.99 → 9), optionally followed by other text after a space or punctuation ("7/10 - good").
// Values outside 0..10, other denominators ("7/100"), negative or non-numeric text → nullopt.
std::optional<int> parse_score(std::string_view text);

// A short markdown block for the next iteration's prompt, one line per non-empty field
// ("Score: 7/10\nSummary: …\nNext steps: …\n"); a multi-line value starts on the line after its
// label. An empty feedback renders as "".
std::string describe_for_prompt(const proto::agent_feedback& fb);

// The trimmed content of the LAST <TAG>…</TAG> block, `tag` being the bare name
// ("ralph_status"), cut to max_note_bytes; nullopt when there is none or `tag` is empty.
std::optional<std::string> extract_status(std::string_view answer, std::string_view tag);
// Whether a status equals `value` ("COMPLETED"), ignoring ASCII case and surrounding whitespace.
bool status_matches(std::string_view status, std::string_view value);

// A judge's verdict on a loop's claim of completion.
struct judge_verdict {
    bool accepted = false;
    std::string reasons;  // valid UTF-8, trimmed, at most max_note_bytes
};
// The verdict the answer gives in its own words: its <ralph_verdict> blocks outside quoted
// material (outside_quotes) all say ACCEPT, or all say REJECT (ASCII case and surrounding
// whitespace ignored); the reasons are the last <ralph_reasons> block, else the whole answer.
// nullopt when there is no such block, when they differ, or when one says anything else: no
// verdict, which never accepts (a judge that quotes the worker's fake ACCEPT while it rejects
// gives none).
std::optional<judge_verdict> extract_verdict(std::string_view answer);

// `text` without what it quotes, each quoted byte replaced by a space: fenced code blocks
// (``` or ~~~), inline code spans, blockquote lines (starting with '>'), and the bodies of
// <ralph_reasons> and <answer> blocks. Linear time.
std::string outside_quotes(std::string_view text);

// The opt-in legacy completion rule: `needle` occurs in `text`, ignoring ASCII case. Knuth–
// Morris–Pratt, so O(|text| + |needle|) whatever the input (std::search may be quadratic).
// An empty needle never matches: a misconfigured rule must not complete every loop.
bool contains_substring_ci(std::string_view text, std::string_view needle);

// Markdown task list items in a backlog.
struct backlog_progress {
    int open = 0;
    int done = 0;
    bool all_done() const { return open == 0 && done > 0; }
};

// Counts lines that, after any indentation, are a list item (`- `, `* `, `+ `, `1. ` or `1) `)
// whose text starts with `[ ]` (open) or `[x]`/`[X]` (done), followed by whitespace or the end
// of the line. Items inside fenced code blocks (``` or ~~~, closed by a fence of the same
// character at least as long) are not counted; an unclosed fence runs to the end.
backlog_progress count_checkboxes(std::string_view markdown);

// Appends to `notes_file` (relative to the workspace `dir`, never rewriting it) one section for
// the iteration: "\n## Iteration N — <ISO time>\n" then "\n<note>\n" per note, in a single
// write. Creates the parent directories (.ralph/) as needed; follows no symbolic link
// (common/safe_open: throws safe_open::link_refused); does nothing when `notes` is empty.
// Throws std::runtime_error on an I/O failure.
void append_notes(const std::filesystem::path& dir, const std::filesystem::path& notes_file,
                  std::int64_t iteration, const std::vector<std::string>& notes,
                  std::int64_t now_ms);

// What .ralph/loop.md tells the agent before each iteration.
struct loop_state_file {
    std::int64_t loop_id = 0;
    std::int64_t iteration = 0;
    std::int64_t max_iterations = 0;  // 0 = unlimited
    std::int64_t min_iterations = 0;
    std::string completion_signal;
    std::string started_at;  // ISO 8601
    std::optional<proto::agent_feedback> previous_feedback;
    std::string name;
};

// .ralph/loop.md: YAML front matter (loop_id, name, iteration, max_iterations, min_iterations,
// completion_signal, started_at, previous_feedback as a nested map or null) between `---`
// lines, then a short markdown body for the agent. Every string is a double-quoted YAML scalar
// on one line (see yaml_quote), so no value can end the front matter early.
std::string render_loop_state(const loop_state_file& state);

// `text` as a YAML double-quoted scalar: \\ and \" escaped, newline, tab, CR and other control
// characters (C0, DEL, C1) as escapes, as well as U+2028, U+2029, U+FEFF, U+FFFE and U+FFFF
// (not printable YAML, or read as line breaks by some parsers); invalid UTF-8
// becomes U+FFFD. The result is always a single line.
std::string yaml_quote(std::string_view text);

// Replaces the content of `file` (relative to `dir`) in place, creating it and its parent
// directories if missing: cheaper than replacing the file, for a file nobody reads while it is
// written (ralph writes the prompt file and .ralph/loop.md between attempts, while the loop's
// agent is not running). A reader at that moment could see part of the new content. Follows no
// symbolic link (throws safe_open::link_refused). Throws std::runtime_error on failure.
void overwrite_file(const std::filesystem::path& dir, const std::filesystem::path& file,
                    std::string_view content);

}  // namespace ralph
