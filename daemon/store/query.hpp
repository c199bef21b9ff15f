// A cached prepared statement of the store lent to one call (store::prepared), shared by the
// store's files.
#pragma once

#include "daemon/store/store.hpp"

#include <optional>
#include <type_traits>
#include <utility>

namespace ralph {

// Reset when the call is done with it: a SELECT left unfinished would keep its read transaction
// open, and with it the WAL from being checkpointed. Offers the part of SQLite::Statement the
// store uses.
class store::query {
  public:
    explicit query(cached_statement& cached) : cached_(cached) { cached_.in_use = true; }
    ~query() {
        cached_.statement.tryReset();
        cached_.in_use = false;
    }
    query(const query&) = delete;
    query& operator=(const query&) = delete;

    template <typename... Args>
    void bind(Args&&... args) {
        cached_.statement.bind(std::forward<Args>(args)...);
    }
    // The value, or NULL when there is none (a bool as 0 or 1).
    template <typename T>
    void bind_optional(int index, const std::optional<T>& value) {
        if (!value)
            cached_.statement.bind(index);
        else if constexpr (std::is_same_v<T, bool>)
            cached_.statement.bind(index, *value ? 1 : 0);
        else
            cached_.statement.bind(index, *value);
    }
    int exec() { return cached_.statement.exec(); }
    bool executeStep() { return cached_.statement.executeStep(); }
    SQLite::Column getColumn(int index) { return cached_.statement.getColumn(index); }
    void reset() { cached_.statement.reset(); }
    operator SQLite::Statement&() { return cached_.statement; }

  private:
    cached_statement& cached_;
};

}  // namespace ralph
