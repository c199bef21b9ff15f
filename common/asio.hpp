// The one header through which ralph includes Boost.Asio (and, through common/beast.hpp, Beast).
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> under
// GCC 12 in C++20 mode, so <utility> must come first. Never include Asio/Beast directly.
// Beast is in a header of its own: it costs about 4 s of compile time in every file that
// includes it, and only the API server and the client's connection speak HTTP.
#pragma once

// Boost 1.74's Asio looks for Clang's coroutines in libc++'s <experimental/coroutine> only; with
// libstdc++ (Debian's clang) C++20's <coroutine> serves, as under GCC.
#if defined(__clang__) && defined(__cpp_impl_coroutine) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#define BOOST_ASIO_HAS_STD_COROUTINE 1
#endif

#include <utility>

// What ralph uses of Asio, not <boost/asio.hpp> (all of it: a third more compile time).
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace ralph {
namespace net = boost::asio;
using local_stream = net::local::stream_protocol;
template <typename T>
using awaitable = net::awaitable<T>;
using net::use_awaitable;
}  // namespace ralph
