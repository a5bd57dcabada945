#include "convert_typing.hpp"

#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace onnxstream::ops::detail {

namespace {

using graph::empty_name;
using graph::name_id;
using graph::node_id;
using graph::none;
using graph::scope_id;
using onnx::number;

// TensorProto.DataType codes as stored in the model (onnx/data_type.hpp's table).
constexpr auto float32 = static_cast<std::int32_t>(onnx::data_type::float32);
constexpr auto int64 = static_cast<std::int32_t>(onnx::data_type::int64);
constexpr auto boolean = static_cast<std::int32_t>(onnx::data_type::boolean);

// What each operator version's schema admits, per slot (see make_convert_schemas.py).
struct op_schema {
    std::string_view op;
    std::int64_t since = 0;
    std::uint32_t inputs = 0;
    std::uint32_t outputs = 0;
    std::uint32_t in_float32 = 0, in_float16 = 0, in_bfloat16 = 0;
    std::uint32_t out_float32 = 0, out_float16 = 0, out_bfloat16 = 0;
    std::array<std::int32_t, 4> out_types{};  // an output slot's one allowed type, else 0 (the last repeats)
    std::string_view groups;                  // per slot, inputs '|' outputs: a shared constraint's letter
};
constexpr op_schema schemas[] = {
#include "convert_schemas.inc"
};

// The schema of `op` in effect at `opset`, or null when ONNX has none.
// The rows are sorted by operator, then version (make_convert_schemas.py sorts them), so an
// operator's rows are found by a binary search: a scan of the 420 rows for every node was
// half of convert's time on a graph of a million nodes.
constexpr bool schemas_sorted() {
    for (std::size_t i = 1; i < std::size(schemas); ++i)
        if (schemas[i].op < schemas[i - 1].op || (schemas[i].op == schemas[i - 1].op && schemas[i].since <= schemas[i - 1].since))
            return false;
    return true;
}
static_assert(schemas_sorted(), "convert_schemas.inc must be sorted by operator, then version");

const op_schema* find_schema(std::string_view op, std::int64_t opset) {
    const auto* first = std::lower_bound(std::begin(schemas), std::end(schemas), op,
                                         [](const op_schema& s, std::string_view name) { return s.op < name; });
    const op_schema* found = nullptr;
    for (const auto* s = first; s != std::end(schemas) && s->op == op && s->since <= opset; ++s) found = s;
    return found;
}

// Bit `slot` of a mask; variadic slots share the last parameter's bit.
bool slot_bit(std::uint32_t mask, std::size_t slot, std::uint32_t count) {
    if (count == 0) return false;
    const auto index = std::min<std::size_t>({slot, static_cast<std::size_t>(count - 1U), 31U});
    return ((mask >> index) & 1U) != 0;
}

// The one type output `slot` of `schema` can have, or 0.
std::int32_t fixed_output_type(const op_schema& schema, std::size_t slot) {
    if (slot < schema.out_types.size()) return schema.out_types[slot];
    return schema.outputs <= schema.out_types.size() ? schema.out_types.back() : 0;  // a variadic last output
}

// The letter of slot `slot` in one side of a schema's groups ('-' fixed, '*' its own type).
char group_letter(std::string_view side, std::size_t slot) {
    if (side.empty()) return '-';
    return side[std::min(slot, side.size() - 1)];
}

// Integer types whose values float16 cannot hold (beyond 65504): a Cast of them to float
// gives values as wide as float32's range.
bool wider_than_float16(std::int32_t type) {
    using onnx::data_type;
    return type == static_cast<std::int32_t>(data_type::int32) || type == static_cast<std::int32_t>(data_type::int64) ||
           type == static_cast<std::int32_t>(data_type::uint32) || type == static_cast<std::int32_t>(data_type::uint64);
}

// Whether output `slot`'s type is set by an attribute (RandomNormal's dtype, HannWindow's
// output_datatype; float32 by default), not by any input: its type constraint's letter
// is no input's. Converting the inputs leaves such an output float32: it is cast instead.
bool type_from_attribute(const op_schema& schema, std::size_t slot) {
    const auto bar = schema.groups.find('|');
    if (bar == std::string_view::npos) return false;
    const auto letter = group_letter(schema.groups.substr(bar + 1), slot);
    return letter != '-' && letter != '*' && schema.groups.substr(0, bar).find(letter) == std::string_view::npos;
}

// Inputs kept float32 on nodes that otherwise compute in 16 bits, whatever the schema
// admits: runtimes read Resize's roi and scales while planning.
struct float32_slot {
    std::string_view op;
    std::size_t slot;
};
constexpr float32_slot float32_slots[] = {{"Resize", 1}, {"Resize", 2}, {"Upsample", 1}};

// Inputs whose type the operator takes as it is (any T): no cast is ever needed there.
bool takes_any_type(std::string_view op, std::size_t slot) {
    return (op == "Cast" && slot == 0) || (op == "CastLike" && slot == 0) || op == "Shape" || op == "Size";
}

bool standard_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

// The elem_type of a TypeProto payload's tensor_type, if it has one.
std::optional<std::int32_t> tensor_elem_type(std::span<const std::byte> bytes, std::uint64_t begin, std::uint64_t end) {
    std::vector<proto::field_token> fields;
    if (!proto::tokenize(bytes, begin, end, fields)) return std::nullopt;
    for (const auto& f : fields) {
        if (f.number != number(onnx::type_field::tensor_type) || f.type != proto::wire_type::length_delimited) continue;
        std::vector<proto::field_token> inner;
        if (!proto::tokenize(bytes, f.payload_offset, f.end_offset(), inner)) return std::nullopt;
        for (const auto& g : inner)
            if (g.number == number(onnx::tensor_type_field::elem_type) && g.type == proto::wire_type::varint)
                return static_cast<std::int32_t>(g.value);
        return std::nullopt;
    }
    return std::nullopt;
}

void put_varint(std::vector<std::byte>& out, std::uint64_t value) {
    const auto encoded = proto::encode_varint(value);
    out.insert(out.end(), encoded.view().begin(), encoded.view().end());
}

void put_length_delimited(std::vector<std::byte>& out, std::uint32_t field, std::span<const std::byte> payload) {
    put_varint(out, proto::make_tag(field, proto::wire_type::length_delimited));
    put_varint(out, payload.size());
    out.insert(out.end(), payload.begin(), payload.end());
}

void put_text(std::vector<std::byte>& out, std::uint32_t field, std::string_view text) {
    put_length_delimited(out, field, std::as_bytes(std::span(text.data(), text.size())));
}

// A TypeProto payload with its tensor_type's elem_type replaced; every other field copied.
std::vector<std::byte> retyped(std::span<const std::byte> bytes, std::uint64_t begin, std::uint64_t end, std::int32_t type) {
    std::vector<proto::field_token> fields;
    std::vector<std::byte> out;
    (void)proto::tokenize(bytes, begin, end, fields);  // it parsed once already (tensor_elem_type)
    for (const auto& f : fields) {
        const auto whole = bytes.subspan(f.header_offset, f.total_length());
        if (f.number != number(onnx::type_field::tensor_type) || f.type != proto::wire_type::length_delimited) {
            out.insert(out.end(), whole.begin(), whole.end());
            continue;
        }
        std::vector<proto::field_token> inner;
        (void)proto::tokenize(bytes, f.payload_offset, f.end_offset(), inner);
        std::vector<std::byte> tensor;
        for (const auto& g : inner) {
            if (g.number == number(onnx::tensor_type_field::elem_type) && g.type == proto::wire_type::varint) {
                put_varint(tensor, proto::make_tag(g.number, proto::wire_type::varint));
                put_varint(tensor, static_cast<std::uint64_t>(type));
            } else {
                const auto piece = bytes.subspan(g.header_offset, g.total_length());
                tensor.insert(tensor.end(), piece.begin(), piece.end());
            }
        }
        put_length_delimited(out, f.number, tensor);
    }
    return out;
}

class planner {
public:
    planner(graph::graph_model& model, const typing_options& options, onnx::tree_edits& edits)
        : model_(model), tree_(model.tree()), options_(options), edits_(edits) {
        for (const auto& op : options.block_ops) blocked_ops_.insert(op);
    }

