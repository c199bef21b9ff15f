// The prompt of one iteration: sources, injected files and the wrapper (see prompt.hpp).
#include "daemon/loop/prompt.hpp"

#include "common/safe_open.hpp"
#include "common/templates.hpp"
#include "common/text.hpp"
#include "proto/errors.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <string_view>
#include <system_error>

namespace ralph {

namespace {

namespace fs = std::filesystem;

// The regular file `path` opened for reading, without leaving the workspace through a
// symbolic link (common/safe_open); an invalid fd when it is missing, unreadable, not a regular
// file or behind a link that leads out of the workspace (logged: its content may be anything
// of the host's, and a sandboxed agent must not read it through ralph).
unique_fd open_file(const fs::path& workspace, const fs::path& path) {
    try {
        return safe_open::for_reading(workspace, path);
    } catch (const safe_open::link_refused& e) {
        spdlog::warn("{}: not read", e.what());
        return {};
    }
}

// Up to `limit` bytes of `fd` from `offset`.
std::string read_at(int fd, off_t offset, std::size_t limit) {
    std::string text(limit, '\0');
    std::size_t done = 0;
    while (done < limit) {
        const ssize_t n = ::pread(fd, text.data() + done, limit - done, offset + off_t(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += std::size_t(n);
    }
    text.resize(done);
    return text;
}

off_t file_size(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 ? st.st_size : 0;
}

bool is_file(const fs::path& workspace, const fs::path& path) {
    return open_file(workspace, path).get() >= 0;
}

// Part of a file injected into the prompt.
struct excerpt {
    bool found = false;
    bool cut = false;
    std::string text;
};

// The first `limit` bytes of a file, cut at a UTF-8 character boundary. Reads no more than
// that, whatever the size of the file.
excerpt read_head(const fs::path& workspace, const fs::path& path, std::size_t limit) {
    excerpt result;
    unique_fd fd = open_file(workspace, path);
    if (fd.get() < 0) return result;
    result.found = true;
    result.text = read_at(fd.get(), 0, limit + 1);
    if (result.text.size() > limit) {
        result.cut = true;
        result.text.resize(text::utf8_head(result.text, limit).size());
    }
    return result;
}

// The last `limit` bytes of a file; when cut, from the start of its first whole line (or, in a
// single huge line, from the first whole UTF-8 character).
excerpt read_tail(const fs::path& workspace, const fs::path& path, std::size_t limit) {
    excerpt result;
    unique_fd fd = open_file(workspace, path);
    if (fd.get() < 0) return result;
    result.found = true;
    const auto size = std::uintmax_t(file_size(fd.get()));
    std::uintmax_t start = 0;
    if (size > limit) {
        start = size - limit;
        result.cut = true;
    }
    result.text = read_at(fd.get(), off_t(start), limit);
    if (result.cut) {
        std::size_t from = 0;
        if (start > 0) {
            const auto newline = result.text.find('\n');
            if (newline != std::string::npos && newline + 1 < result.text.size()) {
                from = newline + 1;
            } else {
                while (from < result.text.size() &&
                       (static_cast<unsigned char>(result.text[from]) & 0xC0) == 0x80)
                    ++from;
            }
        }
        result.text.erase(0, from);
    }
    return result;
}

std::string trim_end(std::string_view text) { return std::string(text::trim_end(text)); }

bool is_blank(std::string_view s) { return text::trim(s).empty(); }

// "- hint" per hint; a hint's further lines are indented to stay in its list item.
std::string steering_list(const std::vector<std::string>& hints) {
    std::string out;
    for (const auto& hint : hints) {
        const std::string text = trim_end(hint);
        if (is_blank(text)) continue;
        if (!out.empty()) out += '\n';
        out += "- ";
        for (char c : text) {
            out += c;
            if (c == '\n') out += "  ";
        }
    }
    return out;
}

// Whether a wrapper has the {{prompt}} placeholder (spaces inside the braces allowed).
bool has_prompt_placeholder(std::string_view wrapper) {
    for (auto open = wrapper.find("{{"); open != std::string_view::npos;
         open = wrapper.find("{{", open + 2)) {
        const auto close = wrapper.find("}}", open + 2);
        if (close == std::string_view::npos) return false;
        std::string_view name = wrapper.substr(open + 2, close - open - 2);
        while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
        while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
        if (name == "prompt") return true;
    }
    return false;
}

// The name the prompt gives the specs file: as configured, else SPECS.md or backlog.md.
std::string specs_display_name(const proto::submit_params& spec, const fs::path& found) {
    if (!spec.specs_file.empty()) return spec.specs_file;
    if (!found.empty()) return found.filename().string();
    return "SPECS.md";
}

// The specs file's values: specs, specs_name, specs_cut.
void add_specs(templates::template_values& values, const proto::submit_params& spec) {
    const fs::path workspace(spec.workspace);
    const fs::path specs = specs_path(spec);
    values["specs_name"] = specs_display_name(spec, specs);
    // Every name gets a value, "" when absent: a name without one would stay in the text.
    excerpt file = specs.empty() ? excerpt{} : read_head(workspace, specs, max_specs_bytes);
    values["specs"] = trim_end(std::move(file.text));
    values["specs_cut"] = file.cut ? "yes" : "";
}

}  // namespace

std::string read_notes_tail(const std::filesystem::path& workspace, std::size_t limit) {
    return read_tail(workspace, workspace / notes_file_name, limit).text;
}

bool read_workspace_file(const fs::path& workspace, const fs::path& path, std::string& out) {
    unique_fd fd = open_file(workspace, path);
    if (fd.get() < 0) return false;
    out = read_at(fd.get(), 0, std::size_t(file_size(fd.get())));
    return true;
}

prompt_source read_prompt_source(const proto::submit_params& spec) {
    if (!spec.prompt.empty()) return {spec.prompt, "inline"};
    std::string text;
    if (!spec.prompt_file.empty()) {
        if (!read_workspace_file(spec.workspace, spec.prompt_file, text))
            throw proto::rpc_error(proto::error_kind::invalid_prompt,
                                   "cannot read prompt file " + spec.prompt_file);
        return {text, spec.prompt_file};
    }
    const fs::path workspace(spec.workspace);
    for (const fs::path& candidate :
         {workspace / "PROMPT.md", workspace / ".ralph" / "prompt.md"}) {
        if (read_workspace_file(workspace, candidate, text) && !is_blank(text))
            return {text, candidate.string()};
    }
    return {std::string(templates::default_prompt), "default"};
}

fs::path specs_path(const proto::submit_params& spec) {
    const fs::path workspace(spec.workspace);
    if (!spec.specs_file.empty()) {
        // operator/ keeps an absolute specs_file as it is.
        fs::path path = (workspace / spec.specs_file).lexically_normal();
        return is_file(workspace, path) ? path : fs::path();
    }
    for (const char* name : {"SPECS.md", "backlog.md"}) {
        fs::path path = workspace / name;
        if (is_file(workspace, path)) return path;
    }
    return {};
}

std::string build_prompt(const proto::loop_info& loop, std::int64_t iteration,
                         const prompt_extras& extras) {
    const auto& spec = loop.spec;
    const fs::path workspace(spec.workspace);
    templates::template_values values;

    values["prompt"] = trim_end(read_prompt_source(spec).text);
    add_specs(values, spec);
    {
        excerpt file = read_head(workspace, workspace / "CONVENTIONS.md", max_specs_bytes);
        values["conventions"] = trim_end(std::move(file.text));
        values["conventions_cut"] = file.cut ? "yes" : "";
    }
    values["notes_file"] = notes_file_name;
    {
        excerpt file = read_tail(workspace, workspace / notes_file_name, max_notes_bytes);
        values["notes"] = trim_end(std::move(file.text));
        values["notes_cut"] = file.cut ? "yes" : "";
    }
    values["feedback"] = trim_end(extras.previous_feedback);
    values["steering"] = steering_list(extras.steering);
    values["judge_reasons"] = trim_end(extras.judge_reasons);

    values["iteration"] = std::to_string(iteration);
    values["max_iterations"] = spec.max_iterations > 0 ? std::to_string(spec.max_iterations) : "";
    values["min_iterations"] = spec.min_iterations > 1 ? std::to_string(spec.min_iterations) : "";
    values["completion_phrase"] = spec.completion_phrase;
    values["completion_signal"] = "<promise>" + spec.completion_phrase + "</promise>";
    values["status_signal"] =
        spec.status_tag.empty()
            ? ""
            : "<" + spec.status_tag + ">" + spec.status_value + "</" + spec.status_tag + ">";
    values["backlog_rule"] = spec.backlog_rule ? "yes" : "";
    values["state_file"] = state_file_name;

    std::string wrapper;
    if (!read_workspace_file(workspace, workspace / wrapper_override_name, wrapper))
        wrapper = templates::prompt_wrapper;
    else if (!has_prompt_placeholder(wrapper))
        wrapper = "{{prompt}}\n\n" + wrapper;  // never lose the instructions themselves
    return templates::render(wrapper, values);
}

std::string build_judge_prompt(const proto::loop_info& loop, const judge_inputs& inputs) {
    const auto& spec = loop.spec;
    templates::template_values values;
    values["prompt"] = trim_end(read_prompt_source(spec).text);
    add_specs(values, spec);
    values["iteration"] = std::to_string(inputs.iteration);
    values["completion_rule"] = inputs.completion_rule;
    // An agent's answer may be megabytes: its end, where the claim is, as for the notes.
    std::string_view answer = text::trim_end(inputs.final_answer);
    if (answer.size() > max_answer_bytes) {
        answer.remove_prefix(answer.size() - max_answer_bytes);
        while (!answer.empty() && (static_cast<unsigned char>(answer.front()) & 0xC0) == 0x80)
            answer.remove_prefix(1);
        values["final_answer"] = "(cut: its last 64 KiB)\n" + std::string(answer);
    } else {
        values["final_answer"] = std::string(answer);
    }
    values["diff"] = trim_end(inputs.diff);
    values["diff_cut"] = inputs.diff_cut ? "yes" : "";
    values["base_head"] = inputs.base_head;
    values["diff_unavailable"] = inputs.diff_unavailable;
    const bool verified = inputs.verify_exit.has_value();
    values["verify_command"] = verified ? spec.verify_command : "";
    values["verify_exit"] = verified ? std::to_string(*inputs.verify_exit) : "";
    values["verify_output"] = trim_end(inputs.verify_output);
    // The user's template, fixed at submit: never the working tree's, which the worker writes.
    return templates::render(
        spec.judge_prompt.empty() ? templates::judge_prompt : std::string_view(spec.judge_prompt),
        values);
}

}  // namespace ralph
