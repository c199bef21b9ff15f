// The input reading and oracle helpers of fuzz_input.hpp.
#include "fuzz_input.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace ralph::fuzz {

std::uint8_t input_reader::take_byte() {
    if (data_.empty()) return 0;
    const auto byte = static_cast<std::uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return byte;
}

std::uint64_t input_reader::take_u64() {
    std::uint64_t value = 0;
    for (int k = 0; k < 8; ++k) value |= std::uint64_t(take_byte()) << (8 * k);
    return value;
}

std::vector<std::string_view> split_sections(std::string_view data, std::size_t count) {
    std::vector<std::string_view> sections;
    while (sections.size() + 1 < count) {
        const auto marker = data.find(section_marker);
        if (marker == std::string_view::npos) break;
        sections.push_back(data.substr(0, marker));
        data.remove_prefix(marker + section_marker.size());
    }
    sections.push_back(data);
    sections.resize(count);
    return sections;
}

std::vector<std::string_view> split_pieces(std::string_view bytes, std::uint64_t seed) {
    // splitmix64: every bit of the seed changes the cuts.
    auto next = [&seed] {
        std::uint64_t z = (seed += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    };
    static constexpr std::size_t largest[] = {1, 16, 256, 64 << 10};
    std::vector<std::string_view> pieces;
    while (!bytes.empty()) {
        const std::uint64_t r = next();
        const std::size_t size = std::min<std::size_t>(1 + (r >> 8) % largest[r & 3], bytes.size());
        pieces.push_back(bytes.substr(0, size));
        bytes.remove_prefix(size);
    }
    return pieces;
}

std::string repeated(std::string_view bytes, std::uint8_t setting, std::size_t max_bytes) {
    std::size_t times = setting < 0xF0 ? 1 : std::size_t(1) << (setting - 0xEF);
    if (!bytes.empty()) times = std::min(times, std::max<std::size_t>(max_bytes / bytes.size(), 1));
    std::string out;
    out.reserve(bytes.size() * times);
    for (std::size_t k = 0; k < times; ++k) out.append(bytes);
    return out;
}

bool is_valid_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        // The lead byte gives the length and the range of the second byte (RFC 3629's table).
        std::size_t length = 0;
        unsigned char low = 0x80, high = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            length = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            length = 3;
            if (c == 0xE0) low = 0xA0;   // overlong
            if (c == 0xED) high = 0x9F;  // surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            length = 4;
            if (c == 0xF0) low = 0x90;   // overlong
            if (c == 0xF4) high = 0x8F;  // above U+10FFFF
        } else {
            return false;
        }
        if (n - i < length || s[i + 1] < low || s[i + 1] > high) return false;
        for (std::size_t k = 2; k < length; ++k)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return false;
        i += length;
    }
    return true;
}

void fail(std::string_view what, std::string_view detail) {
    std::fprintf(stderr, "fuzz: %.*s\n", int(what.size()), what.data());
    if (!detail.empty()) {
        const std::size_t shown = std::min<std::size_t>(detail.size(), 2000);
        std::fprintf(stderr, "fuzz: %.*s%s\n", int(shown), detail.data(),
                     shown < detail.size() ? "..." : "");
    }
    std::abort();
}

}  // namespace ralph::fuzz