    result<typing_result> run() {
        result_.convert_site.assign(model_.file().sites.size(), false);
        const auto names = model_.names.size();
        types_.assign(names, 0);
        half_.assign(names, false);
        read_declared_types();
        infer_scope(graph::main_scope);
        for (const auto s : model_.scopes.ids())
            if (model_.scopes[s].kind == graph::scope_kind::function) infer_scope(s);
        result_.float_values = static_cast<std::uint64_t>(std::count(types_.begin(), types_.end(), float32));
        collect_consumers();
        forced_float32_.assign(model_.nodes.size(), false);
        find_wide_values();
        // Each round computes in float32 the nodes whose types did not check; a node that
        // fails while computing in float32 cannot be helped. Every round adds a node: it ends.
        for (;;) {
            decide_values();
            const auto failures = type_failures();
            if (failures.empty()) break;
            for (const auto& f : failures) {
                if (blocked(f.node))
                    return failure(error_code::unsupported,
                                   "node " + model_.node_label(f.node) + " (" + std::string(model_.nodes[f.node].op_type()) +
                                       ") would not type-check after the conversion: " + f.why,
                                   "keep it in float32 with --block-ops, or convert the model with another tool");
                forced_float32_[f.node] = true;
                ++result_.nodes_type_checked_float32;
            }
        }
        choose_sites();
        edit_value_infos();
        find_no_op_casts();
        edit_cast_targets();
        insert_casts();
        return std::move(result_);
    }

private:
    // ------------------------------------------------------------ types in the input

    // The first type declared for a value stays.
    void declare(name_id name, std::int32_t type) {
        const auto i = static_cast<std::uint32_t>(name);
        if (name != empty_name && type != 0 && i < types_.size() && types_[i] == 0) types_[i] = type;
    }

    // 0 when unknown (a name made after the types were read, too).
    std::int32_t type_of(name_id name) const {
        const auto i = static_cast<std::uint32_t>(name);
        return i < types_.size() ? types_[i] : 0;
    }

    // Calls `f(name, type field)` for every ValueInfoProto (input, output, value_info) of
    // the graph scopes with a known name and a type, in file order. Walked twice (to read
    // the types, to edit them) rather than kept: a model may declare a million.
    template <class F>
    void for_each_value_info(F&& f) const {
        for (const auto s : model_.scopes.ids()) {
            const auto& scope = model_.scopes[s];
            if (scope.kind == graph::scope_kind::function || scope.message == none) continue;
            for (const auto& field : tree_.fields(scope.message)) {
                const auto n = field.number();
                if (field.child == none) continue;
                if (n != number(onnx::graph_field::input) && n != number(onnx::graph_field::output) &&
                    n != number(onnx::graph_field::value_info))
                    continue;
                const auto name = model_.names.find(tree_.find_text(field.child, number(onnx::value_info_field::name)));
                if (!name) continue;
                const auto* type = tree_.find(field.child, number(onnx::value_info_field::type));
                if (type == nullptr || type->type() != proto::wire_type::length_delimited) continue;
                f(*name, *type);
            }
        }
    }

