// What the unit tests share (tests/support/): temporary directories and whole-file reads and
// writes. (The git of the workspace tests' set-ups: git.hpp.)
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace ralph::test {

// A fresh directory under /tmp, removed with its contents at the end of the test.
struct temp_dir {
    std::filesystem::path path;
    temp_dir() {
        char tmpl[] = "/tmp/ralph-unit-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

// The whole file; throws (failing the test with the path) when it cannot be opened.
inline std::string read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + file.string());
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// Replaces the file's content, creating its directory first.
inline void write_file(const std::filesystem::path& file, std::string_view content) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << content;
}

}  // namespace ralph::test
