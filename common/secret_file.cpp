#include "common/secret_file.hpp"

#include "common/text.hpp"
#include "common/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace ralph::secret_file {
namespace {

// A file of secrets is small: this much is plenty, and a larger one is no such file.
constexpr off_t max_bytes = 1 << 20;

std::string octal_mode(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", unsigned(mode & 07777));
    return text;
}

}  // namespace

std::vector<line> read_lines(const std::filesystem::path& path, std::string_view option) {
    const std::string where = std::string(option) + " " + path.string();
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (fd.get() < 0) throw std::invalid_argument(where + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw std::invalid_argument(where + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw std::invalid_argument(where + ": not a regular file");
    if (st.st_uid != ::getuid() && st.st_uid != 0)
        throw std::invalid_argument(where + ": belongs to another user (uid " +
                                    std::to_string(st.st_uid) +
                                    "), who could change what it says; use a file of your own");
    if ((st.st_mode & 077) != 0)
        throw std::invalid_argument(
            where + ": others may read or write it (mode " + octal_mode(st.st_mode) +
            "), and it holds secrets; make it yours only: chmod 600 " + path.string());
    if (st.st_size > max_bytes)
        throw std::invalid_argument(where + ": larger than 1 MiB, which no such file is");
    std::string content(std::size_t(st.st_size), '\0');
    std::size_t got = 0;
    while (got < content.size()) {
        const ssize_t n = ::read(fd.get(), content.data() + got, content.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::invalid_argument(where + ": " + std::strerror(errno));
        if (n == 0) break;
        got += std::size_t(n);
    }
    content.resize(got);

    std::vector<line> lines;
    std::size_t number = 0;
    for (std::size_t start = 0; start < content.size();) {
        const std::size_t end = std::min(content.find('\n', start), content.size());
        std::string_view text(content.data() + start, end - start);
        ++number;
        start = end + 1;
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        const std::string_view blank_free = text::trim(text);
        if (blank_free.empty() || blank_free.front() == '#') continue;
        lines.push_back({number, std::string(text)});
    }
    return lines;
}

}  // namespace ralph::secret_file