    // ValueInfoProto messages of the graph scopes, by what they describe.
    void read_declared_types() {
        for_each_value_info([&](name_id name, const onnx::field_entry& type) {
            const auto elem = tensor_elem_type(tree_.bytes(), type.payload_offset(), type.end_offset());
            if (elem) declare(name, *elem);
        });
        {
            // Each tensor's body is read for its type, in file order: the pages behind go.
            graph::file_walk walk(model_);
            for (const auto t : model_.tensors.ids()) {
                walk.reached(t);
                declare(model_.tensors[t].name, model_.tensor_type(t));
            }
        }
        // Sparse initializers: the values tensor carries the type, the sparse tensor the name.
        const auto& file = model_.file();
        for (const auto i : file.sites.ids()) {
            const auto& site = file.sites[i];
            if (site.role != onnx::tensor_role::sparse_initializer) continue;
            const auto& msg = tree_.at(site.message);
            if (tree_.field(msg.parent_field).number() != number(onnx::sparse_tensor_field::values)) continue;
            const auto tensor = file.tensor(i);
            if (const auto name = model_.names.find(tensor->name)) declare(*name, tensor->data_type);
        }
    }

    std::int32_t attribute_type(node_id n, std::string_view attribute) const {
        const auto a = model_.attribute(n, attribute);
        if (!a) return 0;
        if (a->tensor != none) {
            const auto site = model_.site_of(a->tensor);
            return site == none ? 0 : model_.file().tensor(site)->data_type;
        }
        if (a->i) return static_cast<std::int32_t>(*a->i);
        return 0;
    }

    std::int32_t constant_type(node_id n) const {
        for (const auto& m : model_.attribute_messages(n)) {
            const auto a = graph::read_attribute(tree_, m);
            if (a.name == "value" && a.tensor != none) {
                const auto site = model_.site_of(a.tensor);
                return site == none ? 0 : model_.file().tensor(site)->data_type;
            }
            if (a.name == "value_float" || a.name == "value_floats") return float32;
            if (a.name == "value_int" || a.name == "value_ints") return int64;
            if (a.name == "value_string" || a.name == "value_strings") return 8;
        }
        return 0;
    }

    std::int32_t input_type(const graph::node& nd, std::size_t slot) const {
        return slot < nd.inputs.size() ? type_of(nd.inputs[slot]) : 0;
    }

    // The type of output `slot` of node `n` by the operator's rule; 0 when unknown.
    std::int32_t rule_type(node_id n, std::size_t slot) const {
        const auto& nd = model_.nodes[n];
        const std::string_view op = nd.op_type();
        if (!standard_domain(nd.domain())) return 0;
        const auto* schema = facts_of(nd).schema;
        // An output of one possible type (DynamicQuantizeLinear's y_scale: float32 in any
        // model; ConvInteger's sums: int32) needs no rule.
        if (schema != nullptr)
            if (const auto fixed = fixed_output_type(*schema, slot); fixed != 0) return fixed;
        if (op == "Cast") return attribute_type(n, "to");
        if (op == "CastLike") return input_type(nd, 1);
        if (op == "Constant") return constant_type(n);
        if (op == "ConstantOfShape") {
            const auto t = attribute_type(n, "value");
            return t != 0 ? t : float32;
        }
        if (op == "Shape" || op == "Size" || op == "NonZero" || op == "ArgMax" || op == "ArgMin" || op == "NonMaxSuppression")
            return int64;
        if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "Not" ||
            op == "And" || op == "Or" || op == "Xor" || op == "IsNaN" || op == "IsInf")
            return boolean;
        if ((op == "TopK" || op == "MaxPool" || op == "Unique") && slot > 0) return int64;
        if (op == "Dropout" && slot == 1) return boolean;
        if (op == "Where") return input_type(nd, 1);
        if (op == "OneHot") return input_type(nd, 2);
        if (op == "DequantizeLinear") return float32;
        if (op == "QuantizeLinear" || op == "DynamicQuantizeLinear") return 0;
        if (op == "RandomNormal" || op == "RandomUniform") {
            const auto t = attribute_type(n, "dtype");
            return t != 0 ? t : float32;
        }
        if (op == "RandomNormalLike" || op == "RandomUniformLike" || op == "EyeLike") {
            const auto t = attribute_type(n, "dtype");
            return t != 0 ? t : input_type(nd, 0);
        }
        if (op == "If" || op == "Loop" || op == "Scan") {
            if (nd.subgraphs().empty()) return 0;
            const auto& body = model_.scopes[nd.subgraphs()[0]];
            const auto index = op == "Loop" ? slot + 1 : slot;  // Loop's body outputs the condition first
            return index < body.outputs.size() ? type_of(body.outputs[index]) : 0;
        }
        // An output no float type fits: not the type of an input.
        if (schema != nullptr &&
            !slot_bit(schema->out_float32 | schema->out_float16 | schema->out_bfloat16, slot, schema->outputs))
            return 0;
        for (const auto input : nd.inputs)
            if (const auto t = type_of(input); t != 0) return t;
        return 0;
    }

    void infer_scope(scope_id s) {
        for (const auto n : model_.scopes[s].nodes) {
            if (!model_.node_live(n)) continue;
            for (const auto sub : model_.nodes[n].subgraphs()) infer_scope(sub);
            const auto& nd = model_.nodes[n];
            for (std::size_t o = 0; o < nd.outputs.size(); ++o) declare(nd.outputs[o], rule_type(n, o));
        }
    }

    // ------------------------------------------------------------ decisions

    bool graph_scope(scope_id s) const { return model_.scopes[s].kind != graph::scope_kind::function; }

    bool is_function_call(const graph::node& nd) const {
        return std::any_of(model_.functions.begin(), model_.functions.end(), [&](const graph::function& f) {
            return !f.removed && f.domain == nd.domain() && f.name == nd.op_type();
        });
    }

