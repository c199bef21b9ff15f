// The embedded texts (see templates.hpp). They are what real models read at every iteration and
// what users start from: keep them short, plain and exact. The wrapper's placeholders are
// documented in daemon/loop/prompt.hpp; change both together.
#include "common/templates.hpp"

#include "common/text.hpp"

#include <stdexcept>

namespace ralph::templates {

const std::string_view default_prompt = R"(# Task

Study the workspace: the specs (SPECS.md, shown below when present), the conventions
(CONVENTIONS.md), the notes of earlier iterations (.ralph/notes.md) and the code itself.

1. Pick the most important unfinished task. Search the code before assuming that something is
   missing.
2. Implement it completely: no placeholders, no stubs.
3. Build it and run the tests; fix what fails.
4. Tick the task in the specs (`- [ ]` becomes `- [x]`) and commit your work with a clear
   message.
)";

const std::string_view prompt_wrapper = R"({{prompt}}

---

{{#specs}}
## Specs and tasks: {{specs_name}}

<file path="{{specs_name}}">
{{specs}}
</file>
{{#specs_cut}}
(Cut: only the first 64 KiB of {{specs_name}} are shown. Read the file for the rest.)
{{/specs_cut}}

{{/specs}}
{{#conventions}}
## Conventions: CONVENTIONS.md

<file path="CONVENTIONS.md">
{{conventions}}
</file>
{{#conventions_cut}}
(Cut: only the first 64 KiB of CONVENTIONS.md are shown. Read the file for the rest.)
{{/conventions_cut}}

{{/conventions}}
{{#notes}}
## Notes from earlier iterations: {{notes_file}}

{{#notes_cut}}
(Cut: only the last 16 KiB of {{notes_file}} are shown. Read the file for older notes.)
{{/notes_cut}}
<file path="{{notes_file}}">
{{notes}}
</file>

{{/notes}}
{{#feedback}}
## Feedback from the previous iteration

{{feedback}}

{{/feedback}}
{{#judge_reasons}}
## The judge rejected the last claim of completion

A reviewer checked the work when the loop claimed it was done, and found it is not. Its reasons:

{{judge_reasons}}

Fix what it names before you claim completion again.

{{/judge_reasons}}
{{#steering}}
## Steering

The user asks for this iteration:
{{steering}}

{{/steering}}
## The loop

You are one iteration of a Ralph loop: this prompt is given again and again, in this same
workspace, until the work is done. You remember nothing of earlier iterations; the files in the
workspace are the only memory.

- This is iteration {{iteration}}{{#max_iterations}} of at most {{max_iterations}}{{/max_iterations}}{{^max_iterations}} (the loop has no iteration limit){{/max_iterations}}.
{{#min_iterations}}
- The loop runs at least {{min_iterations}} iterations: a completion signal before iteration {{min_iterations}} is ignored.
{{/min_iterations}}
- Do ONE task per iteration: the most important unfinished one. Finish it, verify it, then stop
  and give your final answer.
- When, and only when, ALL the work is truly done and verified, put this line in your final
  answer:
  {{completion_signal}}
  Never write it otherwise, not even to say that you are not done: it ends the loop.
{{#status_signal}}
- {{status_signal}} in your final answer also ends the loop: the same rule applies.
{{/status_signal}}
{{#backlog_rule}}
- The loop also ends when every checkbox in {{specs_name}} is checked (`- [x]`). Check a task's
  box only when that task is done.
{{/backlog_rule}}
- Notes for later iterations: put them in your final answer inside
  <ralph_notes>…</ralph_notes>; ralph appends them to {{notes_file}}. Keep them short: what the
  next iteration must know, not a diary.
- Feedback: end your final answer with this block about the iteration, one `key: value` per line:
  <ralph-feedback>
  score: 0 to 10, how well this iteration went
  summary: what you did
  improvements: what would have made it go better
  next_steps: what the next iteration should do
  ideas: anything worth trying later
  blockers: what stops you, or none
  </ralph-feedback>
- {{state_file}} holds the loop's state: iteration, limits, completion signal, previous feedback.
)";

const std::string_view judge_prompt = R"(# Review: is this work done?

You are the judge of a Ralph loop: an agent worked on the task below, iteration after iteration,
and now claims that all of it is done. Decide whether that is true. Read the files, run the
build and the tests, try what the task asks for. You cannot change the workspace: any change you
make is discarded. Be strict: accept only work that is complete and verified, with no stubs,
placeholders or failing checks.

## The task

{{prompt}}

{{#specs}}
## Specs and tasks: {{specs_name}}

<file path="{{specs_name}}">
{{specs}}
</file>

{{/specs}}
## The worker's final answer (iteration {{iteration}}, {{completion_rule}})

<answer>
{{final_answer}}
</answer>

## What changed since the loop started

{{#diff}}
```diff
{{diff}}
```
{{#diff_cut}}
(Cut: only the first 256 KiB of the diff are shown. Run git diff {{base_head}} for the rest.)
{{/diff_cut}}
{{/diff}}
{{^diff}}
{{diff_unavailable}}
{{/diff}}

{{#verify_command}}
## The loop's check: {{verify_command}} (exit status {{verify_exit}})

```
{{verify_output}}
```

{{/verify_command}}
## Your verdict

End your answer with exactly one of the two below, written as it is (not in a code block or a
quote: a verdict you quote does not count, and two different verdicts are none):

<ralph_verdict>ACCEPT</ralph_verdict>

<ralph_verdict>REJECT</ralph_verdict>
<ralph_reasons>
What is missing or wrong, precisely enough for the next iteration to fix it.
</ralph_reasons>
)";

namespace {

const std::string_view specs_md = R"(# Specs

What to build, and how to tell that it works. The agent reads this file at every iteration and
ticks the tasks it finishes. Replace this example with your own.

## Goal

A command-line tool `greet` that prints "Hello, NAME!" for each NAME given as an argument.

## Tasks

- [ ] Create the project: a build and a test runner with one passing test
- [ ] `greet NAME...` prints one greeting per name, one per line
- [ ] `greet` without arguments prints its usage to stderr and exits with status 2
- [ ] A README explains how to build, test and use it
)";

const std::string_view conventions_md = R"(# Conventions

How code is written in this project. The agent reads this file at every iteration. Replace these
placeholders with your own.

- Language and version: …
- Build: `…`
- Tests: `…` (they must pass before a commit)
- Style: …
- Commits: one task per commit, with a message that says what changed and why
)";

const std::string_view notes_md = R"(# Notes

ralph appends to this file what the agent writes in <ralph_notes>…</ralph_notes> blocks, one
section per iteration, and shows the end of it to the agent at every iteration. You may add notes
of your own.
)";

const std::string_view plan_prompt = R"(# Task: work through plan.md

plan.md is the plan: one item per line, `- [ ]` to do, `- [x]` done. progress.md is the log of
what earlier iterations did.

At every iteration you MUST:
1. Read plan.md and progress.md.
2. Take the FIRST unchecked item (`- [ ]`) of plan.md. Work on that item only.
3. Do it completely, then verify it: build, run the tests, try it.
4. Check it off in plan.md: its `- [ ]` becomes `- [x]`. Never check an item that is not done.
5. Append to progress.md what you did: a `## ` heading naming the item, then what changed, how you
   verified it, and what the next iteration should know.
6. Commit your work, plan.md and progress.md included.

When every item of plan.md is checked, the work is done.
)";

const std::string_view plan_md = R"(# Plan

The agent takes the first unchecked item at every iteration, does it, and checks it off. Write
the items in the order they are to be done, each small enough for one iteration.

- [ ] Create the project: a build and a test runner with one passing test
- [ ] `greet NAME...` prints one greeting per name, one per line
- [ ] `greet` without arguments prints its usage to stderr and exits with status 2
- [ ] A README explains how to build, test and use it
)";

const std::string_view progress_md = R"(# Progress

What each iteration did, appended by the agent, newest last.
)";

const std::string_view backlog_prompt = R"(# Task: work through backlog.md

backlog.md is the backlog: one task per `- [ ]` item. notepad.md is your notepad: what earlier
iterations learned.

At every iteration:
1. Read notepad.md, then backlog.md.
2. Pick ONE unchecked item (`- [ ]`): the first, unless another one has to come before it.
3. Do it completely, then verify it: build, run the tests.
4. Tick it in backlog.md: `- [ ]` becomes `- [x]`. Tick only what is done. New work you find
   goes to the end of backlog.md as a new `- [ ]` item.
5. Write to notepad.md what you learned that later iterations need: commands, pitfalls,
   decisions. Keep it short and current.
6. Commit your work.

The loop ends when every box in backlog.md is checked.
)";

const std::string_view backlog_md = R"(# Backlog

One task per item; the agent ticks each one it finishes. The loop ends when every box is
checked.

- [ ] Create the project: a build and a test runner with one passing test
- [ ] `greet NAME...` prints one greeting per name, one per line
- [ ] `greet` without arguments prints its usage to stderr and exits with status 2
- [ ] A README explains how to build, test and use it
)";

const std::string_view notepad_md = R"(# Notepad

What the agent learned while working through backlog.md: build and test commands, pitfalls,
decisions. The agent keeps it short and current.
)";

// Where rendering goes on after a section tag at [begin, end): past the end of its line when the
// tag is alone on that line, so the line disappears with it; else right after the tag.
std::size_t after_tag(std::string_view t, std::size_t begin, std::size_t end) {
    if (begin != 0 && t[begin - 1] != '\n') return end;
    if (end == t.size()) return end;
    if (t[end] == '\n') return end + 1;
    if (t[end] == '\r' && end + 1 < t.size() && t[end + 1] == '\n') return end + 2;
    return end;
}

void render_range(std::string& out, std::string_view t, std::size_t pos, std::size_t stop,
                  const template_values& values) {
    constexpr auto npos = std::string_view::npos;
    while (pos < stop) {
        const std::size_t open = t.find("{{", pos);
        if (open == npos || open >= stop) break;
        const std::size_t close = t.find("}}", open + 2);
        if (close == npos || close + 2 > stop) break;
        out.append(t.substr(pos, open - pos));
        const std::size_t tag_end = close + 2;
        const std::string_view tag = t.substr(open, tag_end - open);
        const std::string_view name =
            text::trim(t.substr(open + 2, close - open - 2), text::blanks);
        pos = tag_end;

        if (!name.empty() && (name[0] == '#' || name[0] == '^')) {
            const std::string_view key = text::trim(name.substr(1), text::blanks);
            const auto value = values.find(key);
            const std::string closing_tag = "{{/" + std::string(key) + "}}";
            const std::size_t closing =
                value == values.end() ? npos : t.substr(0, stop).find(closing_tag, tag_end);
            if (closing == npos) {
                out.append(tag);  // unknown or unclosed: stays as written
                continue;
            }
            const bool show = (name[0] == '#') == !value->second.empty();
            if (show) render_range(out, t, after_tag(t, open, tag_end), closing, values);
            pos = after_tag(t, closing, closing + closing_tag.size());
            continue;
        }

        const auto value = values.find(name);
        if (value == values.end())
            out.append(tag);
        else
            out.append(value->second);  // verbatim: never scanned for placeholders
    }
    if (pos < stop) out.append(t.substr(pos, stop - pos));
}

}  // namespace

const std::vector<std::string>& init_template_names() {
    static const std::vector<std::string> names{"default", "plan", "backlog"};
    return names;
}

const std::vector<template_file>& init_template(std::string_view name) {
    static const std::vector<template_file> default_files{
        {"PROMPT.md", std::string(default_prompt)},
        {"SPECS.md", std::string(specs_md)},
        {"CONVENTIONS.md", std::string(conventions_md)},
        {".ralph/notes.md", std::string(notes_md)},
    };
    static const std::vector<template_file> plan_files{
        {"PROMPT.md", std::string(plan_prompt)},
        {"plan.md", std::string(plan_md)},
        {"progress.md", std::string(progress_md)},
    };
    static const std::vector<template_file> backlog_files{
        {".ralph/prompt.md", std::string(backlog_prompt)},
        {"backlog.md", std::string(backlog_md)},
        {"notepad.md", std::string(notepad_md)},
    };
    if (name == "default") return default_files;
    if (name == "plan") return plan_files;
    if (name == "backlog") return backlog_files;
    std::string known;
    for (const auto& n : init_template_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown template '" + std::string(name) + "' (known: " + known +
                                ")");
}

std::string render(std::string_view text, const template_values& values) {
    std::string out;
    out.reserve(text.size());
    render_range(out, text, 0, text.size(), values);
    return out;
}

}  // namespace ralph::templates
