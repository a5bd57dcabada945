// The graph model the passes work on: every graph of a model (the main graph, the bodies
// of If / Loop / Scan at any depth, local functions) as scopes of nodes, initializers and
// value names, read once from the message tree. It holds metadata only: a tensor is the
// site where its bytes are (or, for a tensor a pass computes, the recipe for them), so
// building and editing the model never reads a weight.
//
// Passes edit this model (remove, add, move and rewire nodes, drop and add initializers);
// nothing is written until the end, when build_edits (model_edits.hpp) turns the
// differences between the model and the tree into tree edits. Every edit is a member
// function that marks what it dirties itself (`changed`, `removed`, `renamed`): a caller
// never sets those flags. Nodes and tensors keep their ids for the model's life: removal
// only marks them, `compact` tidies the scopes' lists.
//
// Scoping: a subgraph sees every name of the scopes around it (ONNX lets an If/Loop/Scan
// body read any outer value by name); a function sees only its own. Graphs of
// TrainingInfoProto are not edited: every name they mention is `pinned`, and a pinned
// value is never removed or renamed in the main graph.
#pragma once

#include <onnxstream/graph/name_list.hpp>
#include <onnxstream/graph/name_table.hpp>
#include <onnxstream/index.hpp>
#include <onnxstream/lazy_box.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/result.hpp>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace onnxstream::graph {

using onnxstream::none;
static_assert(std::uint32_t{none} == onnx::no_index);

// The ids of the model's parts: each indexes its own array of graph_model only.
using node_id = onnxstream::index<struct node_tag>;              // graph_model::nodes
using tensor_id = onnxstream::index<struct tensor_tag>;          // graph_model::tensors
using scope_id = onnxstream::index<struct scope_tag>;            // graph_model::scopes
using value_info_id = onnxstream::index<struct value_info_tag>;  // graph_model::value_infos
using function_id = onnxstream::index<struct function_tag>;      // graph_model::functions
using onnx::site_id;                                             // model_file::sites (tensor_walker.hpp)
inline constexpr scope_id main_scope{0};

enum class scope_kind : std::uint8_t { main, subgraph, function };

/// An INT or INTS attribute a pass gave a node (Conv `pads` after a Pad was fused into it,
/// Transpose `perm` after two were composed); it replaces the node's attribute of that name.
struct integer_attribute {
    std::string name;
    std::optional<std::int64_t> i;   // set: type INT
    std::vector<std::int64_t> ints;  // otherwise: type INTS
    bool operator==(const integer_attribute&) const = default;
};

/// A text the graph model keeps (graph_model::keep) in 8 bytes: a pointer to the view of
/// its one copy. Reads as a std::string_view; "" when default-made.
class kept_text {
public:
    constexpr kept_text() noexcept = default;
    explicit constexpr kept_text(const std::string_view* view) noexcept : view_(view) {}

    [[nodiscard]] constexpr std::string_view view() const noexcept { return view_ != nullptr ? *view_ : std::string_view{}; }
    constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)
    [[nodiscard]] constexpr bool empty() const noexcept { return view().empty(); }
    [[nodiscard]] constexpr std::size_t size() const noexcept { return view().size(); }
    [[nodiscard]] constexpr const char* data() const noexcept { return view().data(); }

    friend constexpr bool operator==(kept_text a, kept_text b) noexcept { return a.view() == b.view(); }
    friend constexpr bool operator==(kept_text a, std::string_view b) noexcept { return a.view() == b; }
    friend constexpr bool operator==(kept_text a, const char* b) noexcept { return a.view() == b; }

private:
    const std::string_view* view_ = nullptr;
};

/// An operator: a (domain, op type) pair the graph model keeps once (graph_model::operator_of),
/// which its nodes point to. "" is ai.onnx.
struct operator_name {
    std::string_view domain;
    std::string_view op_type;
};
inline constexpr operator_name no_operator{};

/// The lists few nodes have, out of line (node::extras).
struct node_extras {
    std::string_view name;                          // a node a pass added: its name (kept text)
    kept_text overload{};                           // its NodeProto's overload (onnx 1.16), if not empty
    std::vector<scope_id> subgraphs;                // scopes its attributes hold, in attribute order
    std::vector<std::string> dropped_attributes;    // attribute names a pass removed
    std::vector<integer_attribute> set_attributes;  // attributes a pass set (their names are dropped too)
};

