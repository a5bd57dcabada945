#include <onnxstream/plan/write_plan.hpp>

#include <algorithm>
#include <iterator>

namespace onnxstream::plan {

void write_plan::emit(std::span<const std::byte> bytes) {
    if (bytes.empty()) return;
    if (!operations_.empty()) {
        auto& last = operations_.back();
        if (last.kind == operation_kind::emit && last.output_offset + last.length == size_ &&
            last.input_offset + last.length == pool_.size()) {
            pool_.insert(pool_.end(), bytes.begin(), bytes.end());
            last.length += bytes.size();
            size_ += bytes.size();
            return;
        }
    }
    operations_.push_back({operation_kind::emit, 0, no_check, size_, bytes.size(), pool_.size()});
    pool_.insert(pool_.end(), bytes.begin(), bytes.end());
    size_ += bytes.size();
}

void write_plan::copy(std::uint32_t source, std::uint64_t offset, std::uint64_t length, std::uint32_t check_index) {
    if (length == 0 && check_index == no_check) return;
    if (!operations_.empty() && check_index == no_check) {
        auto& last = operations_.back();
        if (last.kind == operation_kind::copy && last.check == no_check && last.source == source &&
            last.input_offset + last.length == offset && last.output_offset + last.length == size_) {
            last.length += length;
            size_ += length;
            return;
        }
    }
    operations_.push_back({operation_kind::copy, source, check_index, size_, length, offset});
    size_ += length;
}

void write_plan::convert(std::uint32_t source, std::uint64_t offset, std::uint64_t length, onnx::float_conversion conversion,
                         std::uint32_t check_index) {
    if (length == 0 && check_index == no_check) return;
    operation op{operation_kind::convert, source, check_index, size_, length, offset};
    op.conversion = conversion;
    operations_.push_back(op);
    size_ += length;
}

void write_plan::add_label(std::uint64_t offset, std::string name, std::uint32_t message) {
    if (!labels_.empty() && labels_.back().offset == offset) {
        labels_.back().name = std::move(name);
        labels_.back().message = message;
    } else {
        labels_.push_back({offset, std::move(name), message});
    }
}

void write_plan::label(std::string name) { add_label(size_, std::move(name), no_message); }

void write_plan::label_message(std::uint32_t m) { add_label(size_, {}, m); }

std::string_view write_plan::text(const label_entry& entry) const {
    if (entry.message == no_message) return entry.name;
    return namer_ ? namer_(entry.message) : std::string_view();
}

std::string_view write_plan::label_at(std::uint64_t offset) const {
    const auto after = std::upper_bound(labels_.begin(), labels_.end(), offset,
                                        [](std::uint64_t o, const label_entry& entry) { return o < entry.offset; });
    return after == labels_.begin() ? std::string_view() : text(*std::prev(after));
}

void write_plan::align(std::uint64_t alignment) {
    if (alignment <= 1) return;
    const std::uint64_t remainder = size_ % alignment;
    if (remainder != 0) size_ += alignment - remainder;
}

void write_plan::next_window() {
    operations_.clear();
    pool_.clear();
    if (labels_.size() > 1) labels_.erase(labels_.begin(), labels_.end() - 1);
}

void write_plan::append(const write_plan& window) {
    for (const auto& entry : window.labels_) {
        // The first may be carried over from the window before, or renamed since.
        if (!labels_.empty() && labels_.back().offset > entry.offset) continue;
        add_label(entry.offset, std::string(window.text(entry)), no_message);
    }
    for (const auto& op : window.operations_) {
        if (op.output_offset > size_) skip(op.output_offset - size_);
        if (op.kind == operation_kind::emit) emit(window.emitted(op));
        else if (op.kind == operation_kind::copy) copy(op.source, op.input_offset, op.length, op.check);
        else convert(op.source, op.input_offset, op.length, op.conversion, op.check);
    }
    if (window.size_ > size_) skip(window.size_ - size_);
}

std::uint32_t write_plan::add_check(io::stream_check value) {
    checks_.push_back(std::move(value));
    return static_cast<std::uint32_t>(checks_.size() - 1);
}

std::uint64_t write_plan::copied_bytes() const noexcept {
    std::uint64_t total = 0;
    for (const auto& op : operations_)
        if (op.kind == operation_kind::copy) total += op.length;
    return total;
}

std::string write_plan::describe() const {
    std::string text;
    for (const auto& op : operations_) {
        text += op.kind == operation_kind::emit ? "emit @" : op.kind == operation_kind::copy ? "copy @" : "convert @";
        text += std::to_string(op.output_offset) + " +" + std::to_string(op.length);
        if (op.kind == operation_kind::convert) {
            text += " from " + std::to_string(op.source) + ":" + std::to_string(op.input_offset);
            text += op.conversion == onnx::float_conversion::float32_to_float16 ? " to float16" : " to bfloat16";
            if (op.check != no_check) text += " check " + std::to_string(op.check);
        }
        if (op.kind == operation_kind::copy) {
            text += " from " + std::to_string(op.source) + ":" + std::to_string(op.input_offset);
            if (op.check != no_check) text += " check " + std::to_string(op.check);
        }
        text += '\n';
    }
    text += "size " + std::to_string(size_) + '\n';
    return text;
}

}  // namespace onnxstream::plan
