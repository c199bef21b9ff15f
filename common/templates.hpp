// The texts ralph embeds, in one place (templates.cpp): the default prompt, the wrapper that
// turns a prompt source into the prompt of an iteration, and the starter files `ralphctl init`
// writes for each loop style. Also the tiny renderer of the wrapper's placeholders.
//
// Rendering rules (render):
// - `{{name}}` is replaced by the value of `name`; `{{ name }}` is the same placeholder.
// - `{{#name}}…{{/name}}` keeps its content when the value of `name` is not empty and drops it
//   otherwise; `{{^name}}…{{/name}}` is the opposite. Sections of different names may nest.
//   A section tag alone on its line (at its start, followed by the end of the line) takes the
//   whole line with it, so conditional blocks leave no blank lines behind.
// - A name that has no value, and a section without its closing tag, stay in the text as
//   written.
// - Values are inserted verbatim and never scanned again: a value holding `{{iteration}}`
//   stays literal.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::templates {

// The prompt of a loop that has no other source (README, "Prompts"); PROMPT.md of the `default`
// template.
extern const std::string_view default_prompt;

// The wrapper around every iteration's prompt; its placeholders are listed in
// daemon/loop/prompt.hpp. A workspace may replace it with `.ralph/prompt-template.md`;
// `ralphctl init --print-template` prints it as a starting point.
extern const std::string_view prompt_wrapper;

// The prompt of a loop's judge (submit --judge), placeholders listed in daemon/loop/prompt.hpp;
// the user may replace it (submit --judge-prompt, or a committed `.ralph/judge-prompt.md`).
extern const std::string_view judge_prompt;

// One starter file of an init template: its path relative to the target directory.
struct template_file {
    std::string path;
    std::string content;
};

// The names of the init templates, in the order to show them: default, plan, backlog.
const std::vector<std::string>& init_template_names();

// The files of the init template `name`. Throws std::invalid_argument naming the known
// templates when there is no such template.
const std::vector<template_file>& init_template(std::string_view name);

using template_values = std::map<std::string, std::string, std::less<>>;

// `text` with its placeholders and sections rendered from `values` (see the rules above).
std::string render(std::string_view text, const template_values& values);

}  // namespace ralph::templates