// One node in 64 bytes (a model may have millions): its op type and domain are one
// pointer to the model's operator (a few distinct ones), its name lists hold up to three ids in place, and what few nodes
// have (an overload, subgraphs, a pass's attribute edits) is out of line, one pointer.
// Its name is read from its NodeProto when asked (graph_model::node_name): only findings
// and messages name nodes.
struct node {
    std::uint32_t message = none;    // the NodeProto it was read from; none for a node a pass added
    scope_id scope = none;           // the scope it is in now
    scope_id original_scope = none;  // the scope it was read in
    bool removed = false;
    bool changed = false;                    // inputs, outputs or attributes differ from its NodeProto
    const operator_name* op = &no_operator;  // graph_model::operator_of
    name_list inputs{};
    name_list outputs{};
    lazy_box<node_extras> lists{};

    [[nodiscard]] std::string_view op_type() const noexcept { return op->op_type; }
    [[nodiscard]] std::string_view domain() const noexcept { return op->domain; }  // "" is ai.onnx
    /// The overload of the function it calls ("" for none).
    [[nodiscard]] std::string_view overload() const noexcept {
        return lists.get() != nullptr ? lists.get()->overload.view() : std::string_view{};
    }
    [[nodiscard]] std::span<const scope_id> subgraphs() const noexcept {
        return lists.get() != nullptr ? std::span<const scope_id>(lists.get()->subgraphs) : std::span<const scope_id>{};
    }
    [[nodiscard]] std::span<const std::string> dropped_attributes() const noexcept {
        return lists.get() != nullptr ? std::span<const std::string>(lists.get()->dropped_attributes)
                                      : std::span<const std::string>{};
    }
    [[nodiscard]] std::span<const integer_attribute> set_attributes() const noexcept {
        return lists.get() != nullptr ? std::span<const integer_attribute>(lists.get()->set_attributes)
                                      : std::span<const integer_attribute>{};
    }
    /// The lists, to change (made now if need be).
    [[nodiscard]] node_extras& extras() { return lists.make(); }
};

/// How the channel of each element of a weight is found (BatchNormalization folding).
enum class channel_layout : std::uint8_t {
    axis0,           // Conv weight [C_out, C_in/group, k...]; Gemm B with transB = 1 ([N, K])
    conv_transpose,  // ConvTranspose weight [C_in, C_out/group, k...]: channel g*(C_out/group)+j
    last_axis_2d,    // Gemm B with transB = 0 ([K, N])
};

/// The elements of a tensor a pass computes; produced only when the model is written.
struct computed_values {
    bool scaled = false;       // true: base's elements times factors[channel]
    site_id base_site = none;  // scaled: the site of the weight scaled (none: `bytes` are the base)
    channel_layout layout = channel_layout::axis0;
    std::uint64_t group = 1;      // conv_transpose
    std::vector<double> factors;  // scaled: one per channel
    std::vector<double> values;   // not scaled: the elements
    // Folded constants (any type with a fixed width): the little-endian elements as they
    // are written, or the bytes of another tensor site copied as they are. Scaled: the
    // base's bytes when the weight scaled was itself computed.
    bool has_bytes = false;
    std::vector<std::byte> bytes;
    site_id copy_site = none;  // the site whose bytes are copied
};

/// A tensor a pass added: its type and dims, and the recipe for its elements.
struct computed_tensor {
    std::int32_t data_type = 0;
    std::vector<std::int64_t> dims;
    computed_values values;
};

// 20 bytes (a model may have millions of initializers): a computed tensor's type, dims
// and recipe are out of line (graph_model::computed), since most tensors have a site.
struct tensor {
    site_id site = none;    // where its bytes are; none for a computed tensor
    scope_id scope = none;  // the scope whose initializer it is
    name_id name = empty_name;
    std::uint32_t computed = none;  // add_tensor's: graph_model::computed(t)
    bool removed = false;
    bool renamed = false;  // its name differs from its TensorProto's
};
static_assert(sizeof(tensor) <= 20);
static_assert(sizeof(node) == 64);

struct value_info {
    std::uint32_t message = none;  // ValueInfoProto
    scope_id scope = none;
    name_id name = empty_name;
    bool removed = false;
};