    // What the decisions ask of a node's operator: its schema at the model's opset and
    // whether --block-ops lists it. Found once for each operator the model keeps (node::op,
    // a few distinct ones), not for every node and slot: a binary search of the schema rows
    // by name and a hash of the op type were a fifth of convert's time on a 1M-node graph.
    struct operator_facts {
        const op_schema* schema = nullptr;
        bool listed = false;
    };
    operator_facts facts_of(const graph::node& nd) const {
        if (const auto it = operator_facts_.find(nd.op); it != operator_facts_.end()) return it->second;
        const operator_facts facts{find_schema(nd.op_type(), options_.opset), blocked_ops_.contains(std::string(nd.op_type()))};
        operator_facts_.emplace(nd.op, facts);
        return facts;
    }

    // Whether node `n` computes in float32 (see the header).
    bool blocked(node_id n) const {
        const auto& nd = model_.nodes[n];
        if (forced_float32_[n]) return true;
        if (!standard_domain(nd.domain())) return !is_function_call(nd);
        if (nd.op_type() == "Constant") {
            // A Constant holding value_float(s) has no tensor to convert: it stays float32
            // and is cast like a blocked node's output.
            return constant_type(n) == float32 && !model_.attribute(n, "value");
        }
        if (nd.op_type() == "Cast") return wide_cast(n);
        if (nd.op_type() == "ConstantOfShape" && (!model_.attribute(n, "value") || (!nd.outputs.empty() && wide(nd.outputs[0]))))
            return true;
        for (std::size_t i = 0; i < nd.inputs.size(); ++i)
            if (!takes_any_type(nd.op_type(), i) && wide(nd.inputs[i])) return true;
        const auto facts = facts_of(nd);
        if (facts.listed) return true;
        // The schema at the model's opset must admit the target type for every float
        // output and for the first input; other inputs that cannot be 16-bit are cast
        // to float32 on their own (schema_float32_slot).
        const auto* schema = facts.schema;
        if (schema == nullptr) return false;
        // (ConstantOfShape's value is converted with the rest.)
        if (nd.op_type() != "ConstantOfShape")
            for (std::size_t o = 0; o < nd.outputs.size(); ++o)
                if (type_of(nd.outputs[o]) == float32 && type_from_attribute(*schema, o)) return true;
        const auto target_in = options_.target == 16 ? schema->in_bfloat16 : schema->in_float16;
        const auto target_out = options_.target == 16 ? schema->out_bfloat16 : schema->out_float16;
        for (std::size_t o = 0; o < nd.outputs.size(); ++o)
            if (slot_bit(schema->out_float32, o, schema->outputs) && !slot_bit(target_out, o, schema->outputs)) return true;
        return slot_bit(schema->in_float32, 0, schema->inputs) && !slot_bit(target_in, 0, schema->inputs);
    }

    // A Cast of int32/int64 values to float32, converting to float16: values past 65504
    // (a ConvInteger's sums) would become infinities.
    bool wide_cast(node_id n) const {
        const auto& nd = model_.nodes[n];
        return options_.target == 10 && nd.op_type() == "Cast" && standard_domain(nd.domain()) && !nd.inputs.empty() &&
               wider_than_float16(type_of(nd.inputs[0])) && attribute_type(n, "to") == float32;
    }

    bool wide(name_id v) const {
        const auto i = static_cast<std::uint32_t>(v);
        return v != empty_name && i < wide_.size() && wide_[i];
    }

    // wide_ from the options' tensors and from the Casts of wide integers.
    void find_wide_values() {
        wide_.assign(types_.size(), false);
        for (const auto site : options_.wide_sites)
            if (const auto v = name_of_site(site); v && static_cast<std::uint32_t>(*v) < wide_.size())
                wide_[static_cast<std::uint32_t>(*v)] = true;
        for (const auto s : model_.scopes.ids()) {
            if (!graph_scope(s) || model_.scopes[s].removed) continue;
            for (const auto n : model_.scopes[s].nodes) {
                if (!model_.node_live(n) || !wide_cast(n) || model_.nodes[n].outputs.empty()) continue;
                const auto v = static_cast<std::uint32_t>(model_.nodes[n].outputs[0]);
                if (v < wide_.size()) wide_[v] = true;
            }
        }
    }

    enum class want : std::uint8_t { any, single, half };

    want expected(node_id n, std::size_t slot) const {
        const auto& nd = model_.nodes[n];
        if (blocked(n)) return want::single;
        if (takes_any_type(nd.op_type(), slot)) return want::any;
        if (schema_float32_slot(n, slot)) return want::single;
        return want::half;
    }

    bool schema_float32_slot(node_id n, std::size_t slot) const {
        const auto& nd = model_.nodes[n];
        if (std::any_of(std::begin(float32_slots), std::end(float32_slots),
                        [&](const float32_slot& s) { return nd.op_type() == s.op && slot == s.slot; }))
            return true;
        if (!standard_domain(nd.domain())) return false;
        const auto* schema = facts_of(nd).schema;
        if (schema == nullptr) return false;
        const auto target_in = options_.target == 16 ? schema->in_bfloat16 : schema->in_float16;
        return slot_bit(schema->in_float32, slot, schema->inputs) && !slot_bit(target_in, slot, schema->inputs);
    }

    struct use {
        node_id node;
        std::uint32_t slot = 0;
    };

