// ralph-demo-agent: the bundled demo agent of the quick start. Each run is one "iteration": it
// reads the prompt on stdin, appends a step to demo-progress.md in the current directory (the
// loop's workspace), says what it did, and on its Nth run (N = $RALPH_DEMO_ITERATIONS, default 3)
// declares the work done with <promise>COMPLETE</promise>. It never touches anything else.
// `--version` prints its version and does nothing else (ralphctl agents asks it).
#include "ralph_version.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--version") {
        std::cout << "ralph-demo-agent " << RALPH_VERSION << "\n";
        return 0;
    }
    std::string prompt((std::istreambuf_iterator<char>(std::cin)),
                       std::istreambuf_iterator<char>());
    int target = 3;
    if (const char* value = std::getenv("RALPH_DEMO_ITERATIONS"))
        target = std::max(1, std::atoi(value));

    int done = 0;
    {
        std::ifstream progress("demo-progress.md");
        std::string line;
        while (std::getline(progress, line))
            if (line.rfind("- step ", 0) == 0) ++done;
    }
    int step = done + 1;
    std::cout << "demo agent: read a prompt of " << prompt.size() << " bytes\n";
    std::cout << "demo agent: working on step " << step << " of " << target << "...\n"
              << std::flush;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::ofstream("demo-progress.md", std::ios::app) << "- step " << step << " done\n";
    std::cout << "demo agent: wrote step " << step << " to demo-progress.md\n";
    if (step >= target) {
        std::cout << "All " << target << " steps are done.\n<promise>COMPLETE</promise>\n";
    } else {
        std::cout << "More work remains.\n";
    }
    return 0;
}
