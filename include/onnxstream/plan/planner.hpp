// The planner: from a message tree and its edits, the exact bytes of the rewritten model
// as a write plan. It works in two passes: sizes bottom-up (every message's new size and
// so its length prefix is known before anything is laid out; no backpatching), then the
// operations top-down. It is pure: no I/O, no hashing.
//
// A message with no edit inside it is one copy of its original bytes. A message whose
// size did not change keeps its original header bytes, so a rewrite with no change (or
// with changes that cancel out) reproduces the input byte for byte, even if the input
// used non-minimal varints.
//
// A TensorProto body whose fields the tree dropped (message::fields_dropped) is read again
// when an edit touches it, once to size it and once to write it; its drops are addressed
// by position (tree_edits::drop(tree, message, position)), its insertions as any message's.
// A merged tensor's body (its only edits an inlined raw_data and the drops it replaces,
// whose bytes the insertion's value says: tree_edits::inlined_value) is sized without
// being read, and read once, to write it.
//
// A converted insertion (tree_edits::insert_converted) is sized from the field it reads and
// written from it: up to 4 KiB converted into the plan's bytes, a longer one as a convert
// operation of the writer.
#pragma once

#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tree_edits.hpp>
#include <onnxstream/plan/write_plan.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace onnxstream::plan {

/// protobuf refuses messages of 2 GiB and more (sizes are signed 32-bit).
inline constexpr std::uint64_t protobuf_limit = (1ULL << 31) - 1;

struct plan_options {
    std::uint32_t tree_source = 0;            // source index of the file the tree was parsed from
    std::uint64_t max_size = protobuf_limit;  // larger outputs fail with too_large
};

/// Called before the planner reads a body the tree dropped (message::fields_dropped)
/// again, with its offset: within each of its two passes (sizes, then operations) it reads
/// nothing before that offset again, so that a caller may release the mapped pages behind
/// it (io::release_behind, which starts over when the offset moves back).
using reading_function = std::function<void(std::uint64_t offset)>;

/// The rewritten model a window of operations at a time, for writers that take a plan in
/// windows (io::write_job::more): the sizes are computed first, the operations as they are
/// asked for, so memory does not grow with the number of edits. It reads the tree and the
/// edits it was made from, which must outlive it unchanged.
class rewrite_stream {
public:
    rewrite_stream(rewrite_stream&&) noexcept;
    rewrite_stream& operator=(rewrite_stream&&) noexcept;
    ~rewrite_stream();

    /// The size of the whole output.
    [[nodiscard]] std::uint64_t size() const noexcept;
    /// float16 values clamped to +-65504 by the conversions the stream made itself so far
    /// (converted insertions of up to 4 KiB, emitted as bytes); longer ones are convert
    /// operations, which the writer counts.
    [[nodiscard]] std::uint64_t saturated() const noexcept;
    /// Replaces `window`'s operations and bytes with the next ones (write_plan::next_window):
    /// it stops once it holds `operations` of them (a step of the walk, a field and the
    /// insertions before it, may add a few more) or 1 MiB of emitted bytes; false when none
    /// are left.
    [[nodiscard]] bool next(write_plan& window, std::size_t operations = 4096);

private:
    friend result<rewrite_stream> stream_rewrite(const onnx::message_tree&, const onnx::tree_edits&, const plan_options&,
                                                 reading_function);
    friend std::uint64_t planned_size(const onnx::message_tree&, const onnx::tree_edits&, reading_function);
    struct state;
    rewrite_stream();
    std::unique_ptr<state> state_;
};

/// The size the rewritten model will have. `reading`, when given, is told where the
/// planner reads the model's bytes (as stream_rewrite's, in one pass).
[[nodiscard]] std::uint64_t planned_size(const onnx::message_tree& tree, const onnx::tree_edits& edits,
                                         reading_function reading = {});

/// Plans the rewritten model (the values its own conversions saturated are not counted:
/// a writer of converted insertions takes the stream, which counts them). Errors: `too_large` when the output would exceed
/// `max_size` (nothing else is computed then). The plan's checks are the edits' checks,
/// at the same indices.
[[nodiscard]] result<write_plan> plan_rewrite(const onnx::message_tree& tree, const onnx::tree_edits& edits,
                                              const plan_options& options = {});

/// plan_rewrite as a stream (the same operations, the same errors); its checks are the
/// edits' checks. `reading`, when given, is told where the planner reads the model's bytes.
[[nodiscard]] result<rewrite_stream> stream_rewrite(const onnx::message_tree& tree, const onnx::tree_edits& edits,
                                                    const plan_options& options = {}, reading_function reading = {});

}  // namespace onnxstream::plan
