// Completion signals in an agent's final answer. Matching is case-insensitive, tolerant of
// whitespace inside the tag, and linear in the text's length; no user-supplied regex.
#pragma once

#include <string_view>

namespace ralph {

// True if `text` contains <promise>PHRASE</promise> for `phrase`: tag names in any case,
// any whitespace (or none) around the phrase, runs of whitespace inside it equal to one space,
// letters compared without case.
bool contains_promise(std::string_view text, std::string_view phrase);

}  // namespace ralph