    // Sorted arrays of (value, use) and (value, producer), searched: a hash map of a
    // vector per value cost about 100 bytes a value (a 200k-node chain: 20 MB), these cost
    // 12 bytes a use and 8 an output. Tables indexed by name would cost 8 bytes for every
    // name, the million initializers no node reads of a tiny-weights model included.
    void collect_consumers() {
        for (const auto s : model_.scopes.ids()) {
            if (!graph_scope(s) || model_.scopes[s].removed) continue;
            for (const auto n : model_.scopes[s].nodes) {
                if (!model_.node_live(n)) continue;
                const auto& nd = model_.nodes[n];
                for (std::size_t i = 0; i < nd.inputs.size(); ++i)
                    if (nd.inputs[i] != empty_name && type_of(nd.inputs[i]) == float32)
                        uses_.push_back({nd.inputs[i], {n, static_cast<std::uint32_t>(i)}});
                for (const auto o : nd.outputs) producers_.push_back({o, n});
            }
            for (const auto o : model_.scopes[s].outputs) scope_outputs_.insert(o);
            for (const auto i : model_.scopes[s].inputs) scope_inputs_.insert(i);
        }
        // Stable: a value's uses stay in node order, and its last producer is the one
        // that counts (as the map's last assignment did).
        const auto by_value = [](const auto& a, const auto& b) { return a.first < b.first; };
        std::stable_sort(uses_.begin(), uses_.end(), by_value);
        std::stable_sort(producers_.begin(), producers_.end(), by_value);
    }

    // The uses of value v by live nodes, in node order.
    [[nodiscard]] std::span<const std::pair<name_id, use>> consumers(name_id v) const {
        const auto [first, last] = std::equal_range(uses_.begin(), uses_.end(), std::pair<name_id, use>{v, {}},
                                                    [](const auto& a, const auto& b) { return a.first < b.first; });
        return {first, last};
    }

    // The live node that writes v (the last one, in node order), or none.
    [[nodiscard]] node_id producer(name_id v) const {
        const auto last = std::upper_bound(producers_.begin(), producers_.end(), std::pair<name_id, node_id>{v, {}},
                                           [](const auto& a, const auto& b) { return a.first < b.first; });
        return last != producers_.begin() && std::prev(last)->first == v ? std::prev(last)->second : node_id{};
    }

    bool is_main_output(name_id v) const {
        const auto& outs = model_.scopes[graph::main_scope].outputs;
        return std::find(outs.begin(), outs.end(), v) != outs.end();
    }

    bool is_main_input(name_id v) const {
        const auto& ins = model_.scopes[graph::main_scope].inputs;
        return std::find(ins.begin(), ins.end(), v) != ins.end();
    }

    // Whether a value read by its consumers should be stored in float32 (a constant whose
    // consumers all want float32, or one that a schema slot requires in float32).
    bool consumers_want_float32(name_id v) const {
        const auto uses = consumers(v);
        if (uses.empty()) return false;
        bool all = true;
        for (const auto& [value, u] : uses) {
            if (schema_float32_slot(u.node, u.slot)) return true;
            if (expected(u.node, u.slot) != want::single) all = false;
        }
        return all;
    }

    void decide_values() {
        const bool keep_io = options_.keep_io_types;
        half_.assign(types_.size(), false);
        output_casts_.clear();
        output_cast_to_half_.clear();
        for (std::uint32_t value = 0; value < types_.size(); ++value) {
            if (types_[value] != float32) continue;
            const auto v = static_cast<name_id>(value);
            const auto produced_by = producer(v);
            if (!produced_by.valid()) {
                // A graph input, initializer or outer value: no node writes it.
                // Graph inputs (a subgraph's too: its node feeds it 16-bit values) follow
                // the graph; constants follow their consumers.
                if (is_main_input(v)) half_[value] = !keep_io;
                else if (scope_inputs_.contains(v)) half_[value] = true;
                else half_[value] = !consumers_want_float32(v) && !wide(v);
                continue;
            }
            const auto n = produced_by;
            if (!graph_scope(model_.nodes[n].scope)) continue;
            // A Constant's or a Cast's output can be either type at no cost: the type its
            // readers want (no Cast is stacked on a Cast, as it was on a model in float16
            // already whose Casts to float32 feed float32-only operators).
            const auto& op = model_.nodes[n].op_type();
            if ((op == "Constant" || op == "Cast") && !blocked(n)) {
                half_[value] = !(consumers_want_float32(v) && !scope_outputs_.contains(v)) && !wide(v);
                if (keep_io && is_main_output(v)) half_[value] = false;
                continue;
            }
            const bool produced_half = !blocked(n);
            bool desired_half = true;
            if (keep_io && is_main_output(v)) desired_half = false;
            else if (!produced_half && !scope_outputs_.contains(v) && consumers_want_float32(v)) desired_half = false;
            half_[value] = desired_half;
            if (produced_half != desired_half) {
                output_casts_.push_back({n, v, desired_half});
                output_cast_to_half_[v] = desired_half;
            }
        }
    }

    bool half(name_id v) const {
        const auto i = static_cast<std::uint32_t>(v);
        return i < half_.size() && half_[i];
    }

    // ------------------------------------------------------------ the type check

    // The type value v has in the converted model (0 unknown).
    std::int32_t converted_type(name_id v) const {
        const auto t = type_of(v);
        return t == float32 && half(v) ? options_.target : t;
    }

    // The type node n reads at input `slot`: the value's, or the inserted Cast's.
    std::int32_t read_type(node_id n, std::size_t slot) const {
        const auto v = model_.nodes[n].inputs[slot];
        if (type_of(v) != float32) return type_of(v);
        const auto e = expected(n, slot);
        if (e != want::any && (e == want::half) != half(v)) return e == want::half ? options_.target : float32;
        return converted_type(v);
    }

    // The type node n writes at output `slot`: the value's, or the one a Cast after it changes.
    std::int32_t written_type(node_id n, std::size_t slot) const {
        const auto v = model_.nodes[n].outputs[slot];
        if (const auto c = output_cast_to_half_.find(v); c != output_cast_to_half_.end() && producer(v) == n)
            return c->second ? float32 : options_.target;
        return converted_type(v);
    }

