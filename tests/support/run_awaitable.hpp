// Runs a coroutine of the daemon (the registry's dispatch, answer_request) to its end on an
// io_context of its own, for the unit tests and the fuzzers that call it synchronously.
#pragma once

#include "common/asio.hpp"

#include <exception>
#include <optional>
#include <utility>

namespace ralph::test {

// The result of `work`, or its exception rethrown.
template <typename T>
T run_awaitable(awaitable<T> work) {
    net::io_context io;
    std::optional<T> result;
    std::exception_ptr error;
    net::co_spawn(io, std::move(work), [&](std::exception_ptr e, T value) {
        error = e;
        if (!e) result = std::move(value);
    });
    io.run();
    if (error) std::rethrow_exception(error);
    return std::move(*result);
}

}  // namespace ralph::test
