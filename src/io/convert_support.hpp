// The convert operation, shared by the writers (private to src/io): read a float32 slice
// of the source through a fixed buffer, convert it to 16-bit values, write those. Memory is
// two buffers whatever the slice's size. It runs synchronously: conversion is CPU work on
// bytes that must pass through user space anyway, so the io_uring writer gains nothing by
// queueing it and runs it inline between its other requests. A small one without a check
// is converted into a buffer the writer stages with its neighbours, as it stages a small
// copy: a model of many tiny tensors then costs no read and write each.
#pragma once

#include "writer_support.hpp"

#include <onnxstream/onnx/float_conversion.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

namespace onnxstream::io::detail {

// A small convert operation's float32 input is read in one piece.
static_assert(read_ahead_window::window_bytes >= 2 * small_copy);

/// The source of a convert operation, once the operation is checked (a conversion, an even
/// length, its float32 input inside the source) and its check claimed. Errors: as
/// copy_source and claim_check.
[[nodiscard]] inline result<const source_file*> convert_source(const write_job& job, std::span<const std::uint64_t> sizes,
                                                               const write_operation& op, std::vector<bool>& checks_seen) {
    if (op.conversion == onnx::float_conversion::none || op.length % 2 != 0)
        return failure(error_code::io, "a convert operation names no conversion or an odd length");
    if (op.source >= job.sources.size() || job.sources[op.source] == nullptr)
        return failure(error_code::io, "a convert operation names an unknown source");
    const source_file& source = *job.sources[op.source];
    const std::uint64_t input_length = op.length * 2;
    const std::uint64_t size = sizes[op.source];
    if (input_length > size || op.input_offset > size - input_length) return source_shrank(source, size);
    ONNXSTREAM_TRY(claim_check(job, op, checks_seen));
    return &source;
}

class slice_converter {
public:
    /// `buffer_size`: bytes of float32 read at a time (rounded down to whole values).
    explicit slice_converter(std::size_t buffer_size)
        : input_(std::max<std::size_t>(buffer_size / 4 * 4, 4096)),
          output_(std::max<std::size_t>(input_.size() / 2, small_copy)) {}

    /// Whether `op` (a convert operation) is converted by convert_small and staged: no
    /// check to hash its input for, and at most `small_copy` bytes of output.
    [[nodiscard]] static bool small(const write_operation& op) noexcept {
        return op.check == no_check && op.length <= small_copy;
    }

    /// Converts a small operation (small(op)): its float32 input is read through the
    /// source's mapping (then released behind, as a small copy's) or `reads`; saturated
    /// values are added to `report`. Returns its op.length bytes of output, valid until the
    /// next call, for the writer to stage. Errors: convert_source's, read_at's.
    [[nodiscard]] result<std::span<const std::byte>> convert_small(const write_job& job, std::span<const std::uint64_t> sizes,
                                                                   const write_operation& op, read_ahead_window& reads,
                                                                   mapped_release& released, write_report& report,
                                                                   std::vector<bool>& checks_seen) {
        ONNXSTREAM_ASSIGN(const source_file* source, convert_source(job, sizes, op, checks_seen));
        const auto input_length = static_cast<std::size_t>(op.length * 2);
        std::span<const std::byte> in;
        if (!source->bytes().empty()) {
            in = source->bytes().subspan(static_cast<std::size_t>(op.input_offset), input_length);
        } else {
            ONNXSTREAM_ASSIGN(in, reads.read(*source, op.source, op.input_offset, input_length));
        }
        const auto out = std::span(output_).first(static_cast<std::size_t>(op.length));
        report.saturated += onnx::convert_float32_bytes(op.conversion, in, out);
        if (!source->bytes().empty()) released.copied(*source, op.source, op.input_offset, input_length);
        return std::span<const std::byte>(out);
    }

    /// Executes one convert operation: saturated values are added to `report`, and a
    /// check on the operation hashes the float32 input (its `checksum` is of those bytes)
    /// into report.checks. `progress` sees the bytes written. Errors: as copy_source,
    /// claim_check and write_all, `interrupted`.
    [[nodiscard]] result<void> run(const write_job& job, std::span<const std::uint64_t> sizes, const write_operation& op,
                                   const writer_options& options, const std::function<void(std::uint64_t)>& progress,
                                   write_report& report, std::vector<bool>& checks_seen) {
        ONNXSTREAM_ASSIGN(const source_file* found, convert_source(job, sizes, op, checks_seen));
        const source_file& source = *found;
        const std::uint64_t input_length = op.length * 2;
        std::optional<check_hashes> hashes;
        if (op.check != no_check) hashes.emplace(job.checks[op.check]);
        std::uint64_t saturated = 0;
        std::uint64_t done = 0;  // input bytes
        while (done < input_length) {
            if (cancelled(options)) return interrupted();
            const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(input_length - done, input_.size()));
            const auto in = std::span(input_).first(piece);
            ONNXSTREAM_TRY(source.read_at(op.input_offset + done, in));
            if (hashes) hashes->update(in);
            const auto out = std::span(output_).first(piece / 2);
            saturated += onnx::convert_float32_bytes(op.conversion, in, out);
            ONNXSTREAM_TRY(write_all(job.output_descriptor, out, op.output_offset + done / 2));
            progress(out.size());
            done += piece;
        }
        report.saturated += saturated;
        if (hashes) report.checks[op.check] = hashes->finish(job.checks[op.check]);
        return {};
    }

private:
    std::vector<std::byte> input_;
    std::vector<std::byte> output_;
};

}  // namespace onnxstream::io::detail
