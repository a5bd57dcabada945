#include <onnxstream/ops/edit.hpp>

#include "bound_operation.hpp"
#include "value_type_edit.hpp"

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/encoded_message.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using detail::decoded_type;
using detail::dimension;
using onnx::message_kind;
using onnx::no_index;
using onnx::number;

result<input_shape_spec> parse_input_shape_spec(std::string_view text, std::string_view option) {
    const std::string shown = "'" + std::string(text) + "'";
    const auto eq = text.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
        return failure(error_code::invalid_argument, std::string(option) + " takes NAME=DIMS (got " + shown + ")",
                       "give e.g. input=1,3,224,224 or input=N,3,H,W");
    input_shape_spec spec{std::string(text.substr(0, eq)), {}};
    auto rest = text.substr(eq + 1);
    while (true) {
        const auto comma = rest.find(',');
        const auto word = rest.substr(0, comma);
        if (word.empty())
            return failure(error_code::invalid_argument, std::string(option) + " has an empty dim in " + shown,
                           "separate the dims with single commas, e.g. input=1,3,224,224");
        const bool numeric = (word.front() >= '0' && word.front() <= '9') || word.front() == '-' || word.front() == '+';
        if (numeric) {
            std::int64_t v = 0;
            const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
            if (ec != std::errc{} || end != word.data() + word.size() || v < 0)
                return failure(error_code::invalid_argument,
                               std::string(option) + " dims are whole numbers of at least 0 or symbolic names (got '" +
                                   std::string(word) + "' in " + shown + ")",
                               "give e.g. input=1,3,224,224 or input=N,3,H,W");
            spec.dims.push_back({v, {}});
        } else {
            spec.dims.push_back({std::nullopt, std::string(word)});
        }
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return spec;
}

namespace {

std::string in_quotes(std::string_view name) { return "'" + std::string(name) + "'"; }

const char* const inspect_hint = "check the names with `onnxstream inspect`; nothing was written";

// The shapes of main-graph values by name, as far as shape inference knows them; only
// those asked for. Kept in this one function so that a fuller inference can take its place.
// Errors when the graph cannot be read as values (graph_model::build: a name defined twice).
result<std::unordered_map<std::string, graph::value_shape>> inferred_shapes(const onnx::bound_model& bound,
                                                                            std::span<const std::string> names) {
    std::unordered_map<std::string, graph::value_shape> out;
    ONNXSTREAM_ASSIGN(auto model, graph::graph_model::build(bound.model));
    const graph::graph_index index(model);
    const graph::tensor_reader reader(bound.model, &bound.data);
    const auto table = graph::infer_shapes(model, index, reader);
    for (const auto& name : names) {
        const auto id = model.names.find(name);
        if (!id) continue;
        const auto v = index.resolve(graph::main_scope, *id);
        if (v == graph::value_id{none} || !table.contains(v)) continue;
        out[name] = table[v];
    }
    return out;
}

class editor : detail::bound_operation<edit_options, edit_report> {
public:
    using bound_operation::bound_operation;

    result<edit_report> run() {
        report_.input = model_path_;
        report_.output = options_.output.empty() ? default_output(model_path_, "edited") : options_.output;
        ONNXSTREAM_TRY(check_requests());
        // A node without attributes has its fields read on demand (node_fields::on_demand):
        // the loops over nodes below read them with read_fields.
        ONNXSTREAM_TRY(open_session(onnx::nodes_on_demand(), onnx::tensor_reading::on_demand_full_tree));
        ONNXSTREAM_TRY(session_.claim_output(report_.output));
        const auto& tree = model_.tree;
        for (const auto& f : tree.fields(0))
            if (f.number() == number(onnx::model_field::graph) && f.child != no_index) main_ = f.child;
        if (main_ == no_index) return failure(error_code::not_onnx, "the model has no graph");
        collect_graphs(main_);
        read_main_graph();

        ONNXSTREAM_TRY(remove_outputs());
        ONNXSTREAM_TRY(check_renames());
        ONNXSTREAM_TRY(fix_dims());
        ONNXSTREAM_TRY(add_outputs());
        rename_all();
        edit_metadata_and_producer();
        ONNXSTREAM_TRY(metadata_removals());
        if (options_.strip_doc) strip_doc();
        ONNXSTREAM_TRY(point_at_data());

        // The edits read names and nodes all over the file; the planner reads the edited
        // messages again in file order (releasing the pages behind it).
        session_.release_model_pages();
        ONNXSTREAM_ASSIGN(auto planned, session_.plan_model(edits_));
        ONNXSTREAM_TRY(finish_rewrite(planned, edits_));
        return std::move(report_);
    }

private:
    // The option lists alone: repeated names, nothing to do.
    result<void> check_requests() const {
        const auto& o = options_;
        if (o.input_shapes.empty() && !o.batch && o.renames.empty() && o.add_outputs.empty() && o.remove_outputs.empty() &&
            !o.strip_doc && o.metadata.empty() && o.remove_metadata.empty() && !o.producer_name)
            return failure(error_code::invalid_argument, "nothing to edit",
                           "give --input-shape, --batch, --rename, --add-output, --remove-output, --strip-doc, --metadata, "
                           "--remove-metadata or --producer");
        if (o.batch && *o.batch < 0)
            return failure(error_code::invalid_argument, "--batch must be at least 0", "give e.g. --batch 1");
        std::set<std::string, std::less<>> seen;
        for (const auto& s : o.input_shapes)
            if (!seen.insert(s.name).second)
                return failure(error_code::invalid_argument, "--input-shape gives " + in_quotes(s.name) + " twice",
                               "give each input's shape once");
        std::set<std::string, std::less<>> olds;
        std::set<std::string, std::less<>> news;
        for (const auto& [from, to] : o.renames) {
            if (from.empty() || to.empty())
                return failure(error_code::invalid_argument, "--rename takes OLD=NEW with two non-empty names",
                               "give e.g. --rename input.1=image");
            if (!olds.insert(from).second)
                return failure(error_code::invalid_argument, "--rename renames " + in_quotes(from) + " twice",
                               "rename each tensor once");
            if (!news.insert(to).second)
                return failure(error_code::invalid_argument, "two renames give the name " + in_quotes(to),
                               "give each tensor a name of its own");
        }
        for (const auto& [from, to] : o.renames)
            if (olds.contains(to))
                return failure(error_code::invalid_argument,
                               "--rename " + in_quotes(from) + "=" + in_quotes(to) + " gives a name another rename takes away",
                               "renames happen at once: a chain or a swap needs two edits, one after the other");
        std::set<std::string, std::less<>> added;
        for (const auto& name : o.add_outputs)
            if (!added.insert(name).second)
                return failure(error_code::invalid_argument, "--add-output names " + in_quotes(name) + " twice",
                               "add each output once");
        std::set<std::string, std::less<>> removed;
        for (const auto& name : o.remove_outputs) {
            if (!removed.insert(name).second || added.contains(name))
                return failure(error_code::invalid_argument,
                               "--remove-output names " + in_quotes(name) + " twice, or --add-output names it too",
                               "name each output once");
        }
        std::set<std::string, std::less<>> keys;
        for (const auto& [key, value] : o.metadata)
            if (!keys.insert(key).second)
                return failure(error_code::invalid_argument, "--metadata sets " + in_quotes(key) + " twice", "set each key once");
        for (const auto& key : o.remove_metadata)
            if (keys.contains(key) || !keys.insert(key).second)
                return failure(error_code::invalid_argument,
                               "--remove-metadata names " + in_quotes(key) + " twice, or --metadata sets it too",
                               "name each key once");
        return {};
    }

    // ---------------------------------------------------------------- the model's graphs

    const onnx::message_tree& tree() const { return model_.tree; }
    std::string_view text_of(const onnx::field_entry& f) const { return tree().text(f); }

    // The name field of a ValueInfoProto or TensorProto (its number), or null.
    const onnx::field_entry* name_field(std::uint32_t message, std::uint32_t field_number) const {
        return tree().find(message, field_number);
    }
    std::string_view name_of(std::uint32_t message, std::uint32_t field_number) const {
        const auto* f = name_field(message, field_number);
        return f != nullptr ? text_of(*f) : std::string_view{};
    }

    // The subgraphs held by node `node`'s attributes (g and graphs).
    std::vector<std::uint32_t> subgraphs_of(std::uint32_t node) const {
        std::vector<std::uint32_t> out;
        if (!tree().stores_fields(node)) return out;  // no attributes (node_fields::on_demand)
        for (const auto& f : tree().fields(node)) {
            if (f.number() != number(onnx::node_field::attribute) || f.child == no_index) continue;
            for (const auto& a : tree().fields(f.child))
                if ((a.number() == number(onnx::attribute_field::g) || a.number() == number(onnx::attribute_field::graphs)) &&
                    a.child != no_index && tree().at(a.child).kind == message_kind::graph)
                    out.push_back(a.child);
        }
        return out;
    }

    void collect_graphs(std::uint32_t g) {
        graphs_.push_back(g);
        for (const auto& f : tree().fields(g))
            if (f.number() == number(onnx::graph_field::node) && f.child != no_index)
                for (const auto sub : subgraphs_of(f.child)) collect_graphs(sub);
    }

    using name_set = std::set<std::string_view, std::less<>>;

    // Those of the names in `asked` (a set or a map of names) that graph `g` itself defines
    // (inputs, initializers, sparse initializers, its nodes' outputs) or, when `uses`, also
    // names (its nodes' inputs, its outputs, its value_info). Only the names asked about
    // are kept: a graph of a million nodes defines a million (40 MB in a hash set).
    template <class Asked>
    name_set named_in(std::uint32_t g, const Asked& asked, bool uses = false) const {
        name_set names;
        const auto keep = [&](std::string_view name) {
            if (!name.empty() && asked.contains(name)) names.insert(name);
        };
        std::vector<onnx::field_entry> scratch;
        for (const auto& f : tree().fields(g)) {
            if (f.child == no_index) continue;
            const auto field = static_cast<onnx::graph_field>(f.number());
            if (field == onnx::graph_field::input) keep(name_of(f.child, number(onnx::value_info_field::name)));
            if (field == onnx::graph_field::initializer) keep(name_of(f.child, number(onnx::tensor_field::name)));
            if (field == onnx::graph_field::sparse_initializer) {
                const auto* values = tree().find(f.child, number(onnx::sparse_tensor_field::values));
                if (values != nullptr && values->child != no_index)
                    keep(name_of(values->child, number(onnx::tensor_field::name)));
            }
            if (uses && (field == onnx::graph_field::output || field == onnx::graph_field::value_info))
                keep(name_of(f.child, number(onnx::value_info_field::name)));
            if (field == onnx::graph_field::node)
                for (const auto& n : tree().read_fields(f.child, scratch))
                    if (n.number() == number(onnx::node_field::output) || (uses && n.number() == number(onnx::node_field::input)))
                        keep(text_of(n));
        }
        return names;
    }

    struct graph_value {
        std::uint32_t message = no_index;  // ValueInfoProto
        std::uint32_t position = 0;        // of its field in the graph
    };

    void read_main_graph() {
        const auto fields = tree().fields(main_);
        for (std::uint32_t p = 0; p < fields.size(); ++p) {
            const auto& f = fields[p];
            if (f.child == no_index) continue;
            const auto field = static_cast<onnx::graph_field>(f.number());
            const auto vi_name = [&] { return name_of(f.child, number(onnx::value_info_field::name)); };
            if (field == onnx::graph_field::input) inputs_.push_back({std::string(vi_name()), {f.child, p}});
            if (field == onnx::graph_field::output) outputs_.push_back({std::string(vi_name()), {f.child, p}});
            if (field == onnx::graph_field::value_info) value_infos_.emplace(vi_name(), f.child);
            if (field == onnx::graph_field::initializer)
                initializers_.emplace(name_of(f.child, number(onnx::tensor_field::name)));
            if (field == onnx::graph_field::output) last_output_position_ = p;
        }
        // The names --rename and --add-output ask the main graph to define.
        name_set asked;
        for (const auto& [from, to] : options_.renames) asked.insert(from);
        for (const auto& name : options_.add_outputs) asked.insert(name);
        main_defined_ = named_in(main_, asked);
    }

    const graph_value* find_value(const std::vector<std::pair<std::string, graph_value>>& list, std::string_view name) const {
        for (const auto& [n, v] : list)
            if (n == name) return &v;
        return nullptr;
    }

    // The hint for a name the model does not have: the old name when it is a rename's new one.
    std::string names_hint(std::string_view name) const {
        for (const auto& [from, to] : options_.renames)
            if (to == name)
                return "the other options name tensors as the input model does: give " + in_quotes(from) +
                       " (--rename applies to the output); nothing was written";
        return inspect_hint;
    }

    // ---------------------------------------------------------------- outputs

    result<void> remove_outputs() {
        for (const auto& name : options_.remove_outputs) {
            const auto* v = find_value(outputs_, name);
            if (v == nullptr)
                return failure(error_code::invalid_argument,
                               "--remove-output names " + in_quotes(name) + ", which is no graph output", names_hint(name));
            edits_.drop(tree(), main_, v->position);
            dropped_.insert(v->message);
            report_.changes.push_back({"remove_output", name, "no longer a graph output"});
        }
        if (!options_.remove_outputs.empty() &&
            outputs_.size() - options_.remove_outputs.size() + options_.add_outputs.size() == 0)
            return failure(error_code::invalid_argument, "removing every graph output leaves a model that computes nothing",
                           "keep at least one output, or add another with --add-output");
        return {};
    }

    result<void> add_outputs() {
        std::vector<std::string> unknown;
        for (const auto& name : options_.add_outputs) {
            if (find_value(outputs_, name) != nullptr)
                return failure(error_code::invalid_argument, "--add-output names " + in_quotes(name) + ", already a graph output",
                               "leave it out; it is an output already");
            if (!main_defined_.contains(name))
                return failure(error_code::invalid_argument,
                               "--add-output names " + in_quotes(name) + ", which nothing in the main graph defines",
                               names_hint(name));
            if (type_of_value(name).empty()) unknown.push_back(name);
        }
        if (!unknown.empty()) {
            auto shapes = inferred_shapes(bound_, unknown);
            if (!shapes)
                return failure(
                    shapes.error().code,
                    "--add-output " + in_quotes(unknown.front()) +
                        ": its type is not known (no value_info), and inference cannot read the graph: " + shapes.error().message,
                    shapes.error().hint);
            for (auto& [name, shape] : *shapes) inferred_.emplace(name, std::move(shape));
        }
        for (const auto& name : options_.add_outputs) {
            auto type = type_of_value(name);
            if (type.empty()) {
                const auto it = inferred_.find(name);
                if (it == inferred_.end() || it->second.data_type == 0)
                    return failure(error_code::invalid_argument,
                                   "--add-output " + in_quotes(name) +
                                       ": its type is not known (no value_info, and inference "
                                       "cannot tell)",
                                   "run the model through shape inference first (e.g. onnx.shape_inference) and edit that");
                decoded_type t;
                t.is_tensor = true;
                t.elem_type = it->second.data_type;
                if (it->second.dims) {
                    t.has_shape = true;
                    for (const auto d : *it->second.dims)
                        t.dims.push_back(d >= 0 ? dimension{dimension::kind::value, d, {}} : dimension{});
                }
                type = detail::encode_type({}, t);
            } else {
                auto decoded = detail::decode_type(type);
                if (!decoded || !decoded->is_tensor)
                    return failure(error_code::invalid_argument, "--add-output " + in_quotes(name) + " is not a tensor",
                                   "only tensors can be added as outputs");
            }
            proto::encoded_message vi;
            vi.text_field(number(onnx::value_info_field::name), renamed(name));
            vi.bytes_field(number(onnx::value_info_field::type), type);
            const auto position = last_output_position_ == no_index ? tree().at(main_).field_count : last_output_position_ + 1;
            edits_.insert(main_, position, edits_.bytes(number(onnx::graph_field::output), vi.pool()));
            auto shown = detail::decode_type(type);
            report_.changes.push_back({"add_output", renamed(name), shown ? detail::dims_text(*shown) : ""});
        }
        return {};
    }

    // The TypeProto bytes known for main-graph value `name` after the dim edits: its
    // value_info's, an input's or an output's; empty when none.
    std::vector<std::byte> type_of_value(std::string_view name) const {
        std::uint32_t message = no_index;
        if (const auto it = value_infos_.find(name); it != value_infos_.end()) message = it->second;
        else if (const auto* v = find_value(inputs_, name)) message = v->message;
        if (message == no_index) return {};
        if (const auto it = new_types_.find(message); it != new_types_.end()) return it->second;
        const auto* type = tree().find(message, number(onnx::value_info_field::type));
        if (type == nullptr) return {};
        const auto bytes = tree().payload(*type);
        return {bytes.begin(), bytes.end()};
    }

    // ---------------------------------------------------------------- dims

    // Fixes symbol `symbol` to `to` everywhere; a second, different fix is a contradiction.
    result<void> fix_symbol(const std::string& symbol, const dimension& to, std::string_view why) {
        const auto [it, added] = symbols_.emplace(symbol, to);
        if (!added && it->second != to)
            return failure(error_code::invalid_argument,
                           std::string(why) + " fixes the symbolic dim " + in_quotes(symbol) + " to " + dim_text(to) +
                               ", but another request fixed it to " + dim_text(it->second),
                           "one symbol has one value across the model: give the same value everywhere");
        return {};
    }
    static std::string dim_text(const dimension& d) {
        return d.what == dimension::kind::value ? std::to_string(d.value) : d.what == dimension::kind::symbol ? d.symbol : "?";
    }

    result<decoded_type> decoded(std::uint32_t value_info) const {
        const auto* type = tree().find(value_info, number(onnx::value_info_field::type));
        if (type == nullptr) return decoded_type{};
        return detail::decode_type(tree().payload(*type));
    }

    result<void> fix_dims() {
        std::map<std::uint32_t, decoded_type> fixed;  // value_info message -> its type as given
        for (const auto& spec : options_.input_shapes) {
            const auto* v = find_value(inputs_, spec.name);
            const std::string what = "--input-shape " + in_quotes(spec.name);
            if (v == nullptr || initializers_.contains(spec.name))
                return failure(error_code::invalid_argument,
                               what + ": the model has no graph input of that name" +
                                   (v != nullptr ? " (it is an initializer, a constant)" : ""),
                               names_hint(spec.name));
            ONNXSTREAM_ASSIGN(auto type, decoded(v->message));
            if (!type.is_tensor) return failure(error_code::invalid_argument, what + ": the input is not a tensor", inspect_hint);
            if (type.has_shape && type.dims.size() != spec.dims.size())
                return failure(error_code::invalid_argument,
                               what + " gives " + std::to_string(spec.dims.size()) + " dims, the input has " +
                                   std::to_string(type.dims.size()) + " " + detail::dims_text(type),
                               "give one dim for each of the input's");
            auto result_type = type;
            result_type.has_shape = true;
            result_type.dims.resize(spec.dims.size());
            for (std::size_t i = 0; i < spec.dims.size(); ++i) {
                const dimension want = spec.dims[i].value ? dimension{dimension::kind::value, *spec.dims[i].value, {}}
                                                          : dimension{dimension::kind::symbol, 0, spec.dims[i].symbol};
                const auto& had = result_type.dims[i];
                if (had.what == dimension::kind::value && had != want)
                    return failure(error_code::invalid_argument,
                                   what + " gives dim " + std::to_string(i) + " as " + dim_text(want) +
                                       ", which the model declares as " + std::to_string(had.value),
                                   "a declared static dim cannot change; give " + std::to_string(had.value) + " there");
                if (had.what == dimension::kind::symbol && had != want) ONNXSTREAM_TRY(fix_symbol(had.symbol, want, what));
                result_type.dims[i] = want;
            }
            if (result_type != type)
                report_.changes.push_back(
                    {"shape", spec.name, detail::dims_text(type) + " -> " + detail::dims_text(result_type)});
            fixed[v->message] = std::move(result_type);
        }
        if (options_.batch) {
            const dimension n{dimension::kind::value, *options_.batch, {}};
            const auto batch_one = [&](const std::string& name, const graph_value& v) -> result<void> {
                if (fixed.contains(v.message) || dropped_.contains(v.message)) return {};
                ONNXSTREAM_ASSIGN(auto type, decoded(v.message));
                if (!type.is_tensor || !type.has_shape || type.dims.empty()) return {};
                auto& d0 = type.dims[0];
                if (d0.what == dimension::kind::value) return {};
                const auto before = detail::dims_text(type);
                if (d0.what == dimension::kind::symbol) ONNXSTREAM_TRY(fix_symbol(d0.symbol, n, "--batch"));
                d0 = n;
                report_.changes.push_back({"shape", name, before + " -> " + detail::dims_text(type)});
                fixed[v.message] = std::move(type);
                return {};
            };
            // Outputs follow through their symbols and inference: an output's unknown dim 0
            // is not always the batch (Silero's stateN is [2, batch, 128]).
            for (const auto& [name, v] : inputs_)
                if (!initializers_.contains(name)) ONNXSTREAM_TRY(batch_one(name, v));
        }
        if (fixed.empty() && symbols_.empty()) return {};

        // Every value_info of the main graph and its subgraphs: the types given, then the
        // fixed symbols wherever they appear.
        std::uint64_t followed = 0;
        std::map<std::uint32_t, decoded_type> after;
        for (const auto g : graphs_) {
            for (const auto& f : tree().fields(g)) {
                const auto field = static_cast<onnx::graph_field>(f.number());
                if (f.child == no_index || dropped_.contains(f.child) ||
                    (field != onnx::graph_field::input && field != onnx::graph_field::output &&
                     field != onnx::graph_field::value_info))
                    continue;
                auto type = decoded(f.child);
                if (!type || !type->is_tensor) continue;
                auto now = fixed.contains(f.child) ? fixed[f.child] : *type;
                for (auto& d : now.dims)
                    if (d.what == dimension::kind::symbol)
                        if (const auto it = symbols_.find(d.symbol); it != symbols_.end()) d = it->second;
                if (now == *type) continue;
                if (!fixed.contains(f.child)) ++followed;
                after[f.child] = std::move(now);
            }
        }
        fill_output_dims(after);
        for (const auto& [message, type] : after) {
            const auto* field = tree().find(message, number(onnx::value_info_field::type));
            const auto original = field != nullptr ? tree().payload(*field) : std::span<const std::byte>{};
            auto bytes = detail::encode_type(original, type);
            replace_field(message, number(onnx::value_info_field::type),
                          edits_.bytes(number(onnx::value_info_field::type), bytes));
            new_types_[message] = std::move(bytes);
        }
        if (followed > 0)
            report_.changes.push_back(
                {"value_info", "", std::to_string(followed) + " other value type(s) follow the fixed symbolic dims"});
        return {};
    }

    // Graph outputs whose dims are still unknown take those inference knows (a dim no
    // symbol names cannot follow a fixed input otherwise).
    void fill_output_dims(std::map<std::uint32_t, decoded_type>& after) {
        std::vector<std::string> wanted;
        std::vector<std::pair<std::string, decoded_type>> open;
        for (const auto& [name, v] : outputs_) {
            if (dropped_.contains(v.message)) continue;
            auto type = after.contains(v.message) ? result<decoded_type>(after[v.message]) : decoded(v.message);
            if (!type || !type->is_tensor) continue;
            const bool unknown = !type->has_shape || std::any_of(type->dims.begin(), type->dims.end(), [](const dimension& d) {
                return d.what == dimension::kind::unknown;
            });
            if (!unknown) continue;
            wanted.push_back(name);
            open.emplace_back(name, *type);
        }
        if (wanted.empty()) return;
        // Best effort: a graph inference cannot read keeps the dims it declares.
        auto inferred = inferred_shapes(bound_, wanted);
        if (!inferred) return;
        const auto& shapes = *inferred;
        for (auto& [name, type] : open) {
            const auto it = shapes.find(name);
            if (it == shapes.end() || !it->second.dims) continue;
            const auto& dims = *it->second.dims;
            if (type.has_shape && type.dims.size() != dims.size()) continue;
            auto now = type;
            if (!now.has_shape) {
                now.has_shape = true;
                now.dims.assign(dims.size(), dimension{});
            }
            for (std::size_t i = 0; i < dims.size(); ++i)
                if (now.dims[i].what == dimension::kind::unknown && dims[i] >= 0)
                    now.dims[i] = {dimension::kind::value, dims[i], {}};
            if (now == type) continue;
            report_.changes.push_back({"shape", name, detail::dims_text(type) + " -> " + detail::dims_text(now) + " (inferred)"});
            after[find_value(outputs_, name)->message] = std::move(now);
        }
    }

    // Replaces the first field `field_number` of `message` by `field` (inserted at its place, or appended).
    void replace_field(std::uint32_t message, std::uint32_t field_number, onnx::new_field field) {
        const auto fields = tree().fields(message);
        for (std::uint32_t p = 0; p < fields.size(); ++p) {
            if (fields[p].number() != field_number) continue;
            edits_.drop(tree(), message, p);
            edits_.insert(message, p, field);
            return;
        }
        edits_.insert(message, static_cast<std::uint32_t>(fields.size()), field);
    }

    // ---------------------------------------------------------------- renames

    std::string renamed(std::string_view name) const {
        const auto it = renames_.find(name);
        return it != renames_.end() ? it->second : std::string(name);
    }

    result<void> check_renames() {
        if (options_.renames.empty()) return {};
        // The new names some graph defines or uses already.
        name_set news;
        for (const auto& [from, to] : options_.renames) news.insert(to);
        name_set in_use;
        for (const auto g : graphs_) in_use.merge(named_in(g, news, true));
        for (const auto& [from, to] : options_.renames) {
            if (!main_defined_.contains(from))
                return failure(
                    error_code::invalid_argument,
                    "--rename " + in_quotes(from) + ": no input, initializer or node output of the main graph has that name",
                    inspect_hint);
            if (in_use.contains(to))
                return failure(error_code::invalid_argument,
                               "--rename " + in_quotes(from) + "=" + in_quotes(to) + ": " + in_quotes(to) +
                                   " is already a name in the model",
                               "choose a name the model does not use");
            renames_.emplace(from, to);
        }
        return {};
    }

    using rename_map = std::map<std::string, std::string, std::less<>>;

    void rename_text(std::uint32_t message, std::uint32_t position, const onnx::field_entry& f, const rename_map& names) {
        const auto it = names.find(text_of(f));
        if (it == names.end()) return;
        edits_.drop(tree(), message, position);
        edits_.insert(message, position, edits_.text(f.number(), it->second));
        ++rename_counts_[it->first];
    }
    void rename_named(std::uint32_t message, std::uint32_t field_number, const rename_map& names) {
        const auto fields = tree().fields(message);
        for (std::uint32_t p = 0; p < fields.size(); ++p)
            if (fields[p].number() == field_number) rename_text(message, p, fields[p], names);
    }

    // A TensorAnnotation (the tree keeps it opaque) names tensors in tensor_name and in
    // the values of quant_parameter_tensor_names: encoded again when one is renamed.
    void rename_annotation(std::uint32_t g, std::uint32_t position, const onnx::field_entry& f, const rename_map& names) {
        const auto bytes = tree().payload(f);
        std::vector<proto::field_token> fields;
        if (!proto::tokenize(bytes, 0, bytes.size(), fields)) return;
        const auto text = [&](std::span<const std::byte> b, const proto::field_token& t) {
            return std::string_view(reinterpret_cast<const char*>(b.data() + t.payload_offset), t.payload_length);
        };
        bool changed = false;
        proto::encoded_message out;
        for (const auto& t : fields) {
            const auto whole = bytes.subspan(t.header_offset, t.total_length());
            if (t.type != proto::wire_type::length_delimited) {
                out.append_bytes(whole);
                continue;
            }
            if (t.number == 1) {  // tensor_name
                const auto it = names.find(text(bytes, t));
                if (it != names.end()) {
                    out.text_field(1, it->second);
                    ++rename_counts_[it->first];
                    changed = true;
                    continue;
                }
            } else if (t.number == 2) {  // quant_parameter_tensor_names: StringStringEntryProto
                const auto entry = bytes.subspan(t.payload_offset, t.payload_length);
                std::vector<proto::field_token> parts;
                if (proto::tokenize(entry, 0, entry.size(), parts)) {
                    proto::encoded_message rebuilt;
                    bool entry_changed = false;
                    for (const auto& p : parts) {
                        const auto it = p.number == number(onnx::string_entry_field::value) &&
                                                p.type == proto::wire_type::length_delimited
                                            ? names.find(text(entry, p))
                                            : names.end();
                        if (it != names.end()) {
                            rebuilt.text_field(p.number, it->second);
                            ++rename_counts_[it->first];
                            entry_changed = true;
                        } else {
                            rebuilt.append_bytes(entry.subspan(p.header_offset, p.total_length()));
                        }
                    }
                    if (entry_changed) {
                        out.bytes_field(2, rebuilt.pool());
                        changed = true;
                        continue;
                    }
                }
            }
            out.append_bytes(whole);
        }
        if (!changed) return;
        edits_.drop(tree(), g, position);
        edits_.insert(g, position, edits_.bytes(number(onnx::graph_field::quantization_annotation), out.pool()));
    }

    void rename_in(std::uint32_t g, const rename_map& names) {
        const auto graph_fields = tree().fields(g);
        for (std::uint32_t p = 0; p < graph_fields.size(); ++p)
            if (graph_fields[p].number() == number(onnx::graph_field::quantization_annotation) &&
                graph_fields[p].type() == proto::wire_type::length_delimited)
                rename_annotation(g, p, graph_fields[p], names);
        std::vector<onnx::field_entry> scratch;
        for (const auto& f : tree().fields(g)) {
            if (f.child == no_index || dropped_.contains(f.child)) continue;
            switch (static_cast<onnx::graph_field>(f.number())) {
                case onnx::graph_field::input:
                case onnx::graph_field::output:
                case onnx::graph_field::value_info: rename_named(f.child, number(onnx::value_info_field::name), names); break;
                case onnx::graph_field::initializer: rename_named(f.child, number(onnx::tensor_field::name), names); break;
                case onnx::graph_field::sparse_initializer:
                    if (const auto* values = tree().find(f.child, number(onnx::sparse_tensor_field::values));
                        values != nullptr && values->child != no_index)
                        rename_named(values->child, number(onnx::tensor_field::name), names);
                    break;
                case onnx::graph_field::node: {
                    const auto fields = tree().read_fields(f.child, scratch);
                    for (std::uint32_t p = 0; p < fields.size(); ++p)
                        if (fields[p].number() == number(onnx::node_field::input) ||
                            fields[p].number() == number(onnx::node_field::output))
                            rename_text(f.child, p, fields[p], names);
                    // A subgraph reads outer names unless it defines its own of that name.
                    for (const auto sub : subgraphs_of(f.child)) {
                        const auto own = named_in(sub, names);
                        rename_map seen;
                        for (const auto& [from, to] : names)
                            if (!own.contains(from)) seen.emplace(from, to);
                        if (!seen.empty()) rename_in(sub, seen);
                    }
                    break;
                }
                default: break;
            }
        }
    }

    void rename_all() {
        if (renames_.empty()) return;
        rename_in(main_, renames_);
        for (const auto& [from, to] : options_.renames)
            report_.changes.push_back(
                {"rename", from, "-> " + to + " (" + std::to_string(rename_counts_[from]) + " reference(s))"});
    }

    // ---------------------------------------------------------------- metadata, producer, doc strings

    void edit_metadata_and_producer() {
        const auto fields = tree().fields(0);
        for (const auto& [key, value] : options_.metadata) {
            proto::encoded_message entry;
            entry.text_field(number(onnx::string_entry_field::key), key);
            entry.text_field(number(onnx::string_entry_field::value), value);
            const auto field = edits_.bytes(number(onnx::model_field::metadata_props), entry.pool());
            const auto p = metadata_position(key);
            if (p != no_index) {
                edits_.drop(tree(), 0, p);
                edits_.insert(0, p, field);
            } else {
                edits_.insert(0, static_cast<std::uint32_t>(fields.size()), field);
            }
            report_.changes.push_back({"metadata", key, p != no_index ? "replaced" : "added"});
        }
        if (options_.producer_name) {
            replace_field(0, number(onnx::model_field::producer_name),
                          edits_.text(number(onnx::model_field::producer_name), *options_.producer_name));
            std::string detail = *options_.producer_name;
            if (options_.producer_version) {
                replace_field(0, number(onnx::model_field::producer_version),
                              edits_.text(number(onnx::model_field::producer_version), *options_.producer_version));
                detail += " " + *options_.producer_version;
            }
            report_.changes.push_back({"producer", "", detail});
        }
    }

    std::uint32_t metadata_position(std::string_view key) const {
        const auto fields = tree().fields(0);
        for (std::uint32_t p = 0; p < fields.size(); ++p)
            if (fields[p].number() == number(onnx::model_field::metadata_props) && fields[p].child != no_index &&
                name_of(fields[p].child, number(onnx::string_entry_field::key)) == key)
                return p;
        return no_index;
    }

    result<void> metadata_removals() {
        for (const auto& key : options_.remove_metadata) {
            const auto p = metadata_position(key);
            if (p == no_index)
                return failure(error_code::invalid_argument,
                               "--remove-metadata " + in_quotes(key) + ": the model has no such key",
                               "check the keys with `onnxstream inspect`; nothing was written");
            edits_.drop(tree(), 0, p);
            report_.changes.push_back({"remove_metadata", key, "removed"});
        }
        return {};
    }

    void strip_doc() {
        std::uint64_t count = 0;
        const auto messages = tree().messages();
        std::vector<onnx::field_entry> scratch;
        for (std::uint32_t m = 0; m < messages.size(); ++m) {
            std::uint32_t doc = 0;
            switch (messages[m].kind) {
                case message_kind::model: doc = number(onnx::model_field::doc_string); break;
                case message_kind::graph: doc = number(onnx::graph_field::doc_string); break;
                case message_kind::node: doc = number(onnx::node_field::doc_string); break;
                case message_kind::attribute: doc = number(onnx::attribute_field::doc_string); break;
                case message_kind::tensor: doc = number(onnx::tensor_field::doc_string); break;
                case message_kind::value_info: doc = number(onnx::value_info_field::doc_string); break;
                case message_kind::function: doc = number(onnx::function_field::doc_string); break;
                default: continue;
            }
            if (dropped_.contains(m)) continue;
            const auto fields = tree().read_fields(m, scratch);
            for (std::uint32_t p = 0; p < fields.size(); ++p)
                if (fields[p].number() == doc && fields[p].type() == proto::wire_type::length_delimited) {
                    edits_.drop(tree(), m, p);
                    ++count;
                }
        }
        report_.changes.push_back({"strip_doc", "", std::to_string(count) + " doc string(s) removed"});
    }

    // ---------------------------------------------------------------- external data

    // The output points at the data files the input uses, by paths from its own folder.
    result<void> point_at_data() {
        if (bound_.data.files.empty()) return {};
        const auto folder = report_.output.parent_path().empty() ? fs::path(".") : report_.output.parent_path();
        std::error_code folder_error;
        const auto folder_real = fs::weakly_canonical(fs::absolute(folder), folder_error);
        std::map<std::string, std::string, std::less<>> moved;  // location as written -> new
        for (const auto& file : bound_.data.files) {
            if (!file.found) continue;
            std::error_code data_error;
            const auto data_real = fs::canonical(file.found->path, data_error);
            if (data_error || folder_error || !onnx::is_inside(data_real, folder_real))
                return failure(error_code::invalid_argument,
                               "the data file " + file.found->path.string() + " is not inside the output's folder " +
                                   folder.string() + ", so the edited model could not point at it",
                               "write the output beside the input model (its data files are never copied)");
            const auto location = data_real.lexically_relative(folder_real).generic_string();
            if (location != file.location) moved.emplace(file.location, location);
        }
        if (moved.empty()) return {};
        const auto messages = tree().messages();
        for (std::uint32_t m = 0; m < messages.size(); ++m) {
            if (messages[m].kind != message_kind::string_entry || messages[m].parent == no_index || messages[m].parent == 0 ||
                tree().at(messages[m].parent).kind != message_kind::tensor)
                continue;
            if (name_of(m, number(onnx::string_entry_field::key)) != "location") continue;
            const auto it = moved.find(name_of(m, number(onnx::string_entry_field::value)));
            if (it == moved.end()) continue;
            replace_field(m, number(onnx::string_entry_field::value),
                          edits_.text(number(onnx::string_entry_field::value), it->second));
        }
        for (const auto& [from, to] : moved)
            report_.changes.push_back({"data_location", from, "-> " + to + " (the same file, named from the output's folder)"});
        return {};
    }

    onnx::tree_edits edits_;
    std::uint32_t main_ = no_index;
    std::vector<std::uint32_t> graphs_;  // the main graph and every subgraph in it
    std::vector<std::pair<std::string, graph_value>> inputs_, outputs_;
    std::map<std::string, std::uint32_t, std::less<>> value_infos_;
    std::set<std::string, std::less<>> initializers_;
    name_set main_defined_;  // of the names options_ asks about
    std::uint32_t last_output_position_ = no_index;
    std::set<std::uint32_t> dropped_;                            // messages whose field is dropped
    std::map<std::string, dimension, std::less<>> symbols_;      // fixed symbolic dims
    std::map<std::uint32_t, std::vector<std::byte>> new_types_;  // value_info -> its new TypeProto
    std::unordered_map<std::string, graph::value_shape> inferred_;
    rename_map renames_;
    std::map<std::string, std::uint64_t, std::less<>> rename_counts_;
};

}  // namespace

result<edit_report> edit(const fs::path& model, const edit_options& options) { return editor(model, options).run(); }

}  // namespace onnxstream::ops
