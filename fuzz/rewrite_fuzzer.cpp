// Fuzz target: message tree → planner → plan executed in memory → parsed again.
//
// For every input that parses as a model:
//   - the identity plan (no edits) reproduces the input byte for byte;
//   - with drops and insertions drawn from the input's hash, the plan is well formed
//     (operations in order, inside their sources), its size is `planned_size`, and the
//     output parses again into the same tree minus the dropped fields plus the inserted
//     ones, every untouched payload byte for byte.
// Inputs that do not parse must fail with an error, never a crash; the limits in
// tree_options are exercised with small values as well.
#include "fuzz_support.hpp"

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_info.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>
#include <onnxstream/onnx/tree_edits.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/plan/planner.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <vector>

namespace {

using namespace onnxstream;
using onnx::message_tree;
using onnx::no_index;
using onnx::tree_edits;

// Field numbers no ONNX message descends into, so an inserted field stays opaque.
constexpr std::uint32_t first_inserted_number = 4000;

struct inserted {
    std::uint32_t position = 0;
    onnx::new_field field;
};

// Compares message `m` of the original tree (with its edits) to message `n` of the output.
void compare(const message_tree& original, std::uint32_t m, const tree_edits& edits,
             const std::map<std::uint32_t, std::vector<inserted>>& insertions, const message_tree& output, std::uint32_t n) {
    ONNXSTREAM_REQUIRE(original.at(m).kind == output.at(n).kind);
    const auto before = original.fields(m);
    const auto after = output.fields(n);
    const auto found = insertions.find(m);
    const std::vector<inserted> none;
    const auto& added = found == insertions.end() ? none : found->second;
    std::size_t next_added = 0;
    std::size_t out = 0;
    auto expect_inserted_until = [&](std::uint32_t position) {
        while (next_added < added.size() && added[next_added].position <= position) {
            const auto& f = added[next_added++].field;
            ONNXSTREAM_REQUIRE(out < after.size());
            const auto& got = after[out++];
            ONNXSTREAM_REQUIRE(got.number() == f.number);
            if (f.kind == onnx::new_field::payload_kind::varint) {
                ONNXSTREAM_REQUIRE(got.type() == proto::wire_type::varint && output.value(got) == f.value);
            } else {
                ONNXSTREAM_REQUIRE(got.type() == proto::wire_type::length_delimited);
                const auto pool = edits.pool().subspan(f.offset, f.length);
                const auto payload = output.payload(got);
                ONNXSTREAM_REQUIRE(std::equal(pool.begin(), pool.end(), payload.begin(), payload.end()));
            }
        }
    };
    for (std::uint32_t i = 0; i < before.size(); ++i) {
        expect_inserted_until(i);
        const auto field_index = original.at(m).first_field + i;
        if (edits.dropped(field_index)) continue;
        ONNXSTREAM_REQUIRE(out < after.size());
        const auto& want = before[i];
        const auto& got = after[out++];
        ONNXSTREAM_REQUIRE(want.number() == got.number() && want.type() == got.type());
        ONNXSTREAM_REQUIRE((want.child == no_index) == (got.child == no_index));
        if (want.child != no_index) {
            compare(original, want.child, edits, insertions, output, got.child);
        } else {
            const auto a = original.payload(want);
            const auto b = output.payload(got);
            ONNXSTREAM_REQUIRE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
            ONNXSTREAM_REQUIRE(original.value(want) == output.value(got));
        }
    }
    expect_inserted_until(no_index);
    ONNXSTREAM_REQUIRE(out == after.size());
}

void identity(const message_tree& tree, std::span<const std::byte> bytes) {
    const tree_edits edits;
    ONNXSTREAM_REQUIRE(plan::planned_size(tree, edits) == bytes.size());
    auto planned = plan::plan_rewrite(tree, edits);
    ONNXSTREAM_REQUIRE(planned.has_value());
    const std::array<std::span<const std::byte>, 1> sources{bytes};
    const auto out = fuzz::execute_in_memory(*planned, sources);
    ONNXSTREAM_REQUIRE(std::equal(out.begin(), out.end(), bytes.begin(), bytes.end()));
}

void edited(const message_tree& tree, std::span<const std::byte> bytes, fuzz::choices& pick, bool insert) {
    tree_edits edits;
    const auto fields = tree.all_fields();
    for (std::uint32_t f = 0; f < fields.size(); ++f) {
        // Keep ir_version so that the output is still recognised as a model.
        if (fields[f].number() == onnx::number(onnx::model_field::ir_version) && tree.owner(f) == 0) continue;
        if (pick.one_in(4)) edits.drop(f);
    }
    std::map<std::uint32_t, std::vector<inserted>> insertions;
    if (insert) {
        for (std::uint32_t m = 0; m < tree.messages().size(); ++m) {
            if (!pick.one_in(3)) continue;
            const auto count = tree.at(m).field_count;
            const auto position = static_cast<std::uint32_t>(pick.next() % (count + 1U));
            const auto number = first_inserted_number + static_cast<std::uint32_t>(pick.next() % 16);
            onnx::new_field field;
            if (pick.one_in(2)) {
                field = edits.varint(number, pick.next() >> (pick.next() % 64));
            } else {
                const auto length = static_cast<std::size_t>(pick.next() % std::min<std::size_t>(bytes.size() + 1, 300));
                field = edits.bytes(number, bytes.first(length));
            }
            edits.insert(m, position, field);
            insertions[m].push_back({position, field});
        }
        // The planner keeps call order among insertions at one position: so does the check.
        for (auto& [m, list] : insertions)
            std::stable_sort(list.begin(), list.end(),
                             [](const inserted& a, const inserted& b) { return a.position < b.position; });
    }
    const auto size = plan::planned_size(tree, edits);
    auto planned = plan::plan_rewrite(tree, edits);
    ONNXSTREAM_REQUIRE(planned.has_value());
    ONNXSTREAM_REQUIRE(planned->size() == size);
    const std::array<std::span<const std::byte>, 1> sources{bytes};
    const auto out = fuzz::execute_in_memory(*planned, sources);
    onnx::tree_options generous;
    generous.max_fields = 1ULL << 24;
    generous.max_messages = 1ULL << 22;
    const auto reparsed = message_tree::parse(out, generous);
    if (!reparsed) {
        std::fprintf(stderr, "rewritten model does not parse: %s\n", reparsed.error().describe().c_str());
        ONNXSTREAM_FAIL("a rewritten model parses again");
    }
    compare(tree, 0, edits, insertions, *reparsed, 0);
}

// What later stages read from a parsed tree must not fail unexpectedly either.
void read_tensors(const message_tree& tree) {
    for (const auto& site : onnx::find_tensors(tree)) {
        const auto tensor = onnx::read_tensor(tree, site.message);
        if (!tensor) {
            ONNXSTREAM_REQUIRE(tensor.error().code == error_code::invalid_tensor);
            continue;
        }
        if (tensor->storage == onnx::tensor_storage::typed) (void)onnx::typed_to_raw(tree, *tensor);
        (void)onnx::value_name(tree, site);
    }
    (void)onnx::shape_like_values(tree);
    for (std::uint32_t m = 0; m < tree.messages().size(); m += 1 + m / 8) (void)tree.path(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto bytes = fuzz::as_bytes(data, size);

    onnx::tree_options tight;
    tight.max_depth = 6;
    tight.max_fields = 96;
    tight.max_messages = 24;
    if (const auto small = message_tree::parse(bytes, tight); !small) {
        const auto code = small.error().code;
        ONNXSTREAM_REQUIRE(code == error_code::malformed || code == error_code::not_onnx || code == error_code::limit_exceeded);
    } else {
        ONNXSTREAM_REQUIRE(small->messages().size() <= tight.max_messages);
        ONNXSTREAM_REQUIRE(small->all_fields().size() <= tight.max_fields);
    }

    const auto tree = message_tree::parse(bytes);
    if (!tree) {
        const auto code = tree.error().code;
        ONNXSTREAM_REQUIRE(code == error_code::malformed || code == error_code::not_onnx || code == error_code::limit_exceeded);
        return 0;
    }
    read_tensors(*tree);
    identity(*tree, bytes);
    fuzz::choices pick(bytes);
    edited(*tree, bytes, pick, false);
    edited(*tree, bytes, pick, true);
    return 0;
}