struct scope {
    scope_kind kind = scope_kind::main;
    std::uint32_t message = none;  // GraphProto or FunctionProto
    scope_id parent = none;        // the scope whose names it sees (subgraphs)
    node_id owner = none;          // the node holding it (subgraphs)
    std::string attribute;         // the attribute holding it ("then_branch", "body")
    bool removed = false;
    bool changed = false;        // its own lists (nodes, initializers, outputs, value_info) changed
    std::vector<node_id> nodes;  // in order; removed nodes stay until compact(). Changed by
                                 // add_node, move_contents, compact during a walk, not by hand
    std::vector<tensor_id> initializers;
    std::vector<name_id> inputs;
    std::vector<name_id> outputs;
    std::vector<std::uint32_t> output_messages;  // ValueInfoProto per output (none in functions)
    std::vector<name_id> sparse_initializers;
    std::vector<value_info_id> value_infos;
};

struct function {
    std::uint32_t message = none;
    scope_id scope = none;
    std::string domain;
    std::string name;
    std::string overload;
    bool removed = false;
};

/// One attribute of a node, decoded (the parts the passes read).
struct attribute_value {
    std::uint32_t message = none;  // AttributeProto
    std::string_view name;
    std::int32_t type = 0;
    std::optional<double> f;
    std::optional<std::int64_t> i;
    std::optional<std::string_view> s;
    std::uint32_t tensor = none;  // TensorProto message of `t`
    std::vector<std::int64_t> ints;
    std::vector<double> floats;
    bool has_graph = false;
    bool has_sparse = false;
};

class graph_model;

/// A walk over a graph model's nodes or tensors in id order, which is the file's order for
/// those read from it: it releases the mapped pages behind it (io::release_behind; not for
/// a model whose tensors are kept, as onnx::tensor_pass), so that reading a million
/// nodes' names or tensors' types, dims and names does not keep the whole file mapped.
/// Tell it each node or tensor before reading it. Out of order is allowed: a move back
/// releases what the reads since the last release mapped, once they span a window.
class file_walk {
public:
    explicit file_walk(const graph_model& model) noexcept;
    file_walk(const file_walk&) = delete;
    file_walk& operator=(const file_walk&) = delete;
    ~file_walk();

    /// The walk is at node `n` now (one a pass added, which has no message, changes nothing).
    void reached(node_id n) noexcept;
    /// The walk is at tensor `t` now (a computed tensor, which has no site, changes nothing).
    void reached(tensor_id t) noexcept;

private:
    const graph_model* model_;
    io::release_behind behind_;
    bool releases_;
};

class graph_model {
public:
    // Move-only: nodes point into kept_views_, which a move keeps and a copy would not.
    graph_model() = default;
    graph_model(const graph_model&) = delete;
    graph_model& operator=(const graph_model&) = delete;
    graph_model(graph_model&&) noexcept = default;
    graph_model& operator=(graph_model&&) noexcept = default;
    ~graph_model() = default;

    /// Reads every graph of `model`. The model must outlive the graph model. Errors:
    /// `not_onnx` when there is no main graph, or when a graph defines a name twice
    /// (check_single_assignment).
    [[nodiscard]] static result<graph_model> build(const onnx::model_file& model);
    /// Errors (`not_onnx`) when a node writes a name its own graph already defines: another
    /// node's output, a graph input or an initializer. An initializer given twice, and a
    /// name a subgraph defines again over an enclosing graph's, pass.
    [[nodiscard]] static result<void> check_single_assignment(const graph_model& model);

    [[nodiscard]] const onnx::model_file& file() const noexcept { return *file_; }
    [[nodiscard]] const onnx::message_tree& tree() const noexcept { return file_->tree; }
    [[nodiscard]] std::string_view text(name_id id) const { return names.text(id); }
    /// A copy of `text` that lives as long as the model (equal texts share one copy), for
    /// the texts of a node a pass makes or changes.
    [[nodiscard]] kept_text keep(std::string_view text);
    /// The operator (`domain`, `op_type`) as the model keeps it, once for each distinct
    /// pair ("ai.onnx" is ""): what node::op points to.
    [[nodiscard]] const operator_name* operator_of(std::string_view domain, std::string_view op_type);

    /// The opset version imported for `domain` ("" and "ai.onnx" are the same); 0 if none.
    [[nodiscard]] std::int64_t opset(std::string_view domain) const;

