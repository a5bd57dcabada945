// Fuzz target: external_data entries and where their locations lead.
//
// Input: one byte choosing a layout (a plain model folder, the Hugging Face cache layout,
// a --data-dir, a single --data), then the payload of one TensorProto. The tensor is
// wrapped in a minimal model, read (tensor_info), and its external data bound
// (data_resolver + external_data) in a scratch folder that holds regular files, a folder,
// a FIFO, an empty file, links that stay inside and links that leave. The same bytes are
// also used directly as a location and as a decimal number.
//
// Invariants: a file found through the model's own location (not --data / --data-dir)
// really lives inside the model's folder, a --data-dir or the repository's blobs/ (checked
// on the descriptor that was opened, not on the name); only regular files
// are opened; every usable tensor lies inside its file; parse_decimal agrees with a plain
// reference parser.
#include "fuzz_support.hpp"

#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/tensor_info.hpp>
#include <onnxstream/proto/varint.hpp>

#include <sys/stat.h>
#include <string_view>

namespace {

using namespace onnxstream;
namespace fs = std::filesystem;

struct layout {
    fs::path model;                 // the model's path (the file itself is never read)
    std::vector<fs::path> allowed;  // canonical folders a model-written location may reach
    onnx::resolve_options options;
};

void make_data(const fs::path& path, std::size_t size) {
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(i * 7 + 3);
    fs::create_directories(path.parent_path());
    fuzz::write_file(path, bytes);
}

const std::array<layout, 4>& layouts() {
    static const std::array<layout, 4> all = [] {
        const auto root = fuzz::scratch_folder() / "external";
        std::error_code ec;
        fs::create_directories(root, ec);
        const auto plain = root / "plain";
        make_data(plain / "weights.data", 4096);
        make_data(plain / "model.onnx.data", 4096);
        make_data(plain / "sub" / "w.bin", 100);
        make_data(plain / "empty.data", 0);
        fs::create_directories(plain / "dir.data");
        ::mkfifo((plain / "fifo.data").c_str(), 0600);
        fs::create_symlink("weights.data", plain / "inside.data", ec);
        make_data(root / "outside" / "secret.data", 64);
        fs::create_symlink("../outside/secret.data", plain / "escape.data", ec);
        fs::create_directory_symlink("../outside", plain / "linkdir", ec);

        const auto repo = root / "hf" / "repo";
        const auto snapshot = repo / "snapshots" / "rev";
        make_data(repo / "blobs" / "aaaa", 4096);
        fs::create_directories(snapshot);
        fs::create_symlink("../../blobs/aaaa", snapshot / "model.onnx.data", ec);
        fs::create_symlink("../../../../outside/secret.data", snapshot / "escape.data", ec);

        make_data(root / "datadir" / "weights.data", 2048);
        make_data(root / "given" / "given.data", 1024);

        const auto canonical = [](const fs::path& p) { return fs::weakly_canonical(p); };
        std::array<layout, 4> result;
        result[0] = {plain / "model.onnx", {canonical(plain)}, {}};
        result[1] = {snapshot / "model.onnx", {canonical(snapshot), canonical(repo / "blobs")}, {}};
        result[2] = {plain / "model.onnx", {canonical(plain), canonical(root / "datadir")}, {{}, {root / "datadir"}}};
        result[3] = {plain / "model.onnx", {canonical(plain)}, {{root / "given" / "given.data"}, {}}};
        return result;
    }();
    return all;
}

bool inside(const fs::path& path, const fs::path& root) {
    const auto rel = path.lexically_relative(root);
    return !rel.empty() && *rel.begin() != "..";
}

void check_found(const layout& l, const onnx::resolved_location& found, const io::source_file& file) {
    const auto step = found.how.step;
    if (step == onnx::found_by::data_flag || step == onnx::found_by::data_dir || step == onnx::found_by::data_dir_file_name)
        return;  // paths the user gave are trusted
    std::error_code ec;
    const auto real = fs::read_symlink("/proc/self/fd/" + std::to_string(file.descriptor()), ec);
    ONNXSTREAM_REQUIRE(!ec);
    bool ok = false;
    for (const auto& root : l.allowed) ok = ok || inside(real, root);
    if (!ok) std::fprintf(stderr, "%s resolves to %s\n", found.path.c_str(), real.c_str());
    ONNXSTREAM_REQUIRE(ok);
}

std::vector<std::byte> wrap_in_model(std::span<const std::byte> tensor) {
    std::vector<std::byte> out;
    auto put = [&](std::uint64_t v) {
        const auto e = proto::encode_varint(v);
        out.insert(out.end(), e.view().begin(), e.view().end());
    };
    using proto::wire_type;
    put(proto::make_tag(onnx::number(onnx::model_field::ir_version), wire_type::varint));
    put(8);
    const auto initializer_header = proto::tag_size(onnx::number(onnx::graph_field::initializer)) +
                                    proto::varint_size(tensor.size());
    put(proto::make_tag(onnx::number(onnx::model_field::graph), wire_type::length_delimited));
    put(initializer_header + tensor.size());
    put(proto::make_tag(onnx::number(onnx::graph_field::initializer), wire_type::length_delimited));
    put(tensor.size());
    out.insert(out.end(), tensor.begin(), tensor.end());
    return out;
}

// Digits only, at most 20 of them (the longest 64-bit number), and the value fits.
std::optional<std::uint64_t> reference_decimal(std::string_view text) {
    if (text.empty() || text.size() > 20) return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        if (__builtin_mul_overflow(value, 10U, &value) || __builtin_add_overflow(value, static_cast<unsigned>(c - '0'), &value))
            return std::nullopt;
    }
    return value;
}

