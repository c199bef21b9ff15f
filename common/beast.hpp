// The one header through which ralph includes Boost.Beast (HTTP and WebSocket), after Asio
// (common/asio.hpp). Only what speaks HTTP includes it: the API server and the client's
// connection.
#pragma once

#include "common/asio.hpp"

#include <string_view>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace ralph {
namespace beast = boost::beast;

// Beast 1.74 has its own string_view type.
inline std::string_view to_std(beast::string_view s) { return {s.data(), s.size()}; }
}  // namespace ralph