    [[nodiscard]] bool node_live(node_id n) const { return !nodes[n].removed && !scopes[nodes[n].scope].removed; }
    /// Calls `visit(n)` for every live node, scope by scope in id order (a subgraph comes
    /// after the scope around it, so what an outer node rewrote is known inside). Each
    /// scope's nodes are those listed when its walk starts (for_each_listed_node), liveness
    /// checked at each step, so `visit` may remove nodes or add new ones (they are not
    /// visited). The mapped pages behind the walk go (file_walk).
    template <class Visit>
    void for_each_live_node(Visit&& visit) const {
        file_walk walk(*this);
        for (const auto s : scopes.ids()) {
            if (scopes[s].removed) continue;
            for_each_listed_node(s, [&](node_id n) {
                if (!node_live(n) || nodes[n].scope != s) return;
                walk.reached(n);
                visit(n);
            });
        }
    }
    /// Calls `visit(n)` for every node scope `s` lists when the call starts, in order,
    /// removed ones too. `visit` may change the list through add_node, move_contents or
    /// compact (not by hand): the walk goes on over the list as it was, which is copied
    /// only then (a million nodes' copy a walk was 8 % of analyze), and added nodes are not
    /// visited. Walks may nest.
    template <class Visit>
    void for_each_listed_node(scope_id s, Visit&& visit) const {
        listed_walk walk(*this, s);
        const auto count = scopes[s].nodes.size();
        for (std::size_t i = 0; i < count; ++i) {
            visit(walk.copied ? walk.before[i] : scopes[s].nodes[i]);
            // A list a visit changed by hand was not copied first (debug builds check).
            assert(walk.copied || scopes[s].nodes.size() == count);
        }
    }
    [[nodiscard]] bool tensor_live(tensor_id t) const { return !tensors[t].removed && !scopes[tensors[t].scope].removed; }

    /// The attribute `name` of node `n` (a dropped attribute is absent, a set one is as set).
    /// Views into the node: valid until the node is next changed.
    [[nodiscard]] std::optional<attribute_value> attribute(node_id n, std::string_view name) const;
    /// Every attribute message of node `n`, in order (dropped ones left out; set ones, which
    /// have no message, are in `nodes[n].set_attributes()`).
    [[nodiscard]] std::vector<std::uint32_t> attribute_messages(node_id n) const;
    /// Every attribute of node `n`, decoded: its messages', then the ones a pass set.
    [[nodiscard]] std::vector<attribute_value> attributes(node_id n) const;
    /// Gives node `n` attribute `a`, replacing the one of that name it had; marks it changed.
    void set_attribute(node_id n, integer_attribute a);

    /// The site of a TensorProto message, or none.
    [[nodiscard]] site_id site_of(std::uint32_t tensor_message) const;
    /// The data type, dims and byte size of an initializer (original or computed).
    [[nodiscard]] std::int32_t tensor_type(tensor_id t) const;
    [[nodiscard]] std::vector<std::int64_t> tensor_dims(tensor_id t) const;
    /// The dims without a copy: a view of the model's bytes, or of a computed tensor's dims
    /// (valid until that tensor is changed or removed).
    [[nodiscard]] onnx::tensor_dims dims_view(tensor_id t) const;
    [[nodiscard]] std::uint64_t tensor_bytes(tensor_id t) const;
    /// What add_tensor gave tensor `t`; null for a tensor read from the file.
    [[nodiscard]] const computed_tensor* computed(tensor_id t) const {
        return tensors[t].computed != none ? &computed_[tensors[t].computed] : nullptr;
    }

    /// Marks a node removed, and with it every scope its attributes hold.
    void remove_node(node_id n);
    void remove_tensor(tensor_id t);
    /// Adds a node to `scope` right after node `after` (none: at the end), returns its id.
    /// Its op_type and name are kept by the model (keep).
    node_id add_node(scope_id scope, node_id after, std::string_view op_type, name_list inputs, name_list outputs,
                     std::string_view name);
    /// Adds a computed initializer to `scope`, returns its id.
    tensor_id add_tensor(scope_id scope, name_id name, std::int32_t data_type, std::vector<std::int64_t> dims,
                         computed_values values);
    /// Sets input/output `slot` of node `n`, marking it changed.
    void set_input(node_id n, std::size_t slot, name_id name);
    void set_output(node_id n, std::size_t slot, name_id name);
    /// Sets output `slot` of scope `s`.
    void set_graph_output(scope_id s, std::size_t slot, name_id name);
    /// Drops attribute `name` of node `n` (it is then encoded without it).
    void drop_attribute(node_id n, std::string name);
    /// Gives initializer `t` a new name (its TensorProto is then encoded anew).
    void rename_tensor(tensor_id t, name_id name);
    /// Renames the live value_info entries of scope `s` called `from`.
    void rename_value_infos(scope_id s, name_id from, name_id to);
    void remove_value_info(value_info_id v);
    /// Marks function `f` removed, and with it its scope and every scope inside it.
    void remove_function(function_id f);
    /// Moves the live nodes, initializers and value_info of scope `from` into scope `to`,
    /// the nodes just before node `before` of `to`, and returns the moved nodes in order.
    /// The subgraphs they hold then see `to`. `from` is left empty.
    std::vector<node_id> move_contents(scope_id from, scope_id to, node_id before);