void bind_model(const layout& l, std::span<const std::byte> tensor_payload) {
    const auto bytes = wrap_in_model(tensor_payload);
    auto parsed = onnx::message_tree::parse(bytes);
    if (!parsed) return;
    onnx::model_file model;
    model.path = l.model;
    model.tree = std::move(parsed).value();
    model.sites = onnx::find_tensors(model.tree);
    for (const auto& site : model.sites) {
        auto tensor = onnx::read_tensor(model.tree, site.message);
        if (!tensor) {
            ONNXSTREAM_REQUIRE(tensor.error().code == error_code::invalid_tensor);
            return;
        }
        if (tensor->external) {
            const auto& ref = *tensor->external;
            ONNXSTREAM_REQUIRE(tensor->storage != onnx::tensor_storage::external || !ref.location.empty());
            ONNXSTREAM_REQUIRE(ref.location.find('\0') == std::string_view::npos);
        }
        model.tensors.push_back(std::move(tensor).value());
    }
    onnx::data_resolver resolver(l.model, l.options);
    const auto data = onnx::external_data::bind(model, resolver);
    for (const auto& file : data.files) {
        if (file.found) {
            ONNXSTREAM_REQUIRE(file.file.has_value());
            check_found(l, *file.found, *file.file);
        }
        if (file.file) {
            struct stat info {};
            ONNXSTREAM_REQUIRE(::fstat(file.file->descriptor(), &info) == 0 && S_ISREG(info.st_mode));
            ONNXSTREAM_REQUIRE(file.size == static_cast<std::uint64_t>(info.st_size));
        }
    }
    for (const auto& binding : data.tensors) {
        ONNXSTREAM_REQUIRE(data.files.contains(binding.file) && model.tensors.contains(binding.site));
        if (!binding.usable) continue;
        const auto& file = data.files[binding.file];
        ONNXSTREAM_REQUIRE(file.file.has_value());
        ONNXSTREAM_REQUIRE(binding.length <= file.size && binding.offset <= file.size - binding.length);
    }
    for (const auto& problem : data.problems) ONNXSTREAM_REQUIRE(!problem.what.message.empty());
    (void)data.blocking_problem(true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const auto& l = layouts()[data[0] % 4];
    const auto rest = fuzz::as_bytes(data + 1, size - 1);

    // The bytes as text: a location and a decimal number.
    const std::string_view text(reinterpret_cast<const char*>(data + 1), std::min<std::size_t>(size - 1, 512));
    ONNXSTREAM_REQUIRE(onnx::parse_decimal(text) == reference_decimal(text));
    const auto checked = onnx::data_resolver::check_location_text(text);
    if (checked) {
        ONNXSTREAM_REQUIRE(text.find('\0') == std::string_view::npos && !text.empty() && text.front() != '/');
        onnx::data_resolver resolver(l.model, l.options);
        const auto found = resolver.resolve(text);
        if (found) check_found(l, found->where, found->file);
        else
            ONNXSTREAM_REQUIRE(found.error().code == error_code::missing_data ||
                               found.error().code == error_code::unsafe_location ||
                               found.error().code == error_code::invalid_tensor ||  // names a folder
                               found.error().code == error_code::io);               // a FIFO, a name too long
    } else {
        ONNXSTREAM_REQUIRE(checked.error().code == error_code::unsafe_location ||
                           checked.error().code == error_code::invalid_tensor);
    }

    bind_model(l, rest);
    return 0;
}
