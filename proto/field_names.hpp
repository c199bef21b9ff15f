// The JSON names of the request fields that a client names itself: the input schemas of
// `ralphctl mcp`'s tools describe these fields of loop.submit, loop.list, loop.get/loop.cancel
// and loop.output. The requests' from_json and to_json read and write the fields under these
// same constants, so a schema always names what the daemon reads, and a constant renamed or
// removed breaks the build of both.
#pragma once

namespace ralph::proto::field_name {

// loop_id_request, output_request
inline constexpr const char* id = "id";
// output_request
inline constexpr const char* last_lines = "last_lines";
// list_request
inline constexpr const char* limit = "limit";
// submit_params
inline constexpr const char* workspace = "workspace";
inline constexpr const char* prompt = "prompt";
inline constexpr const char* agent = "agent";
inline constexpr const char* command = "command";
inline constexpr const char* max_iterations = "max_iterations";
inline constexpr const char* name = "name";
inline constexpr const char* idempotency_key = "idempotency_key";
inline constexpr const char* allow_dirty = "allow_dirty";

}  // namespace ralph::proto::field_name
