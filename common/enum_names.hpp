// The one way to name an enum's values — the names the API, the database, the command line and
// the logs use: a constexpr table per enum, a std::array of entries that have a `value` and a
// `name` (enum_name<E>, or a struct with more columns, as proto's summary columns), and name_of,
// find_value and parse over it. A table may give a value several names (aliases): name_of
// answers the first. A table that names every value of its enum says so at compile time with
// static_assert(names_in_order(table, last value)).
//
// The names are data of the API and of the database (loop states, terminations...): renaming
// one is a change of both, never a refactoring.
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace ralph {

template <typename Enum>
struct enum_name {
    Enum value;
    std::string_view name;
};

// The name of `value` in `table`: its first entry's; "" when the table has none.
template <typename Table, typename Enum>
constexpr std::string_view name_of(const Table& table, Enum value) {
    for (const auto& entry : table)
        if (entry.value == value) return entry.name;
    return {};
}

// The value named `name` in `table`; none when no entry has that name.
template <typename Table>
constexpr auto find_value(const Table& table, std::string_view name)
    -> std::optional<std::remove_cvref_t<decltype(std::begin(table)->value)>> {
    for (const auto& entry : table)
        if (entry.name == name) return entry.value;
    return std::nullopt;
}

// The value named `name` in `table`, or std::invalid_argument with a message that names what
// was expected: "unknown loop state 'x' (use queued, running, ... or stalled)".
template <typename Table>
auto parse(const Table& table, std::string_view name, std::string_view what) {
    if (auto value = find_value(table, name)) return *value;
    std::string choices;
    const std::size_t count = std::size(table);
    for (std::size_t i = 0; i < count; ++i) {
        if (i > 0) choices += i + 1 == count ? " or " : ", ";
        choices += table[i].name.empty() ? std::string("''") : std::string(table[i].name);
    }
    throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(name) +
                                "' (use " + choices + ")");
}

// Whether `table` has exactly the values 0, 1, ... `last` of its enum, once each and in that
// order: every value named (for an enum numbered from 0, `last` its last value).
template <typename Table, typename Enum>
constexpr bool names_in_order(const Table& table, Enum last) {
    const auto count = std::size_t(std::underlying_type_t<Enum>(last)) + 1;
    if (std::size(table) != count) return false;
    for (std::size_t i = 0; i < count; ++i)
        if (table[i].value != static_cast<Enum>(i)) return false;
    return true;
}

}  // namespace ralph
