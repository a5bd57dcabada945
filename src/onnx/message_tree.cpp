#include <onnxstream/onnx/message_tree.hpp>

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <utility>

namespace onnxstream::onnx {

const char* to_string(message_kind kind) noexcept {
    switch (kind) {
        case message_kind::model: return "ModelProto";
        case message_kind::graph: return "GraphProto";
        case message_kind::node: return "NodeProto";
        case message_kind::attribute: return "AttributeProto";
        case message_kind::tensor: return "TensorProto";
        case message_kind::sparse_tensor: return "SparseTensorProto";
        case message_kind::training_info: return "TrainingInfoProto";
        case message_kind::function: return "FunctionProto";
        case message_kind::string_entry: return "StringStringEntryProto";
        case message_kind::operator_set: return "OperatorSetIdProto";
        case message_kind::value_info: return "ValueInfoProto";
    }
    return "message";
}

bool child_kind(message_kind kind, std::uint32_t n, message_kind& out) noexcept {
    auto is = [n](auto field) { return n == number(field); };
    switch (kind) {
        case message_kind::model:
            if (is(model_field::graph)) return out = message_kind::graph, true;
            if (is(model_field::training_info)) return out = message_kind::training_info, true;
            if (is(model_field::functions)) return out = message_kind::function, true;
            if (is(model_field::opset_import)) return out = message_kind::operator_set, true;
            if (is(model_field::metadata_props)) return out = message_kind::string_entry, true;
            return false;
        case message_kind::graph:
            if (is(graph_field::node)) return out = message_kind::node, true;
            if (is(graph_field::initializer)) return out = message_kind::tensor, true;
            if (is(graph_field::sparse_initializer)) return out = message_kind::sparse_tensor, true;
            if (is(graph_field::input) || is(graph_field::output) || is(graph_field::value_info))
                return out = message_kind::value_info, true;
            return false;
        case message_kind::node:
            if (is(node_field::attribute)) return out = message_kind::attribute, true;
            return false;
        case message_kind::attribute:
            if (is(attribute_field::t) || is(attribute_field::tensors)) return out = message_kind::tensor, true;
            if (is(attribute_field::g) || is(attribute_field::graphs)) return out = message_kind::graph, true;
            if (is(attribute_field::sparse_tensor) || is(attribute_field::sparse_tensors))
                return out = message_kind::sparse_tensor, true;
            return false;
        case message_kind::tensor:
            if (is(tensor_field::external_data)) return out = message_kind::string_entry, true;
            return false;
        case message_kind::sparse_tensor:
            if (is(sparse_tensor_field::values) || is(sparse_tensor_field::indices)) return out = message_kind::tensor, true;
            return false;
        case message_kind::training_info:
            if (is(training_info_field::initialization) || is(training_info_field::algorithm))
                return out = message_kind::graph, true;
            return false;
        case message_kind::function:
            if (is(function_field::node)) return out = message_kind::node, true;
            if (is(function_field::attribute_proto)) return out = message_kind::attribute, true;
            if (is(function_field::opset_import)) return out = message_kind::operator_set, true;
            return false;
        case message_kind::string_entry:
        case message_kind::operator_set:
        case message_kind::value_info:
            return false;
    }
    return false;
}

bool is_singular(message_kind kind, std::uint32_t n) noexcept {
    // Every field of these messages that onnx.proto does not declare `repeated` (oneof
    // members included: protobuf keeps the last of them too).
    auto any = [n](auto... fields) { return ((n == number(fields)) || ...); };
    switch (kind) {
        case message_kind::model:
            return any(model_field::ir_version, model_field::producer_name, model_field::producer_version,
                       model_field::domain, model_field::model_version, model_field::doc_string, model_field::graph);
        case message_kind::graph: return any(graph_field::name, graph_field::doc_string);
        case message_kind::node:
            return any(node_field::name, node_field::op_type, node_field::domain, node_field::doc_string, node_field::overload);
        case message_kind::attribute:
            return any(attribute_field::name, attribute_field::ref_attr_name, attribute_field::doc_string,
                       attribute_field::type, attribute_field::f, attribute_field::i, attribute_field::s,
                       attribute_field::t, attribute_field::g, attribute_field::sparse_tensor, attribute_field::tp);
        case message_kind::tensor:
            return any(tensor_field::data_type, tensor_field::segment, tensor_field::name, tensor_field::raw_data,
                       tensor_field::doc_string, tensor_field::data_location);
        case message_kind::sparse_tensor: return any(sparse_tensor_field::values, sparse_tensor_field::indices);
        case message_kind::training_info:
            return any(training_info_field::initialization, training_info_field::algorithm);
        case message_kind::function:
            return any(function_field::name, function_field::doc_string, function_field::domain, function_field::overload);
        case message_kind::string_entry: return any(string_entry_field::key, string_entry_field::value);
        case message_kind::operator_set: return any(operator_set_field::domain, operator_set_field::version);
        case message_kind::value_info: return any(value_info_field::name, value_info_field::type, value_info_field::doc_string);
    }
    return false;
}

namespace {

// The names of the singular fields, for messages about them.
std::string singular_field_name(message_kind kind, std::uint32_t n) {
    auto is = [n](auto field) { return n == number(field); };
    switch (kind) {
        case message_kind::model:
            if (is(model_field::ir_version)) return "ir_version";
            if (is(model_field::producer_name)) return "producer_name";
            if (is(model_field::producer_version)) return "producer_version";
            if (is(model_field::domain)) return "domain";
            if (is(model_field::model_version)) return "model_version";
            if (is(model_field::doc_string)) return "doc_string";
            break;
        case message_kind::graph:
            if (is(graph_field::name)) return "name";
            if (is(graph_field::doc_string)) return "doc_string";
            break;
        case message_kind::node:
            if (is(node_field::name)) return "name";
            if (is(node_field::op_type)) return "op_type";
            if (is(node_field::domain)) return "domain";
            if (is(node_field::doc_string)) return "doc_string";
            if (is(node_field::overload)) return "overload";
            break;
        case message_kind::attribute:
            if (is(attribute_field::name)) return "name";
            if (is(attribute_field::type)) return "type";
            if (is(attribute_field::f)) return "f";
            if (is(attribute_field::i)) return "i";
            if (is(attribute_field::s)) return "s";
            if (is(attribute_field::tp)) return "tp";
            if (is(attribute_field::doc_string)) return "doc_string";
            if (is(attribute_field::ref_attr_name)) return "ref_attr_name";
            break;
        case message_kind::tensor:
            if (is(tensor_field::segment)) return "segment";
            if (is(tensor_field::name)) return "name";
            if (is(tensor_field::data_location)) return "data_location";
            if (is(tensor_field::doc_string)) return "doc_string";
            break;
        case message_kind::value_info:
            if (is(value_info_field::name)) return "name";
            if (is(value_info_field::type)) return "type";
            if (is(value_info_field::doc_string)) return "doc_string";
            break;
        case message_kind::string_entry:
            if (is(string_entry_field::key)) return "key";
            if (is(string_entry_field::value)) return "value";
            break;
        case message_kind::operator_set:
            if (is(operator_set_field::domain)) return "domain";
            if (is(operator_set_field::version)) return "version";
            break;
        case message_kind::function:
            if (is(function_field::name)) return "name";
            if (is(function_field::domain)) return "domain";
            if (is(function_field::doc_string)) return "doc_string";
            if (is(function_field::overload)) return "overload";
            break;
        default:
            break;
    }
    return "field" + std::to_string(n);
}

}  // namespace

std::string field_name(message_kind kind, std::uint32_t n) {
    auto is = [n](auto field) { return n == number(field); };
    switch (kind) {
        case message_kind::model:
            if (is(model_field::graph)) return "graph";
            if (is(model_field::training_info)) return "training_info";
            if (is(model_field::functions)) return "functions";
            if (is(model_field::opset_import)) return "opset_import";
            if (is(model_field::metadata_props)) return "metadata_props";
            break;
        case message_kind::graph:
            if (is(graph_field::node)) return "node";
            if (is(graph_field::initializer)) return "initializer";
            if (is(graph_field::sparse_initializer)) return "sparse_initializer";
            if (is(graph_field::input)) return "input";
            if (is(graph_field::output)) return "output";
            if (is(graph_field::value_info)) return "value_info";
            break;
        case message_kind::node:
            if (is(node_field::attribute)) return "attribute";
            break;
        case message_kind::attribute:
            if (is(attribute_field::t)) return "t";
            if (is(attribute_field::tensors)) return "tensors";
            if (is(attribute_field::g)) return "g";
            if (is(attribute_field::graphs)) return "graphs";
            if (is(attribute_field::sparse_tensor)) return "sparse_tensor";
            if (is(attribute_field::sparse_tensors)) return "sparse_tensors";
            break;
        case message_kind::tensor:
            if (is(tensor_field::external_data)) return "external_data";
            if (is(tensor_field::raw_data)) return "raw_data";
            if (is(tensor_field::dims)) return "dims";
            if (is(tensor_field::data_type)) return "data_type";
            break;
        case message_kind::sparse_tensor:
            if (is(sparse_tensor_field::values)) return "values";
            if (is(sparse_tensor_field::indices)) return "indices";
            break;
        case message_kind::training_info:
            if (is(training_info_field::initialization)) return "initialization";
            if (is(training_info_field::algorithm)) return "algorithm";
            break;
        case message_kind::function:
            if (is(function_field::node)) return "node";
            if (is(function_field::attribute_proto)) return "attribute_proto";
            if (is(function_field::opset_import)) return "opset_import";
            break;
        default:
            break;
    }
    return singular_field_name(kind, n);
}

struct message_tree::builder {
    message_tree& tree;
    const tree_options& options;
    std::vector<proto::field_token> scratch;  // reused: tokens are copied out before descending

