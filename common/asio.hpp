// The one header through which ralph includes Boost.Asio and Boost.Beast.
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> under
// GCC 12 in C++20 mode, so <utility> must come first. Never include Asio/Beast directly.
#pragma once

// Boost 1.74's Asio looks for Clang's coroutines in libc++'s <experimental/coroutine> only; with
// libstdc++ (Debian's clang) C++20's <coroutine> serves, as under GCC.
#if defined(__clang__) && defined(__cpp_impl_coroutine) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#define BOOST_ASIO_HAS_STD_COROUTINE 1
#endif

#include <string_view>
#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace ralph {
namespace net = boost::asio;
namespace beast = boost::beast;
using local_stream = net::local::stream_protocol;
template <typename T>
using awaitable = net::awaitable<T>;
using net::use_awaitable;

// Beast 1.74 has its own string_view type.
inline std::string_view to_std(beast::string_view s) { return {s.data(), s.size()}; }
}  // namespace ralph