    struct type_failure {
        node_id node;
        std::string why;
    };

    std::string type_name(std::int32_t type) const { return onnx::data_type_name(type); }

    // Why node n's converted types do not fit its schema; empty when they do, or when it
    // has no schema. Only a slot given the target type can fail: the input's own types
    // are not this tool's to judge.
    std::string type_failure_of(node_id n) const {
        const auto& nd = model_.nodes[n];
        if (!standard_domain(nd.domain())) return {};
        const auto* schema = facts_of(nd).schema;
        if (schema == nullptr) return {};
        const auto bar = schema->groups.find('|');
        const auto in_groups = schema->groups.substr(0, bar);
        const auto out_groups = bar == std::string_view::npos ? std::string_view{} : schema->groups.substr(bar + 1);
        const auto target = options_.target;
        const auto in_target = target == 16 ? schema->in_bfloat16 : schema->in_float16;
        const auto out_target = target == 16 ? schema->out_bfloat16 : schema->out_float16;
        std::map<char, std::pair<std::int32_t, std::string>> seen;  // a letter's first type, and where
        std::string why;
        auto look = [&](bool input, std::size_t slot, std::int32_t type) {
            if (type == 0 || !why.empty()) return;
            const std::string where = std::string(input ? "input " : "output ") + std::to_string(slot);
            const auto mask = input ? in_target : out_target;
            const auto count = input ? schema->inputs : schema->outputs;
            if (type == target && !slot_bit(mask, slot, count)) {
                why = where + " would be " + type_name(type) + ", which the operator does not accept there";
                return;
            }
            const auto letter = group_letter(input ? in_groups : out_groups, slot);
            if (letter == '-' || letter == '*') return;
            const auto [it, inserted] = seen.emplace(letter, std::make_pair(type, where));
            if (!inserted && it->second.first != type && (type == target || it->second.first == target))
                why = it->second.second + " would be " + type_name(it->second.first) + " and " + where + " " + type_name(type) +
                      ", which must have one type";
        };
        for (std::size_t i = 0; i < nd.inputs.size(); ++i)
            if (nd.inputs[i] != empty_name) look(true, i, read_type(n, i));
        for (std::size_t o = 0; o < nd.outputs.size(); ++o)
            if (nd.outputs[o] != empty_name) look(false, o, written_type(n, o));
        return why;
    }

    std::vector<type_failure> type_failures() const {
        std::vector<type_failure> failures;
        for (const auto s : model_.scopes.ids()) {
            if (!graph_scope(s) || model_.scopes[s].removed) continue;
            for (const auto n : model_.scopes[s].nodes) {
                if (!model_.node_live(n)) continue;
                if (auto why = type_failure_of(n); !why.empty()) failures.push_back({n, std::move(why)});
            }
        }
        return failures;
    }

    void choose_sites() {
        const auto& file = model_.file();
        onnx::tensor_pass pass(file);  // in file order, the pages behind released
        for (const auto i : file.sites.ids()) {
            pass.reached(i);
            if (file.data_type(i) != float32) continue;
            const auto& site = file.sites[i];
            const auto name = name_of_site(i);
            bool convert = false;
            const auto graph = onnx::graph_of(tree_, site);
            if (const auto node = onnx::node_of(tree_, site); node != none) {
                const auto op = tree_.find_text(node, number(onnx::node_field::op_type));
                const bool in_function = tree_.at(graph).kind == onnx::message_kind::function;
                if (op == "Constant") convert = in_function || (name && half(*name));
                // A ConstantOfShape computing in float32 (its schema has no bfloat16 below opset
                // 20) keeps its value; its output is cast.
                else if (op == "ConstantOfShape")
                    convert = in_function || (name && half(*name) && producer(*name).valid() && !blocked(producer(*name)));
            } else if (site.role == onnx::tensor_role::initializer || site.role == onnx::tensor_role::sparse_initializer) {
                convert = name && half(*name) && in_graph_scope(graph);
            }
            result_.convert_site[i] = convert;
        }
    }

    // The value tensor `site` holds (onnx::value_name), by its id. An initializer's is its
    // graph tensor's, from a table made once: a million lookups of its text in the names
    // were a random probe each, and a read of the text in the mapped file.
    std::optional<name_id> name_of_site(onnx::site_id site) {
        const auto& file = model_.file();
        if (initializer_names_.empty()) {
            initializer_names_.assign(file.sites.size(), empty_name);
            for (const auto& t : model_.tensors)
                if (t.site != none && !t.removed && !t.renamed && file.sites[t.site].role == onnx::tensor_role::initializer)
                    initializer_names_[t.site] = t.name;
        }
        if (const auto name = initializer_names_[site]; name != empty_name) return name;
        return model_.names.find(onnx::value_name(tree_, file.sites[site]));
    }

    bool in_graph_scope(std::uint32_t graph_message) const {
        return std::any_of(model_.scopes.begin(), model_.scopes.end(), [&](const graph::scope& s) {
            return s.message == graph_message && s.kind != graph::scope_kind::function && !s.removed;
        });
    }

    // ------------------------------------------------------------ edits

    void edit_value_infos() {
        for_each_value_info([&](name_id name, const onnx::field_entry& type) {
            if (type_of(name) != float32 || !half(name)) return;
            const auto elem = tensor_elem_type(tree_.bytes(), type.payload_offset(), type.end_offset());
            if (!elem || *elem != float32) return;
            const auto field_index = static_cast<std::uint32_t>(&type - tree_.all_fields().data());
            replace(field_index, edits_.bytes(type.number(),
                                              retyped(tree_.bytes(), type.payload_offset(), type.end_offset(), options_.target)));
            ++result_.types_changed;
        });
    }

