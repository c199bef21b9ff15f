// The one header through which ralph includes Boost.Asio and Boost.Beast.
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> under
// GCC 12 in C++20 mode, so <utility> must come first. Never include Asio/Beast directly.
#pragma once

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
