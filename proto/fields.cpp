#include "proto/fields.hpp"

#include <cstdio>
#include <limits>

namespace ralph::proto {
namespace {

[[noreturn]] void wrong_type(const char* name, const char* expected, const nlohmann::json& got) {
    throw rpc_error(error_kind::invalid_params, std::string("params.") + name + ": expected " +
                                                    expected + ", got " + got.type_name());
}

const nlohmann::json* present(const nlohmann::json& obj, const char* name) {
    auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

}  // namespace

const nlohmann::json& params_object(const nlohmann::json& params) {
    static const nlohmann::json empty = nlohmann::json::object();
    if (params.is_null()) return empty;
    if (!params.is_object())
        throw rpc_error(error_kind::invalid_params, "params must be an object with named fields");
    return params;
}

void read_field(const nlohmann::json& obj, const char* name, std::string& out) {
    if (auto* v = present(obj, name)) {
        if (!v->is_string()) wrong_type(name, "a string", *v);
        out = v->get<std::string>();
    }
}

void read_field(const nlohmann::json& obj, const char* name, std::int64_t& out) {
    if (auto* v = present(obj, name)) {
        if (!v->is_number_integer()) wrong_type(name, "an integer", *v);
        // nlohmann keeps an integer above the int64 range as unsigned; get<int64_t> would wrap it
        // to a negative number.
        if (v->is_number_unsigned() &&
            v->get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
            throw rpc_error(error_kind::invalid_params,
                            std::string("params.") + name + ": " + v->dump() +
                                " is out of range (at most 9223372036854775807)");
        out = v->get<std::int64_t>();
    }
}

void read_field(const nlohmann::json& obj, const char* name, double& out) {
    if (auto* v = present(obj, name)) {
        if (!v->is_number()) wrong_type(name, "a number", *v);
        out = v->get<double>();
    }
}

void read_field(const nlohmann::json& obj, const char* name, bool& out) {
    if (auto* v = present(obj, name)) {
        if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
        out = v->get<bool>();
    }
}

void read_field(const nlohmann::json& obj, const char* name, std::vector<std::string>& out) {
    if (auto* v = present(obj, name)) {
        if (!v->is_array()) wrong_type(name, "an array of strings", *v);
        out.clear();
        for (const auto& item : *v) {
            if (!item.is_string()) wrong_type(name, "an array of strings", item);
            out.push_back(item.get<std::string>());
        }
    }
}

void read_field(const nlohmann::json& obj, const char* name,
                std::map<std::string, std::string>& out) {
    if (auto* v = present(obj, name)) {
        if (!v->is_object()) wrong_type(name, "an object of strings", *v);
        out.clear();
        for (const auto& [key, value] : v->items()) {
            if (!value.is_string()) wrong_type(name, "an object of strings", value);
            out[key] = value.get<std::string>();
        }
    }
}

void read_loop_id(const nlohmann::json& obj, const char* name, std::int64_t& out) {
    read_required(obj, name, out);
    check_range(name, out, 1, std::numeric_limits<std::int64_t>::max());
}

void check_range(const char* name, std::int64_t value, std::int64_t min, std::int64_t max) {
    if (value < min || value > max)
        throw rpc_error(error_kind::invalid_params,
                        std::string("params.") + name + ": must be in " + std::to_string(min) +
                            ".." + std::to_string(max) + ", not " + std::to_string(value));
}

void check_range(const char* name, double value, double min, double max) {
    if (value >= min && value <= max) return;
    char text[128];
    std::snprintf(text, sizeof text, ": must be in %g..%g, not %g", min, max, value);
    throw rpc_error(error_kind::invalid_params, std::string("params.") + name + text);
}

}  // namespace ralph::proto
