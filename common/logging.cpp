#include "common/logging.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <vector>

namespace ralph::logging {

void setup(const std::string& program, const std::string& level, const std::string& log_file) {
    std::vector<spdlog::sink_ptr> sinks;
    auto console = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    if (std::getenv("JOURNAL_STREAM") != nullptr)
        console->set_pattern("%v");  // journald adds time and unit itself
    else
        console->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
    sinks.push_back(console);
    if (!log_file.empty()) {
        auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file);
        file->set_pattern("%Y-%m-%d %H:%M:%S.%e %l %v");
        sinks.push_back(file);
    }
    auto logger = std::make_shared<spdlog::logger>(program, sinks.begin(), sinks.end());
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
}

}  // namespace ralph::logging
