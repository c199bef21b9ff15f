// Work that blocks (libgit2, starting a process, large deletes) runs on the daemon's thread pool
// while the io thread goes on; the awaiting coroutine resumes on its own executor with the result.
#pragma once

#include "common/asio.hpp"

#include <exception>
#include <type_traits>
#include <utility>

namespace ralph {

// Runs blocking `work` on the pool; co_await it to resume on the caller's executor with the
// result (or its exception). `work` must capture by reference only: GCC 12 destroys objects
// created in a co_await full-expression twice (PR 99576), which is harmless only for trivially
// destructible ones. Built from plain handlers rather than co_spawn, whose Boost 1.74 version
// passes the work through such a coroutine lambda.
template <typename Work>
awaitable<std::invoke_result_t<Work>> off_thread(net::thread_pool& pool, Work work) {
    static_assert(std::is_trivially_destructible_v<Work>, "capture by reference only");
    using result_type = std::invoke_result_t<Work>;
    return net::async_initiate<const net::use_awaitable_t<>&,
                               void(std::exception_ptr, result_type)>(
        [&pool](auto handler, Work job) {
            net::post(pool, [handler = std::move(handler), job = std::move(job)]() mutable {
                std::exception_ptr error;
                result_type result{};
                try {
                    result = job();
                } catch (...) {
                    error = std::current_exception();
                }
                auto home = net::get_associated_executor(handler);
                net::post(home, [handler = std::move(handler), error,
                                 result = std::move(result)]() mutable {
                    handler(error, std::move(result));
                });
            });
        },
        use_awaitable, std::move(work));
}

}  // namespace ralph
