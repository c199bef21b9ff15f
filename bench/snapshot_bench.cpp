// The per-iteration cost of the workspace's git work (bench/README.md, "snapshots"): in a real
// git repository of a few hundred committed files, each round does what a loop's iteration does
// to its workspace — a snapshot before, one file edited as an agent would, a snapshot after and
// their comparison — and the submit's dirty check is timed on its own. Uses only the public
// interface of daemon/workspace/workspace.hpp, so the same file builds against any version of it.
//   snapshot_bench [files] [rounds]      (default: 300 files, 200 rounds)
#include "daemon/workspace/workspace.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

void write_file(const fs::path& path, const std::string& content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

// Set-up only: the repository is made with the git CLI, outside the measured time.
void shell(const std::string& command) {
    if (std::system(command.c_str()) != 0) {
        std::fprintf(stderr, "snapshot_bench: failed: %s\n", command.c_str());
        std::exit(1);
    }
}

double milliseconds(clock_type::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

// Median and mean of the samples, in ms.
void report(const char* what, std::vector<double> samples) {
    std::sort(samples.begin(), samples.end());
    double total = 0;
    for (double s : samples) total += s;
    std::printf("%-32s median %.3f ms, mean %.3f ms, min %.3f ms over %zu\n", what,
                samples[samples.size() / 2], total / double(samples.size()), samples.front(),
                samples.size());
}

}  // namespace

int main(int argc, char** argv) {
    const int files = argc > 1 ? std::atoi(argv[1]) : 300;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
    char tmpl[] = "/tmp/ralph-snapshot-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return 1;
    const fs::path repo = fs::path(tmpl) / "repo";

    // Source-like files of 40 lines in 20 directories.
    for (int i = 0; i < files; ++i) {
        std::string content;
        for (int line = 0; line < 40; ++line)
            content += "file " + std::to_string(i) + " line " + std::to_string(line) +
                       ": some source text to diff\n";
        write_file(repo / ("dir" + std::to_string(i % 20)) / ("file" + std::to_string(i) + ".c"),
                   content);
    }
    const std::string git = "git -C '" + repo.string() + "' ";
    shell(git + "init -q");
    shell(git + "add -A");
    shell(git + "-c user.name=bench -c user.email=bench@localhost commit -q -m initial");

    std::vector<double> iteration, dirty;
    std::int64_t changed = 0;
    for (int round = 0; round < rounds; ++round) {
        auto t0 = clock_type::now();
        auto before = ralph::workspace::take_snapshot(repo);
        // The agent's work: one file gains a line (a new file content every round).
        write_file(repo / "dir3" / "file3.c",
                   "edited in round " + std::to_string(round) + "\nsome source text to diff\n");
        auto after = ralph::workspace::take_snapshot(repo);
        auto stats = ralph::workspace::compare(repo, before, after);
        iteration.push_back(milliseconds(clock_type::now() - t0));
        if (!stats.error.empty() || !before.error.empty()) {
            std::fprintf(stderr, "snapshot_bench: %s%s\n", before.error.c_str(),
                         stats.error.c_str());
            return 1;
        }
        changed += stats.files_changed;

        t0 = clock_type::now();
        auto state = ralph::workspace::check_dirty(repo);
        dirty.push_back(milliseconds(clock_type::now() - t0));
        if (!state.dirty) return 1;
    }
    if (changed != rounds) {
        std::fprintf(stderr, "snapshot_bench: %lld files changed in %d rounds, expected %d\n",
                     static_cast<long long>(changed), rounds, rounds);
        return 1;
    }
    std::printf("%d files, %d rounds\n", files, rounds);
    report("2 snapshots + compare", iteration);
    report("check_dirty", dirty);
    fs::remove_all(tmpl);
    return 0;
}
