// Reading typed fields out of JSON-RPC params. Every failure is an rpc_error(invalid_params)
// whose message names the field ("params.max_iterations: expected an integer, got string"),
// so handlers never see nlohmann's internal exception texts.
#pragma once

#include "proto/errors.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ralph::proto {

// Throws invalid_params unless `params` is an object (null counts as an empty object).
const nlohmann::json& params_object(const nlohmann::json& params);

// Optional fields: left unchanged when absent or null.
void read_field(const nlohmann::json& obj, const char* name, std::string& out);
void read_field(const nlohmann::json& obj, const char* name, std::int64_t& out);
void read_field(const nlohmann::json& obj, const char* name, double& out);
void read_field(const nlohmann::json& obj, const char* name, bool& out);
void read_field(const nlohmann::json& obj, const char* name, std::vector<std::string>& out);
void read_field(const nlohmann::json& obj, const char* name,
                std::map<std::string, std::string>& out);

template <typename T>
void read_field(const nlohmann::json& obj, const char* name, std::optional<T>& out) {
    if (!obj.contains(name) || obj.at(name).is_null()) return;
    T value{};
    read_field(obj, name, value);
    out = std::move(value);
}

// A result's field, read leniently (the client's side): `fallback` when absent or null.
template <typename T>
T read_or(const nlohmann::json& obj, const char* name, T fallback) {
    auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) return fallback;
    return it->template get<T>();
}

// Required field: throws invalid_params "params.NAME is required" when absent.
template <typename T>
void read_required(const nlohmann::json& obj, const char* name, T& out) {
    if (!obj.contains(name) || obj.at(name).is_null())
        throw rpc_error(error_kind::invalid_params, std::string("params.") + name + " is required");
    read_field(obj, name, out);
}

// A loop id (required): an integer in 1..2^63-1.
void read_loop_id(const nlohmann::json& obj, const char* name, std::int64_t& out);

// Throws invalid_params "params.NAME: must be in MIN..MAX" unless min <= value <= max (a NaN
// never is). Every count and duration a method accepts has such a bound (proto/API.md).
void check_range(const char* name, std::int64_t value, std::int64_t min, std::int64_t max);
void check_range(const char* name, double value, double min, double max);

}  // namespace ralph::proto
