// The layout of ralphd's state directory: the directory of its database ($XDG_STATE_HOME/ralph by
// default). Every name in it but the database's default one (common/paths, shared with ralphctl)
// is spelled here and nowhere else:
//   ralph.db, ralph.db-wal, ralph.db-shm   the database (SQLite, WAL)
//   ralph.db.lock                          one daemon per database (flock); holds its pid
//   ralphd.log                             the log of ralphd --daemonize without --log-file
//   web-token                              the secret of ralphd --listen (server/web_gate)
//   output/<loop>.log                      each loop's output, append-only (store/output_log)
//   prompts/<loop>.prompt.md               each loop's current prompt (loop/loop_runner)
//   tmp/loop-<loop>/                       the private TMPDIR of an attempt that gets one
//   worktrees/loop-<loop>/                 the git worktree of a --worktree loop
//   attempts/<attempt>/                    a running attempt's ralph-shim: its answer, journal and
//                                          exit status (common/shim_protocol.hpp); removed once
//                                          the attempt is recorded
// (ralphctl's record of a moved fallback socket directory, socket-dir, is common/paths'.)
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

namespace ralph {

// A write in the state directory that failed (a prompt, an output file, an attempt's files): a
// fault of ralph's storage, never of a loop, whatever its cause (storage_health degrades ralphd
// for it). The errno when it is known, else EIO.
class state_write_error : public std::system_error {
  public:
    state_write_error(int error, const std::string& what)
        : std::system_error(error, std::generic_category(), what) {}
};

class state_dir {
  public:
    explicit state_dir(std::filesystem::path database) : database_(std::move(database)) {}

    const std::filesystem::path& database() const { return database_; }
    std::filesystem::path root() const { return database_.parent_path(); }
    std::filesystem::path lock_file() const { return database_.string() + ".lock"; }
    std::filesystem::path web_token_file() const { return root() / "web-token"; }
    std::filesystem::path log_file() const { return root() / "ralphd.log"; }

    std::filesystem::path output_dir() const { return root() / "output"; }
    static std::string output_file_name(std::int64_t loop_id) {
        return std::to_string(loop_id) + ".log";
    }

    std::filesystem::path prompt_dir() const { return root() / "prompts"; }
    static std::string prompt_file_name(std::int64_t loop_id) {
        return std::to_string(loop_id) + ".prompt.md";
    }
    std::filesystem::path prompt_of(std::int64_t loop_id) const {
        return prompt_dir() / prompt_file_name(loop_id);
    }

    std::filesystem::path scratch_dir() const { return root() / "tmp"; }
    std::filesystem::path scratch_of(std::int64_t loop_id) const {
        return scratch_dir() / ("loop-" + std::to_string(loop_id));
    }

    std::filesystem::path worktree_dir() const { return root() / "worktrees"; }
    std::filesystem::path worktree_of(std::int64_t loop_id) const {
        return worktree_dir() / ("loop-" + std::to_string(loop_id));
    }

    std::filesystem::path attempts_dir() const { return root() / "attempts"; }
    std::filesystem::path attempt_dir(std::int64_t attempt_id) const {
        return attempts_dir() / std::to_string(attempt_id);
    }

  private:
    std::filesystem::path database_;
};

}  // namespace ralph