    // Drop field `field_index` and put `replacement` where it was.
    void replace(std::uint32_t field_index, onnx::new_field replacement) {
        const auto owner = tree_.owner(field_index);
        const auto position = field_index - tree_.at(owner).first_field;
        edits_.drop(field_index);
        edits_.insert(owner, position, replacement);
    }

    // The `to` a Cast of the graphs has once converted.
    std::int32_t converted_cast_target(node_id n) const {
        const auto to = attribute_type(n, "to");
        return to == float32 && half(model_.nodes[n].outputs[0]) ? options_.target : to;
    }

    // Casts of the model that the conversion leaves with nothing to do (a Cast of float16
    // to float32 whose reader now takes float16) become Identity: no Cast that does
    // nothing is written.
    void find_no_op_casts() {
        no_op_cast_.assign(model_.nodes.size(), false);
        for (const auto s : model_.scopes.ids()) {
            if (!graph_scope(s) || model_.scopes[s].removed) continue;
            for (const auto n : model_.scopes[s].nodes) {
                const auto& nd = model_.nodes[n];
                if (nd.message == none || !model_.node_live(n) || nd.op_type() != "Cast" || !standard_domain(nd.domain()) ||
                    nd.inputs.empty() || nd.outputs.empty())
                    continue;
                const auto before = type_of(nd.inputs[0]);
                const auto after = read_type(n, 0);
                if (after == 0 || before == attribute_type(n, "to") || after != converted_cast_target(n)) continue;
                const auto op_type = nth_field(nd.message, number(onnx::node_field::op_type), 0);
                if (!op_type) continue;
                no_op_cast_[n] = true;
                edits_.drop(tree_, nd.message, *op_type);
                edits_.insert(nd.message, *op_type, edits_.text(number(onnx::node_field::op_type), "Identity"));
                const auto attributes = model_.attribute_messages(n).size();
                for (std::size_t k = 0; k < attributes; ++k)
                    if (const auto at = nth_field(nd.message, number(onnx::node_field::attribute), k))
                        edits_.drop(tree_, nd.message, *at);
                ++result_.casts_made_identity;
            }
        }
    }

    void edit_cast_targets() {
        for (const auto n : model_.nodes.ids()) {
            const auto& nd = model_.nodes[n];
            if (nd.message == none || !model_.node_live(n) || nd.op_type() != "Cast" || !standard_domain(nd.domain())) continue;
            if (!no_op_cast_.empty() && no_op_cast_[n]) continue;
            if (nd.outputs.empty()) continue;
            const bool in_function = !graph_scope(nd.scope);
            if (!in_function && !half(nd.outputs[0])) continue;
            const auto a = model_.attribute(n, "to");
            if (!a || !a->i || *a->i != float32) continue;
            for (const auto& f : tree_.fields(a->message)) {
                if (f.number() != number(onnx::attribute_field::i) || f.type() != proto::wire_type::varint) continue;
                const auto field_index = static_cast<std::uint32_t>(&f - tree_.all_fields().data());
                replace(field_index,
                        edits_.varint(number(onnx::attribute_field::i), static_cast<std::uint64_t>(options_.target)));
                ++result_.cast_targets_changed;
            }
        }
    }

    // The position among its message's fields of the k-th field numbered `field_number`
    // (the fields read again when the tree dropped them: a node without attributes).
    std::optional<std::uint32_t> nth_field(std::uint32_t message, std::uint32_t field_number, std::size_t k) const {
        std::size_t seen = 0;
        std::vector<onnx::field_entry> dropped;
        const auto fields = tree_.read_fields(message, dropped);
        for (std::uint32_t i = 0; i < fields.size(); ++i) {
            if (fields[i].number() != field_number) continue;
            if (seen++ == k) return i;
        }
        return std::nullopt;
    }

    // Position of node n's field within its graph message (insertions go before it).
    std::optional<std::uint32_t> node_position(node_id n) const {
        const auto message = model_.nodes[n].message;
        if (message == none) return std::nullopt;
        const auto& msg = tree_.at(message);
        return msg.parent_field - tree_.at(msg.parent).first_field;
    }

    std::vector<std::byte> cast_node(std::string_view input, std::string_view output, std::string_view name,
                                     std::int32_t to) const {
        std::vector<std::byte> attribute;
        put_text(attribute, number(onnx::attribute_field::name), "to");
        put_varint(attribute, proto::make_tag(number(onnx::attribute_field::i), proto::wire_type::varint));
        put_varint(attribute, static_cast<std::uint64_t>(to));
        put_varint(attribute, proto::make_tag(number(onnx::attribute_field::type), proto::wire_type::varint));
        put_varint(attribute, 2);  // AttributeProto.INT
        std::vector<std::byte> node;
        put_text(node, number(onnx::node_field::input), input);
        put_text(node, number(onnx::node_field::output), output);
        put_text(node, number(onnx::node_field::name), name);
        put_text(node, number(onnx::node_field::op_type), "Cast");
        put_length_delimited(node, number(onnx::node_field::attribute), attribute);
        return node;
    }

    void insert_node(std::uint32_t graph_message, std::uint32_t position, std::vector<std::byte> encoded) {
        edits_.insert(graph_message, position, edits_.bytes(number(onnx::graph_field::node), encoded));
        ++result_.casts_inserted;
    }

    void rename_slot(node_id n, std::uint32_t field_number, std::size_t slot, std::string_view text) {
        const auto message = model_.nodes[n].message;
        if (const auto position = nth_field(message, field_number, slot)) {
            edits_.drop(tree_, message, *position);  // in the node's body when the tree dropped it
            edits_.insert(message, *position, edits_.text(field_number, text));
        }
    }

