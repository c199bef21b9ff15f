// The contract between ralphd and ralph-shim (shim/ralph-shim.cpp), the small supervisor that runs
// one attempt's agent the way conmon runs a container: it holds the agent's pipes, writes its
// output to the loop's output file, keeps its exit status, and outlives ralphd. A daemon adopts the
// attempts of the one before it (crashed, killed, restarted, upgraded) through these files alone,
// so they only ever grow: a field may be added, never renamed or given another meaning.
//
// ralphd starts `ralph-shim ATTEMPT_DIR` with a shim_spec as JSON on its stdin, then reads one line
// of JSON from its stdout: a shim_started once the agent runs, or {"error": "…"} when it could not
// be started (with "state_errno": N when what failed was a write of ralph's state — the output
// file, the attempt's files — which is a storage fault, not the loop's). From then on the shim runs
// in a session of its own and speaks through files:
//   ATTEMPT_DIR/shim.json   shim_started: who runs (written before the answer, by rename)
//   ATTEMPT_DIR/journal     one journal_record per write to the loop's output file, in order
//   ATTEMPT_DIR/exit.json   shim_exit: how the attempt ended (by rename; the shim exits after it)
// SIGTERM to the shim ends the attempt: SIGTERM to everything the agent started, SIGKILL after the
// grace. When the agent exits by itself, whatever it left running is ended the same way.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ralph::shim {

inline constexpr const char* program_name = "ralph-shim";
inline constexpr const char* started_file = "shim.json";
inline constexpr const char* journal_file = "journal";
inline constexpr const char* exit_file = "exit.json";
// exit.json's space, taken when the attempt starts and renamed to exit.json at its end; a shim that
// could not rename it (a read-only directory) leaves exit.json's text in it.
inline constexpr const char* exit_room_file = "exit.json.room";

struct spec {
    std::string program;            // absolute path of the agent's executable
    std::vector<std::string> argv;  // argv[0] as the agent sees it
    std::vector<std::string> env;   // its complete environment, "KEY=VALUE"
    std::string cwd;
    std::string stdin_path;         // empty: /dev/null
    std::string output_file;        // the loop's output file; the agent's bytes are appended from
    std::int64_t output_start = 0;  // this offset (anything after it is cut: nobody's bytes)
    std::string cgroup;             // a cgroup v2 directory to create for the attempt, or empty:
                                    // the shim's own descendants are the attempt's processes
    std::int64_t kill_grace_ms = 5000;  // SIGTERM → SIGKILL
    // The most output the attempt may write (0 = no bound): past it the shim ends the attempt
    // as on SIGTERM and writes nothing more of it (exit_info::over_output_limit).
    std::int64_t max_output_bytes = 0;
};

struct started {
    pid_t shim_pid = 0;
    std::int64_t shim_start_time = 0;  // /proc/<pid>/stat starttime: identifies the process
    pid_t agent_pid = 0;               // also its process group
    std::int64_t agent_start_time = 0;
    std::string cgroup;  // the attempt's cgroup, empty when none could be made
};

// The output's streams, as journal_record::stream.
enum class stream : std::uint8_t { stdout_stream = 1, stderr_stream = 2 };

// Fixed size and layout, in the machine's byte order: `length` bytes of `stream` were written at
// `offset` of the output file at `ts_ms` (Unix epoch ms).
struct journal_record {
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    std::uint8_t stream = 0;
    std::uint8_t reserved[3] = {};
    std::int64_t ts_ms = 0;
};
static_assert(sizeof(journal_record) == 24);

struct exit_info {
    int wait_status = 0;           // the agent's, as waitpid gives it
    std::int64_t ended_at_ms = 0;  // when the agent exited (Unix epoch ms)
    std::int64_t output_end = 0;   // the output file's size when the shim finished
    std::int64_t lost_bytes = 0;   // output the file system refused (disk full, read-only)
    std::string lost_reason;       // why, for the first loss
    // The agent wrote more than spec::max_output_bytes: the attempt was ended for it, and what it
    // wrote past the bound was dropped (not lost: never meant to be kept).
    bool over_output_limit = false;
};

// Members by their names; a member missing from the JSON keeps its default, so that a newer
// ralphd reads what an older shim wrote (and the other way round).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(spec, program, argv, env, cwd, stdin_path,
                                                output_file, output_start, cgroup, kill_grace_ms,
                                                max_output_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(started, shim_pid, shim_start_time, agent_pid,
                                                agent_start_time, cgroup)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(exit_info, wait_status, ended_at_ms, output_end,
                                                lost_bytes, lost_reason, over_output_limit)

}  // namespace ralph::shim
