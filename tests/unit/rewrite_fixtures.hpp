// What the unit tests of the graph rewrites (extract, infer_shapes) build their inputs
// with: a graph value's ValueInfoProto written field by field, and a rewrite's options
// that write through the portable writer (the same bytes on every machine).
#pragma once

#include "proto_builder.hpp"

#include <onnxstream/io/plan_writer.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace test_support {

/// A dim: a number (dim_value) or a symbol (dim_param).
using value_dim = std::variant<std::int64_t, std::string>;

/// A float32 tensor's ValueInfoProto with these dims.
inline proto_builder float_value_info(std::string_view name, const std::vector<value_dim>& dims) {
    proto_builder shape;
    for (const auto& d : dims) {
        proto_builder dim;
        if (const auto* number = std::get_if<std::int64_t>(&d)) dim.varint_field(1, static_cast<std::uint64_t>(*number));
        else dim.string_field(2, std::get<std::string>(d));
        shape.message_field(1, dim);
    }
    proto_builder tensor_type;
    tensor_type.varint_field(1, 1).message_field(2, shape);
    proto_builder type;
    type.message_field(1, tensor_type);
    proto_builder value;
    value.string_field(1, name).message_field(2, type);
    return value;
}

/// A rewrite's options writing `output` through the portable writer.
template <class Options>
Options portable_options(const std::filesystem::path& output) {
    Options options;
    options.output = output;
    options.backend = onnxstream::io::writer_backend::portable;
    return options;
}

}  // namespace test_support
