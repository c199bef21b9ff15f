#include "common/process_info.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

namespace ralph {

std::string read_proc_text(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    std::string text(4096, '\0');
    const ssize_t n = ::read(fd, text.data(), text.size());
    ::close(fd);
    text.resize(n > 0 ? std::size_t(n) : 0);
    return text;
}

bool read_process_stat(pid_t pid, process_stat& stat) {
    // Field 4 (ppid), 5 (pgrp) and 22 (starttime); the command name (field 2) may contain spaces
    // and parentheses, so parsing starts after its last ')'.
    const std::string text = read_proc_text("/proc/" + std::to_string(pid) + "/stat");
    const std::string_view line(text);
    const auto close = line.rfind(')');
    if (close == std::string_view::npos) return false;
    // Fields after ") " start at field 3 (state), one space apart.
    std::size_t pos = close + 2;
    for (int index = 3; pos < line.size(); ++index) {
        const std::size_t end = std::min(line.find(' ', pos), line.size());
        const char* first = line.data() + pos;
        const char* last = line.data() + end;
        if (index == 4 && std::from_chars(first, last, stat.ppid).ec != std::errc()) return false;
        if (index == 5 && std::from_chars(first, last, stat.pgrp).ec != std::errc()) return false;
        if (index == 22) return std::from_chars(first, last, stat.start_time).ec == std::errc();
        pos = end + 1;
    }
    return false;
}

std::int64_t process_start_time(pid_t pid) {
    process_stat stat;
    return read_process_stat(pid, stat) ? stat.start_time : 0;
}

}  // namespace ralph