    void insert_casts() {
        const auto half_type = options_.target;
        // Outputs: the node writes a fresh name, a Cast right after it writes the value.
        for (const auto& c : output_casts_) {
            const auto& nd = model_.nodes[c.node];
            const auto position = node_position(c.node);
            if (!position) continue;
            const auto slot = static_cast<std::size_t>(std::find(nd.outputs.begin(), nd.outputs.end(), c.value) -
                                                       nd.outputs.begin());
            const std::string value(model_.text(c.value));
            const std::string written(model_.text(model_.names.fresh(value + (c.to_half ? "_float32" : "_half"))));
            rename_slot(c.node, number(onnx::node_field::output), slot, written);
            // A reader that wants what the node wrote reads it there: no Cast back.
            written_as_.emplace(std::make_pair(c.value, !c.to_half), written);
            const std::string name(model_.text(model_.names.fresh(value + "_cast")));
            insert_node(model_.scopes[nd.scope].message, *position + 1,
                        cast_node(written, value, name, c.to_half ? half_type : float32));
        }
        // Inputs: one Cast per (scope, value, type), before the first node that needs it.
        std::map<std::tuple<scope_id, name_id, bool>, std::string> made;
        std::map<std::string, std::uint64_t> blocked_ops;
        indexed_vector<node_id, bool> blocked_counted(model_.nodes.size(), false);
        for (const auto s : model_.scopes.ids()) {
            if (!graph_scope(s) || model_.scopes[s].removed) continue;
            for (const auto n : model_.scopes[s].nodes) {
                if (!model_.node_live(n)) continue;
                const auto& nd = model_.nodes[n];
                bool float_io = false;
                for (std::size_t i = 0; i < nd.inputs.size(); ++i) {
                    const auto v = nd.inputs[i];
                    if (v == empty_name || type_of(v) != float32) continue;
                    float_io = true;
                    const auto e = expected(n, i);
                    if (e == want::any || (e == want::half) == half(v)) continue;
                    const bool to_half = e == want::half;
                    if (const auto written = written_as_.find({v, to_half}); written != written_as_.end()) {
                        rename_slot(n, number(onnx::node_field::input), i, written->second);
                        continue;
                    }
                    const auto key = std::make_tuple(s, v, to_half);
                    auto found = made.find(key);
                    if (found == made.end()) {
                        const auto position = node_position(n);
                        if (!position) continue;
                        const std::string value(model_.text(v));
                        const std::string cast_value(model_.text(model_.names.fresh(value + (to_half ? "_half" : "_float32"))));
                        const std::string name(model_.text(model_.names.fresh(cast_value + "_cast")));
                        insert_node(model_.scopes[s].message, *position,
                                    cast_node(value, cast_value, name, to_half ? half_type : float32));
                        found = made.emplace(key, cast_value).first;
                    }
                    rename_slot(n, number(onnx::node_field::input), i, found->second);
                }
                for (const auto o : nd.outputs) float_io = float_io || type_of(o) == float32;
                if (float_io && blocked(n) && !blocked_counted[n]) {
                    blocked_counted[n] = true;
                    ++result_.nodes_blocked;
                    ++blocked_ops[std::string(nd.op_type())];
                }
            }
        }
        result_.blocked_op_types.assign(blocked_ops.begin(), blocked_ops.end());
        std::stable_sort(result_.blocked_op_types.begin(), result_.blocked_op_types.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
    }

    struct output_cast {
        node_id node;
        name_id value;
        bool to_half;
    };

    graph::graph_model& model_;
    const onnx::message_tree& tree_;
    const typing_options& options_;
    onnx::tree_edits& edits_;
    std::unordered_set<std::string> blocked_ops_;
    mutable std::unordered_map<const graph::operator_name*, operator_facts> operator_facts_;  // facts_of's
    // By name: a model of a million initializers declares a million values, and a hash
    // node each cost 40 bytes more than these.
    std::vector<std::int32_t> types_;  // 0: unknown
    std::vector<bool> half_;
    std::vector<std::pair<name_id, use>> uses_;           // sorted by value
    std::vector<std::pair<name_id, node_id>> producers_;  // sorted by value
    std::unordered_set<name_id> scope_outputs_;
    std::unordered_set<name_id> scope_inputs_;
    std::vector<output_cast> output_casts_;
    std::unordered_map<name_id, bool> output_cast_to_half_;  // output_casts_ by value
    // The names nodes with an output Cast write, by (value, whether they hold the target).
    std::map<std::pair<name_id, bool>, std::string> written_as_;
    std::vector<bool> wide_;                                    // by name: kept float32, readers in float32
    indexed_vector<onnx::site_id, name_id> initializer_names_;  // by site: name_of_site's table
    indexed_vector<node_id, bool> forced_float32_;              // by the type check
    indexed_vector<node_id, bool> no_op_cast_;                  // Casts written as Identity
    typing_result result_;
};

}  // namespace

std::vector<std::string> default_block_ops() {
    return {"ArrayFeatureExtractor",
            "Binarizer",
            "CastMap",
            "CategoryMapper",
            "DictVectorizer",
            "FeatureVectorizer",
            "Imputer",
            "LabelEncoder",
            "LinearClassifier",
            "LinearRegressor",
            "Normalizer",
            "OneHotEncoder",
            "RandomUniformLike",
            "SVMClassifier",
            "SVMRegressor",
            "Scaler",
            "TreeEnsembleClassifier",
            "TreeEnsembleRegressor",
            "ZipMap",
            "NonMaxSuppression",
            "TopK",
            "RoiAlign",
            "Resize",
            "Range",
            "CumSum",
            "Min",
            "Max",
            "Upsample"};
}

result<typing_result> plan_types(graph::graph_model& model, const typing_options& options, onnx::tree_edits& edits) {
    return planner(model, options, edits).run();
}

}  // namespace onnxstream::ops::detail
