#include "common/safe_open.hpp"

#include "tests/support/files.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

using namespace ralph;
using ralph::test::read_file;
using ralph::test::temp_dir;
using ralph::test::write_file;
namespace fs = std::filesystem;

namespace {

void write_through(const unique_fd& fd, const std::string& text) {
    REQUIRE(::write(fd.get(), text.data(), text.size()) == ssize_t(text.size()));
}

// Runs `body` once with openat2 (where the kernel has it) and once with the O_NOFOLLOW walk.
template <typename Body>
void with_each_method(Body body) {
    for (bool walk : {false, true}) {
        if (!walk && !safe_open::has_openat2()) continue;
        CAPTURE(walk);
        safe_open::use_walk(walk);
        body();
    }
    safe_open::use_walk(false);
}

}  // namespace

TEST_CASE("safe_open: a file beneath the directory is created with its missing directories") {
    with_each_method([] {
        temp_dir dir;
        unique_fd fd =
            safe_open::for_writing(dir.path, ".ralph/deep/notes.md", O_WRONLY | O_CREAT | O_APPEND);
        write_through(fd, "hello");
        fd.reset();
        CHECK(read_file(dir.path / ".ralph/deep/notes.md") == "hello");
    });
}

TEST_CASE(
    "safe_open: no write through a link at the file, at a directory on the way, or at the top") {
    with_each_method([] {
        temp_dir dir;
        temp_dir outside;
        const fs::path ws = dir.path / "ws";
        fs::create_directories(ws / "sub");
        write_file(outside.path / "target", "keep");

        // The file itself is a link (also a dangling one: O_CREAT must not create its target).
        fs::create_symlink(outside.path / "target", ws / "notes.md");
        CHECK_THROWS_AS(safe_open::for_writing(ws, "notes.md", O_WRONLY | O_CREAT | O_APPEND),
                        safe_open::link_refused);
        fs::create_symlink(outside.path / "created", ws / "dangling.md");
        CHECK_THROWS_AS(safe_open::for_writing(ws, "dangling.md", O_WRONLY | O_CREAT),
                        safe_open::link_refused);
        CHECK_FALSE(fs::exists(outside.path / "created"));

        // A directory on the way is a link: .ralph -> a directory outside.
        fs::create_symlink(outside.path, ws / ".ralph");
        CHECK_THROWS_AS(safe_open::for_writing(ws, ".ralph/loop.md", O_WRONLY | O_CREAT),
                        safe_open::link_refused);
        CHECK_FALSE(fs::exists(outside.path / "loop.md"));
        fs::create_symlink(outside.path, ws / "sub" / "inner");
        CHECK_THROWS_AS(safe_open::for_writing(ws, "sub/inner/x", O_WRONLY | O_CREAT),
                        safe_open::link_refused);

        // The directory itself is reached through a link.
        fs::create_symlink(ws, dir.path / "ws-link");
        CHECK_THROWS_AS(safe_open::for_writing(dir.path / "ws-link", "new.md", O_WRONLY | O_CREAT),
                        safe_open::link_refused);
        CHECK_FALSE(fs::exists(ws / "new.md"));

        // ".." never leaves the directory.
        CHECK_THROWS_AS(safe_open::for_writing(ws, "../escape", O_WRONLY | O_CREAT),
                        safe_open::link_refused);
        CHECK(read_file(outside.path / "target") == "keep");
    });
}

TEST_CASE("safe_open: a FIFO or a directory at the name is refused without blocking") {
    with_each_method([] {
        temp_dir dir;
        REQUIRE(::mkfifo((dir.path / "fifo").c_str(), 0600) == 0);
        CHECK_THROWS_AS(safe_open::for_writing(dir.path, "fifo", O_WRONLY | O_CREAT),
                        std::runtime_error);
        CHECK(safe_open::for_reading(dir.path, dir.path / "fifo").get() < 0);
        fs::create_directory(dir.path / "d");
        CHECK_THROWS_AS(safe_open::for_writing(dir.path, "d", O_WRONLY | O_CREAT),
                        std::runtime_error);
    });
}

TEST_CASE(
    "safe_open: reads stay beneath the directory; a path the user chose elsewhere is read as is") {
    with_each_method([] {
        temp_dir dir;
        temp_dir outside;
        const fs::path ws = dir.path;
        write_file(ws / "PROMPT.md", "inside");
        write_file(outside.path / "secret", "secret");
        CHECK(safe_open::for_reading(ws, ws / "PROMPT.md").get() >= 0);
        CHECK(safe_open::for_reading(ws, ws / "missing.md").get() < 0);

        fs::create_symlink(outside.path / "secret", ws / "SPECS.md");
        CHECK_THROWS_AS(safe_open::for_reading(ws, ws / "SPECS.md"), safe_open::link_refused);
        fs::create_symlink(outside.path, ws / "docs");
        CHECK_THROWS_AS(safe_open::for_reading(ws, ws / "docs" / "secret"),
                        safe_open::link_refused);

        // An absolute --prompt-file outside the workspace is the user's choice.
        CHECK(safe_open::for_reading(ws, outside.path / "secret").get() >= 0);
    });
}

TEST_CASE("safe_open: a link that stays beneath the directory may be read through (openat2)") {
    if (!safe_open::has_openat2()) return;
    temp_dir dir;
    write_file(dir.path / "real.md", "content");
    fs::create_symlink("real.md", dir.path / "alias.md");
    CHECK(safe_open::for_reading(dir.path, dir.path / "alias.md").get() >= 0);
    // ... but never written through.
    CHECK_THROWS_AS(safe_open::for_writing(dir.path, "alias.md", O_WRONLY),
                    safe_open::link_refused);
}
