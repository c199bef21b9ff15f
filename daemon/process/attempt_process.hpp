// An attempt's agent as ralphd sees it: running under its ralph-shim (common/shim_protocol.hpp),
// which holds the pipes, writes the output file and keeps the exit status, so that the agent
// goes on when ralphd crashes, is killed or restarts. ralphd starts the shim, or adopts the shim of
// an attempt an earlier ralphd started, and follows it through the attempt's directory: the
// journal says which bytes of the output file came from which stream, exit.json how it ended.
// A change there (inotify) or the end of the shim (pidfd) wakes the reader; nothing blocks the io
// thread but start(), which is run on the thread pool.
#pragma once

#include "common/asio.hpp"
#include "common/shim_protocol.hpp"
#include "common/unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ralph {

class attempt_process {
  public:
    // Starts `spec` under `shim_program` with the attempt directory `dir` (which must exist) and
    // waits until the agent runs. Blocks: call it off the io thread. Throws std::runtime_error with
    // the shim's message when the agent cannot be started (program missing, bad directory...).
    static shim::started start(const std::filesystem::path& shim_program,
                               const std::filesystem::path& dir, const shim::spec& spec);

    // What an earlier ralphd left in an attempt directory: the shim's answer, or nullopt when it
    // never wrote one (the daemon died while starting it, or the attempt predates shims).
    static std::optional<shim::started> find(const std::filesystem::path& dir);

    // Follows the attempt `started` describes from the first record of its journal. When the shim
    // is not running any more (nor the process with its pid), the attempt is read to its end at
    // once: its exit.json, or none when the shim died without writing one.
    attempt_process(net::io_context& io, std::filesystem::path dir, std::filesystem::path output,
                    const shim::started& started);
    attempt_process(const attempt_process&) = delete;
    attempt_process& operator=(const attempt_process&) = delete;
    ~attempt_process();

    const shim::started& started() const { return started_; }

    // A piece of the output, read back from the output file; `bytes` stays valid until the next
    // call of next().
    struct chunk {
        shim::stream stream;
        std::int64_t offset;
        std::string_view bytes;
    };
    // The next output (up to a few MiB), waiting for some; an empty result once the attempt is
    // over and everything was read.
    awaitable<std::vector<chunk>> next();
    // Once next() returned nothing: how the attempt ended; nullopt when the shim ended without
    // saying (killed, or the machine restarted): then its processes may still run (see kill()).
    const std::optional<shim::exit_info>& exit() const { return exit_; }
    // The end of what the shim wrote to the output file (all of it, journaled or not), once over.
    std::int64_t output_end() const;

    // Ends the attempt: SIGTERM to the shim, which ends the agent and everything it started
    // (SIGKILL after the grace). Nothing when the shim is gone.
    void terminate();
    // For an attempt whose shim is gone without an exit.json: kills what is left of it (the
    // agent's process group, the cgroup). Returns true when something was signalled.
    bool kill_leftovers();

  private:
    // Reads the records of the journal that came since the last call into records_.
    void read_journal();
    bool shim_alive() const;
    // Reads exit info from `file`: true when it holds one.
    bool read_exit(const std::filesystem::path& file);
    // Room for `size` bytes in buffer_, the first `used` of which are kept.
    void reserve_buffer(std::size_t size, std::size_t used);

    std::filesystem::path dir_;
    std::filesystem::path output_path_;
    shim::started started_;
    unique_fd output_;
    unique_fd journal_;
    std::int64_t journal_offset_ = 0;            // of the next record to read
    std::vector<shim::journal_record> records_;  // the last read: record_count_ of them
    std::size_t record_count_ = 0;
    std::size_t next_record_ = 0;  // the first not yet handed out
    std::int64_t read_end_ = 0;    // end of the last chunk handed out
    // The bytes of the chunks next() hands out, read into memory that is not cleared first: a
    // flood comes in records of 1 MiB, and zeroing each before reading it cost as much as the
    // read.
    std::unique_ptr<char[]> buffer_;
    std::size_t buffer_capacity_ = 0;
    unique_fd inotify_;
    unique_fd pidfd_;
    std::unique_ptr<net::posix::stream_descriptor> wakeup_;  // epoll over the two above
    bool over_ = false;
    std::optional<shim::exit_info> exit_;
};

}  // namespace ralph