    failure fail(error_code code, std::string what, std::uint64_t offset, std::uint32_t message_index) {
        error e;
        e.code = code;
        e.message = std::move(what);
        e.hint = code == error_code::limit_exceeded ? "the model is far larger than any real one; raise the limit only if you trust it"
                                                    : "the file is damaged or is not an ONNX model";
        e.offset = offset;
        e.field_path = tree.path(message_index);
        return failure(std::move(e));
    }

    // A singular field written twice means something else to protobuf than to any code
    // that reads one occurrence: it keeps the last scalar or string and merges messages
    // (two `graph` fields are one graph holding the nodes of both). Rather than teach
    // every reader those rules, a model that relies on them is refused here, once.
    result<void> check_singular(std::uint32_t index, message_kind kind, std::size_t first, std::size_t count) {
        // (number, wire type) of the singular fields seen: a few dozen at most, so a
        // message of millions of fields costs one pass.
        std::vector<std::pair<std::uint32_t, proto::wire_type>> seen;
        for (std::size_t i = 0; i < count; ++i) {
            const auto& token = tree.fields_[first + i].token;
            if (!is_singular(kind, token.number)) continue;
            // A field of another wire type is an unknown field to protobuf, not a copy.
            bool again = false;
            for (const auto& [number_seen, type_seen] : seen) again = again || (number_seen == token.number && type_seen == token.type);
            if (!again) {
                seen.emplace_back(token.number, token.type);
                continue;
            }
            message_kind sub{};
            const bool is_message = child_kind(kind, token.number, sub) ||
                                    (kind == message_kind::value_info && token.number == number(value_info_field::type)) ||
                                    (kind == message_kind::tensor && token.number == number(tensor_field::segment)) ||
                                    (kind == message_kind::attribute && token.number == number(attribute_field::tp));
            error e(error_code::not_onnx,
                    std::string(to_string(kind)) + " field '" + field_name(kind, token.number) +
                        "' appears more than once; protobuf would " +
                        (is_message ? "merge the copies into one message" : "keep only the last one") +
                        ", and onnxstream refuses to guess which one a runtime reads",
                    "re-save the model with onnx (python3 -c \"import onnx,sys; onnx.save(onnx.load(sys.argv[1]), sys.argv[2])\" IN OUT), "
                    "which writes each field once");
            e.offset = token.header_offset;
            e.field_path = tree.path(index);
            return failure(std::move(e));
        }
        return {};
    }

