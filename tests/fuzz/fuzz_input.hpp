// What the fuzz targets share: reading a fuzzer's input (a few bytes of settings, sections, pieces
// whose sizes the input chooses), a UTF-8 check of their own for the oracles, and failing loudly.
//
// A target's input is one byte string that libFuzzer mutates; each target reads it the same way:
// settings from the front (input_reader: a format, where to cut, how often to repeat), then the
// rest split into sections at section_marker (stdout, stderr, prompt...). The seed corpora
// (make-corpus.py) are written in this layout.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ralph::fuzz {

// Reads settings from the front of an input; an input used up gives zeros.
class input_reader {
  public:
    explicit input_reader(std::string_view data) : data_(data) {}
    std::uint8_t take_byte();
    std::uint64_t take_u64();  // little-endian
    std::string_view rest() const { return data_; }

  private:
    std::string_view data_;
};

// Between the sections of an input. make-corpus.py writes the same bytes.
inline constexpr std::string_view section_marker = "\n--fuzz-section--\n";

// The first `count` sections of `data`; missing ones are empty, the last one keeps the rest
// (further markers included).
std::vector<std::string_view> split_sections(std::string_view data, std::size_t count);

// `bytes` cut into consecutive pieces whose sizes `seed` chooses: single bytes, small and large
// pieces mixed, so that lines, UTF-8 characters and HTTP headers end up split anywhere. An empty
// `bytes` gives no piece.
std::vector<std::string_view> split_pieces(std::string_view bytes, std::uint64_t seed);

// `bytes` repeated so that a small input reaches the size bounds of the code under test (stderr
// tails, text windows, field limits) and shows a cost that is not linear: once for a `setting`
// below 0xF0, else 2^(setting - 0xEF) times (2 to 65536), never beyond max_bytes in all.
std::string repeated(std::string_view bytes, std::uint8_t setting, std::size_t max_bytes);

// Strict UTF-8: no overlong forms, surrogates or code points above U+10FFFF. Written here,
// independently of common/text, so that it can judge what the code under test produces.
bool is_valid_utf8(std::string_view text);

// Reports a broken invariant on stderr and aborts: libFuzzer keeps the input as a crash.
[[noreturn]] void fail(std::string_view what, std::string_view detail = {});

inline void check(bool ok, std::string_view what, std::string_view detail = {}) {
    if (!ok) fail(what, detail);
}

}  // namespace ralph::fuzz
