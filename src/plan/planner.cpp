#include <onnxstream/plan/planner.hpp>

#include <onnxstream/proto/varint.hpp>

#include <vector>

namespace onnxstream::plan {
namespace {

using onnx::message_tree;
using onnx::new_field;
using onnx::no_index;
using onnx::tree_edits;

struct sizing {
    std::vector<bool> dirty;                     // the message or something inside it is edited
    std::vector<std::uint64_t> size;             // new payload size of dirty messages
    std::vector<std::uint32_t> first_insertion;  // per message: index into insertions, or no_index
};

// A message's field header for a new payload size: the original header when the size
// is unchanged (keeps non-minimal encodings), else a fresh minimal one.
std::uint64_t header_size(const onnx::field_entry& f, std::uint64_t new_size) {
    if (new_size == f.payload_length()) return f.header_length();
    return proto::tag_size(f.number()) + proto::varint_size(new_size);
}

sizing compute_sizes(const message_tree& tree, const tree_edits& edits) {
    const auto messages = tree.messages();
    sizing s;
    s.dirty.assign(messages.size(), false);
    s.size.assign(messages.size(), 0);
    s.first_insertion.assign(messages.size(), no_index);
    const auto insertions = edits.insertions();
    for (std::size_t i = insertions.size(); i-- > 0;) s.first_insertion[insertions[i].message] = static_cast<std::uint32_t>(i);
    for (const auto& ins : insertions) s.dirty[ins.message] = true;
    for (const auto field_index : edits.dropped_fields()) s.dirty[tree.owner(field_index)] = true;
    // Children come after their parents: one reverse sweep settles dirtiness and sizes.
    for (std::size_t m = messages.size(); m-- > 0;) {
        if (!s.dirty[m]) continue;
        std::uint64_t total = 0;
        for (std::uint32_t i = 0; i < messages[m].field_count; ++i) {
            const auto field_index = messages[m].first_field + i;
            if (edits.dropped(field_index)) continue;
            const auto& f = tree.field(field_index);
            if (f.child != no_index && s.dirty[f.child]) total += header_size(f, s.size[f.child]) + s.size[f.child];
            else total += f.total_length();
        }
        for (auto i = s.first_insertion[m]; i != no_index && i < insertions.size() && insertions[i].message == m; ++i)
            total += insertions[i].field.encoded_size();
        s.size[m] = total;
        if (messages[m].parent != no_index) s.dirty[messages[m].parent] = true;
    }
    return s;
}

class emitter {
public:
    emitter(const message_tree& tree, const tree_edits& edits, const sizing& sizes, std::uint32_t source, write_plan& plan)
        : tree_(tree), edits_(edits), sizes_(sizes), source_(source), plan_(plan) {}

    void message(std::uint32_t m) {
        const auto& msg = tree_.at(m);
        const auto insertions = edits_.insertions();
        auto next = sizes_.first_insertion[m];
        auto insert_until = [&](std::uint32_t position) {
            while (next != no_index && next < insertions.size() && insertions[next].message == m &&
                   insertions[next].position <= position) {
                field(insertions[next].field);
                ++next;
            }
        };
        for (std::uint32_t i = 0; i < msg.field_count; ++i) {
            insert_until(i);
            const auto field_index = msg.first_field + i;
            if (edits_.dropped(field_index)) continue;
            const auto& f = tree_.field(field_index);
            if (f.child != no_index && sizes_.dirty[f.child]) {
                const auto size = sizes_.size[f.child];
                if (size == f.payload_length()) {
                    plan_.copy(source_, f.header_offset(), f.header_length());
                } else {
                    put_varint(proto::make_tag(f.number(), proto::wire_type::length_delimited));
                    put_varint(size);
                }
                message(f.child);
            } else {
                plan_.copy(source_, f.header_offset(), f.total_length());
            }
        }
        insert_until(no_index);
    }

private:
    void put_varint(std::uint64_t value) { plan_.emit(proto::encode_varint(value).view()); }

    void field(const new_field& f) {
        if (f.kind == new_field::payload_kind::varint) {
            put_varint(proto::make_tag(f.number, proto::wire_type::varint));
            put_varint(f.value);
            return;
        }
        if (f.kind == new_field::payload_kind::slice && f.label < edits_.labels().size()) plan_.label(edits_.labels()[f.label]);
        put_varint(proto::make_tag(f.number, proto::wire_type::length_delimited));
        put_varint(f.length);
        if (f.kind == new_field::payload_kind::bytes) plan_.emit(edits_.pool().subspan(f.offset, f.length));
        else if (f.conversion != onnx::float_conversion::none) plan_.convert(f.source, f.offset, f.length, f.conversion, f.check);
        else plan_.copy(f.source, f.offset, f.length, f.check);
    }

    const message_tree& tree_;
    const tree_edits& edits_;
    const sizing& sizes_;
    std::uint32_t source_;
    write_plan& plan_;
};

}  // namespace

std::uint64_t planned_size(const message_tree& tree, const tree_edits& edits) {
    // Nothing edited: the size is the file's, without the per-message tables (12 bytes a
    // message, for inspect of a model whose tensors are all embedded).
    if (edits.empty()) return tree.bytes().size();
    const auto sizes = compute_sizes(tree, edits);
    return sizes.dirty[0] ? sizes.size[0] : tree.bytes().size();
}

result<write_plan> plan_rewrite(const message_tree& tree, const tree_edits& edits, const plan_options& options) {
    const auto sizes = compute_sizes(tree, edits);
    const std::uint64_t total = sizes.dirty[0] ? sizes.size[0] : tree.bytes().size();
    if (total > options.max_size) {
        error e;
        e.code = error_code::too_large;
        e.message = "the output would be " + std::to_string(total) + " bytes, over protobuf's limit of " +
                    std::to_string(options.max_size) + " bytes (2 GB) for one .onnx file";
        e.hint = "keep the weights in external data: use {0} to tidy them instead of merging";
        e.remedies = {{remedy::keep_external_data, {}}};
        return failure(std::move(e));
    }
    write_plan plan;
    for (const auto& c : edits.checks()) (void)plan.add_check(c);
    if (!sizes.dirty[0]) {
        plan.copy(options.tree_source, 0, tree.bytes().size());
        return plan;
    }
    emitter(tree, edits, sizes, options.tree_source, plan).message(0);
    return plan;
}

}  // namespace onnxstream::plan