    // Tokenizes message `index` (already registered), then descends into its children.
    result<void> build(std::uint32_t index) {
        const auto begin = tree.messages_[index].begin;
        const auto end = tree.messages_[index].end;
        const auto first = tree.fields_.size();
        scratch.clear();
        if (auto tokenized = proto::tokenize(tree.bytes_, begin, end, scratch); !tokenized) {
            auto e = std::move(tokenized).error();
            e.field_path = tree.path(index);
            return failure(std::move(e));
        }
        const std::size_t count = scratch.size();
        if (first + count > options.max_fields)
            return fail(error_code::limit_exceeded, "the model has more than " + std::to_string(options.max_fields) + " fields",
                        begin, index);
        for (const auto& token : scratch) tree.fields_.push_back({token, no_index, index});
        tree.messages_[index].first_field = static_cast<std::uint32_t>(first);
        tree.messages_[index].field_count = static_cast<std::uint32_t>(count);

        const auto kind = tree.messages_[index].kind;
        const auto depth = tree.messages_[index].depth;
        ONNXSTREAM_TRY(check_singular(index, kind, first, count));
        // Children per field number, so that path() needs no scan of the siblings (a graph
        // may hold millions of them). Few numbers hold messages: a short list will do.
        std::vector<std::pair<std::uint32_t, std::uint32_t>> per_number;
        auto next_ordinal = [&per_number](std::uint32_t n) {
            for (auto& [number_seen, count_seen] : per_number)
                if (number_seen == n) return count_seen++;
            per_number.emplace_back(n, 1U);
            return 0U;
        };
        for (std::size_t i = 0; i < count; ++i) {
            const auto field_index = static_cast<std::uint32_t>(first + i);
            const auto token = tree.fields_[field_index].token;
            message_kind sub{};
            if (!child_kind(kind, token.number, sub)) continue;
            if (token.type != proto::wire_type::length_delimited)
                return fail(error_code::not_onnx,
                            std::string(to_string(kind)) + " field '" + field_name(kind, token.number) +
                                "' should hold a message but has wire type " +
                                std::to_string(static_cast<int>(token.type)),
                            token.header_offset, index);
            if (depth + 1U > options.max_depth)
                return fail(error_code::limit_exceeded,
                            "messages are nested deeper than " + std::to_string(options.max_depth) + " levels",
                            token.header_offset, index);
            if (tree.messages_.size() >= options.max_messages)
                return fail(error_code::limit_exceeded,
                            "the model has more than " + std::to_string(options.max_messages) + " messages",
                            token.header_offset, index);
            message child;
            child.kind = sub;
            child.depth = static_cast<std::uint16_t>(depth + 1);
            child.parent = index;
            child.parent_field = field_index;
            child.begin = token.payload_offset;
            child.end = token.end_offset();
            child.ordinal = next_ordinal(token.number);
            const auto child_index = static_cast<std::uint32_t>(tree.messages_.size());
            tree.messages_.push_back(child);
            tree.fields_[field_index].child = child_index;
            ONNXSTREAM_TRY(build(child_index));
        }
        for (std::size_t i = 0; i < count; ++i) {
            const auto& f = tree.fields_[first + i];
            if (f.child == no_index) continue;
            for (const auto& [number_seen, count_seen] : per_number)
                if (number_seen == f.token.number) tree.messages_[f.child].repeated = count_seen > 1;
        }
        return {};
    }
};

result<message_tree> message_tree::parse(std::span<const std::byte> bytes, const tree_options& options) {
    message_tree tree;
    tree.bytes_ = bytes;
    if (bytes.empty()) return failure(error_code::not_onnx, "the file is empty", "an ONNX model is a protobuf ModelProto");
    message root;
    root.kind = message_kind::model;
    root.begin = 0;
    root.end = bytes.size();
    tree.messages_.push_back(root);
    builder b{tree, options, {}};
    if (auto built = b.build(0); !built) {
        auto e = std::move(built).error();
        if (e.code == error_code::malformed && tree.messages_.size() == 1)
            e.message = "not an ONNX model (" + e.message + ")";
        return failure(std::move(e));
    }
    const auto* ir_version = tree.find(0, number(model_field::ir_version));
    if (ir_version == nullptr || ir_version->token.type != proto::wire_type::varint)
        return failure(error_code::not_onnx, "not an ONNX model: the file is protobuf but has no ir_version",
                       "check that this is a .onnx model file and not a data file or another format");
    return tree;
}

std::string_view message_tree::text(const field_entry& f) const {
    const auto bytes = payload(f);
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

const field_entry* message_tree::find(std::uint32_t message_index, std::uint32_t n) const {
    for (const auto& f : fields(message_index))
        if (f.token.number == n) return &f;
    return nullptr;
}

std::string_view message_tree::find_text(std::uint32_t message_index, std::uint32_t n) const {
    const auto* f = find(message_index, n);
    if (f == nullptr || f->token.type != proto::wire_type::length_delimited) return {};
    return text(*f);
}

std::string message_tree::path(std::uint32_t message_index) const {
    std::vector<std::string> parts;
    for (std::uint32_t m = message_index; m != no_index && m < messages_.size() && messages_[m].parent != no_index;
         m = messages_[m].parent) {
        const auto& child = messages_[m];
        const auto& parent = messages_[child.parent];
        const auto n = fields_[child.parent_field].token.number;
        std::string part = field_name(parent.kind, n);
        if (child.repeated || n == number(graph_field::node) || n == number(graph_field::initializer) ||
            n == number(node_field::attribute))
            part += "[" + std::to_string(child.ordinal) + "]";
        parts.push_back(std::move(part));
    }
    std::string text;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (!text.empty()) text += '.';
        text += *it;
    }
    return text.empty() ? "model" : text;
}

}  // namespace onnxstream::onnx