    /// Drops removed nodes, tensors and value_info from the scopes' lists (at once when
    /// nothing was removed since the last time: remove_node, remove_tensor and
    /// remove_value_info are how a row is removed).
    void compact();

    /// Where a scope is, for people: `graph`, `graph/If 'cond_if'/then_branch`.
    [[nodiscard]] std::string scope_path(scope_id s) const;
    /// A node for people: its name, else `<op_type> -> <first output>`.
    /// The name of node `n` ("" for none): its NodeProto's, or the name a pass gave it.
    [[nodiscard]] std::string_view node_name(node_id n) const;
    [[nodiscard]] std::string node_label(node_id n) const;
    /// Nodes that are live now, over all scopes.
    [[nodiscard]] std::size_t live_node_count() const;

    /// A number every edit moves forward: each edit member function above, and a name
    /// added to `names` (a pass's fresh name changes what later ones make). The same number
    /// at two times means the model is as it was then, so a caller may reuse it instead of
    /// building it again (analyze runs each pass on the model as read, and builds a new one
    /// only after a pass changed it). Edits made by writing the public arrays directly are
    /// not seen: passes edit through the member functions.
    [[nodiscard]] std::uint64_t revision() const noexcept { return edits_ + names.size(); }

    name_table names;
    indexed_vector<scope_id, scope> scopes;  // 0 is the main graph; a scope's parent always has a smaller id
    indexed_vector<node_id, node> nodes;
    indexed_vector<tensor_id, tensor> tensors;
    indexed_vector<value_info_id, value_info> value_infos;
    indexed_vector<function_id, function> functions;
    std::unordered_set<name_id> pinned;  // names the training graphs use

private:
    struct builder;
    // A for_each_listed_node in progress: its scope's list as it was when the walk began,
    // copied by the first change to it (keep_listed), and the walk it runs inside, if any.
    class listed_walk {
    public:
        listed_walk(const graph_model& model, scope_id walked) noexcept
            : scope(walked), model_(model), outer_(std::exchange(model.walks_, this)) {}
        listed_walk(const listed_walk&) = delete;
        listed_walk& operator=(const listed_walk&) = delete;
        ~listed_walk() { model_.walks_ = outer_; }

        scope_id scope;
        bool copied = false;
        large_vector<node_id> before;  // a large block: two huge pages for a million nodes
        listed_walk* outer() const noexcept { return outer_; }

    private:
        const graph_model& model_;
        listed_walk* outer_;
    };
    // Before scope `s`'s node list changes: each walk of it keeps the list as it was.
    void keep_listed(scope_id s);

    const onnx::model_file* file_ = nullptr;
    // The innermost walk in progress (a model is not moved while it is walked).
    mutable listed_walk* walks_ = nullptr;
    std::uint64_t edits_ = 0;  // edit member functions called (revision)
    bool removals_ = false;    // rows removed since compact() last ran
    std::vector<std::pair<std::string, std::int64_t>> opsets_;
    name_table kept_;  // text behind the views of nodes passes made (not value names: `names` stays as it was)
    // By kept_ id, its view: where a kept_text points (a deque: they stay where they are,
    // and a move of the model keeps them).
    std::deque<std::string_view> kept_views_;
    // The distinct operators (a deque: they stay where they are), by their kept texts' ids.
    std::deque<operator_name> operators_;
    std::unordered_map<std::uint64_t, const operator_name*> operator_ids_;
    std::deque<computed_tensor> computed_;  // add_tensor's, by tensor::computed (a deque: they stay where they are)
};

/// Nodes in `n` and, recursively, in every subgraph it holds.
[[nodiscard]] std::uint64_t nodes_within(const graph_model& model, node_id n);
/// Initializer bytes held by the subgraphs of `n`, recursively.
[[nodiscard]] std::uint64_t bytes_within(const graph_model& model, node_id n);

/// Whether a pass may add initializers that are not graph inputs: IR version 4 and later
/// (before, every initializer had to be a graph input too).
[[nodiscard]] bool can_add_initializers(const graph_model& model);

/// The attribute held by AttributeProto message `message`, decoded.
[[nodiscard]] attribute_value read_attribute(const onnx::message_tree& tree, std::uint32_t message);

}  // namespace onnxstream::graph
