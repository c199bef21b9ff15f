// spdlog set-up for both programs. Under systemd (JOURNAL_STREAM set) lines carry no timestamp,
// since journald adds its own.
#pragma once

#include <string>

namespace ralph::logging {

// level: "trace", "debug", "info", "warn", "error". log_file empty = stderr only.
void setup(const std::string& program, const std::string& level, const std::string& log_file);

}  // namespace ralph::logging
