#include <onnxstream/onnx/external_data.hpp>

#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>

namespace onnxstream::onnx {
namespace {

std::string human(std::uint64_t bytes) {
    char text[64];
    if (bytes >= (1ULL << 30)) std::snprintf(text, sizeof text, " (%.2f GiB)", static_cast<double>(bytes) / (1ULL << 30));
    else if (bytes >= (1ULL << 20)) std::snprintf(text, sizeof text, " (%.1f MiB)", static_cast<double>(bytes) / (1ULL << 20));
    else return {};
    return text;
}

// The end of a tensor's bytes: its length as written, else what its dims need, else
// the offset alone (it runs to the end of the file). Saturates instead of wrapping.
std::uint64_t end_of(const tensor_info& tensor) {
    const auto& ref = *tensor.external;
    const auto offset = ref.offset.value_or(0);
    const auto length = ref.length ? *ref.length : tensor.expected_bytes.value_or(0);
    return length > std::numeric_limits<std::uint64_t>::max() - offset ? std::numeric_limits<std::uint64_t>::max()
                                                                       : offset + length;
}

// Only ever a guess (how_found::guess): its words name nothing a front end must word.
error guess_warning(const data_file& file) {
    const auto& where = *file.found;
    return with_remedies(
        {error_code::missing_data, "external data '" + file.location + "' does not resolve as written (no file " +
                                       where.as_written.string() + "); ONNX Runtime will not find it. onnxstream guessed " +
                                       where.path.string() + " (" + guess_words(where.how) + ")"},
        "rename the file to " + quoted_in_hint(where.as_written.string()) +
            ", pass it with {0}, or run {1} to embed the weights; {2} refuses guesses",
        {{remedy::give_data_file, where.path.string()}, {remedy::embed_weights, {}}, {remedy::refuse_guesses, {}}});
}

}  // namespace

namespace {

// The files the tensors name, in the order first named, and what each one's tensors need.
struct file_table {
    // One lookup per tensor, not a scan of the files: a hostile model may name a
    // different file for each of a million tensors.
    std::unordered_map<std::string, data_file_id> file_of;  // location -> its file
    indexed_vector<data_file_id, site_id> first_tensor;
    indexed_vector<data_file_id, data_needs> needs;
    // The last location looked up (most models name one file for every tensor): no
    // string or hash per tensor then.
    std::string last_location;
    data_file_id last_file = none;

    // The file of `location`, added to `data` (tensor `t` the first to name it) when new.
    [[nodiscard]] data_file_id find_or_add(std::string_view location, site_id t, external_data& data) {
        if (last_file != none && location == last_location) return last_file;
        const auto [known, added] = file_of.try_emplace(std::string(location), data.files.next_id());
        if (added) {
            data_file file;
            file.location = std::string(location);
            data.files.push_back(std::move(file));
            first_tensor.push_back(t);
            needs.push_back({});
        }
        last_file = known->second;
        last_location = location;
        return last_file;
    }
};

// What bind_tensor needs of a tensor besides its binding, known from the one read of it
// that gather_files makes: a tensor is read again only to word a problem about it (or
// when no length is written, to weigh its dims against the rest of the file).
enum class length_written : std::uint8_t {
    absent,    // the binding's length is to be found: to the end of the file
    fits,      // the binding's length is the tensor's, and its dims and type agree
    mismatch,  // the binding's length is the tensor's, and its dims and type need another
};

// One external tensor's binding, unchecked (its file, offset and written length), and
// what the file it names needs of it.
void gather(site_id t, const tensor_info& tensor, std::span<const field_entry> fields, file_table& table, external_data& data,
            large_vector<length_written>& lengths) {
    // Open read it as external; it reads otherwise only if the file changed since (a
    // released page read back), which every command checks before it reports.
    if (!tensor.external) return;
    const auto& ref = *tensor.external;
    const auto f = table.find_or_add(ref.location, t, data);
    auto& need = table.needs[f];
    const auto end = end_of(tensor);
    need.bytes = std::max(need.bytes, end);
    data.files[f].bytes_needed = std::max(data.files[f].bytes_needed, end);
    // A checksum that is not a SHA-1 cannot tell a guess apart: it is reported later.
    if (const auto digest = expected_sha1(tensor); digest && *digest)
        need.checksums.push_back({ref.offset.value_or(0), ref.length ? ref.length : tensor.expected_bytes, **digest});
    external_tensor binding;
    binding.site = t;
    binding.file = f;
    binding.offset = ref.offset.value_or(0);
    binding.length = ref.length.value_or(0);
    binding.has_checksum = ref.checksum.has_value();
    // Where its value fields are and what they take (what inline_external drops), from
    // this read of its body.
    bool known = !fields.empty();
    std::uint64_t value_bytes = 0;
    for (std::uint32_t i = 0; i < fields.size() && known; ++i) {
        if (!holds_tensor_value(fields[i].number())) continue;
        binding.value_positions |= i < 32 ? 1U << i : 0U;
        value_bytes += fields[i].total_length();
        known = i < 32 && value_bytes <= std::numeric_limits<std::uint16_t>::max();
    }
    if (known && binding.value_positions != 0) {
        binding.positions_known = true;
        binding.value_bytes = static_cast<std::uint16_t>(value_bytes);
        // Last: the positions are one run ending at the body's last field.
        const auto last = static_cast<unsigned>(std::bit_width(binding.value_positions));
        const auto run = binding.value_positions >> std::countr_zero(binding.value_positions);
        binding.values_last = last == fields.size() && (run & (run + 1U)) == 0;
    } else {
        binding.value_positions = 0;
    }
    data.tensors.push_back(binding);
    if (!ref.length) lengths.push_back(length_written::absent);
    else if (tensor.expected_bytes && *tensor.expected_bytes != *ref.length) lengths.push_back(length_written::mismatch);
    else lengths.push_back(length_written::fits);
}

void open_files(data_resolver& resolver, file_table& table, external_data& data) {
    for (const auto f : data.files.ids()) {
        auto& file = data.files[f];
        auto found = resolver.resolve(file.location, table.needs[f]);
        table.needs[f] = {};
        if (!found) {
            data.problems.push_back({table.first_tensor[f], f, std::move(found).error()});
            continue;
        }
        file.found = std::move(found->where);
        file.size = found->file.size();
        file.file = std::move(found->file);
        if (file.found->guess()) data.guesses.push_back({table.first_tensor[f], f, guess_warning(file)});
        file.bytes_needed = 0;  // measured again by bind_tensor, from the bytes that exist
    }
}

error tensor_problem(const model_file& model, const tensor_info& tensor, error_code code, std::string what, std::string hint) {
    error e{code, std::move(what), std::move(hint)};
    e.field_path = model.tree.path(tensor.message);
    return e;
}

std::string tensor_name(const tensor_info& tensor) { return "tensor '" + std::string(tensor.name) + "'"; }

// Checks `binding` (as gathered, its file open) against its file's size: in bounds, and
// as long as its dims and type need.
void bind_tensor(const model_file& model, external_tensor& binding, length_written length, external_data& data) {
    const auto t = binding.site;
    auto& file = data.files[binding.file];
    constexpr const char* incomplete = "the download is probably incomplete: fetch the data file again";
    if (binding.offset > file.size) {
        binding.length = 0;
        const auto handle = model.tensor(t);
        data.problems.push_back({t, binding.file,
                                 tensor_problem(model, *handle, error_code::truncated_data,
                                                file.found->path.string() + " is " + std::to_string(file.size) + " bytes but " +
                                                    tensor_name(*handle) + " starts at byte " + std::to_string(binding.offset),
                                                incomplete)});
        return;
    }
    if (length == length_written::absent) {
        binding.length = file.size - binding.offset;
        const auto handle = model.tensor(t);
        const auto expected = handle->expected_bytes;
        length = expected && *expected != binding.length ? length_written::mismatch : length_written::fits;
    }
    if (binding.length > file.size - binding.offset) {
        const std::uint64_t end = binding.offset +
                                  std::min(binding.length, std::numeric_limits<std::uint64_t>::max() - binding.offset);
        const auto handle = model.tensor(t);
        data.problems.push_back({t, binding.file,
                                 tensor_problem(model, *handle, error_code::truncated_data,
                                                file.found->path.string() + " is " + std::to_string(file.size) + " bytes" +
                                                    human(file.size) + " but " + tensor_name(*handle) + " needs bytes " +
                                                    std::to_string(binding.offset) + " to " + std::to_string(end) + human(end),
                                                incomplete)});
        file.bytes_needed = std::max(file.bytes_needed, end);
        return;
    }
    file.bytes_needed = std::max(file.bytes_needed, binding.offset + binding.length);
    file.bytes_referenced += binding.length;
    binding.usable = true;
    binding.length_fits = length == length_written::fits;
    if (length == length_written::mismatch) {
        const auto handle = model.tensor(t);
        const auto& tensor = *handle;
        auto e = tensor_problem(model, tensor, error_code::size_mismatch,
                                tensor_name(tensor) + " has " + std::to_string(binding.length) + " bytes in " + file.location +
                                    " but its dims and type (" + data_type_name(tensor.data_type) + ") need " +
                                    std::to_string(tensor.expected_bytes.value_or(0)),
                                "the model or its data file is damaged; {0} copies the bytes anyway");
        e.remedies = {{remedy::accept_size_mismatch, {}}};
        data.problems.push_back({t, binding.file, std::move(e)});
    }
}

}  // namespace

struct external_gathering::state {
    external_data data;
    file_table table;
    large_vector<length_written> lengths;
};

external_gathering::external_gathering() : state_(std::make_unique<state>()) {}
external_gathering::external_gathering(external_gathering&&) noexcept = default;
external_gathering& external_gathering::operator=(external_gathering&&) noexcept = default;
external_gathering::~external_gathering() = default;

void external_gathering::reserve(std::size_t tensors) {
    state_->data.tensors.reserve(tensors);
    state_->lengths.reserve(tensors);
}

void external_gathering::add(site_id site, const tensor_info& tensor, std::span<const field_entry> fields) {
    gather(site, tensor, fields, state_->table, state_->data, state_->lengths);
}

external_data external_data::bind(const model_file& model, data_resolver& resolver) {
    external_gathering gathered;
    gathered.reserve(model.external_sites.size());
    tensor_pass pass(model);  // a million external tensors' bodies would keep the whole file mapped
    for (const auto t : model.external_sites) {
        const auto handle = pass.read(t);
        gathered.add(t, *handle, handle.fields());
    }
    return bind(model, resolver, std::move(gathered));
}

external_data external_data::bind(const model_file& model, data_resolver& resolver, external_gathering&& gathered) {
    auto& state = *gathered.state_;
    auto& data = state.data;
    auto& table = state.table;
    const auto& lengths = state.lengths;
    open_files(resolver, table, data);
    for (const auto b : data.tensors.ids()) {
        auto& binding = data.tensors[b];
        auto& file = data.files[binding.file];
        ++file.tensor_count;
        if (file.file) bind_tensor(model, binding, lengths[b.value], data);
        else binding.length = 0;  // nothing to measure it against
    }
    return std::move(data);
}

const data_problem* external_data::blocking_problem(bool allow_size_mismatch) const {
    for (const auto& p : problems)
        if (!(allow_size_mismatch && p.what.code == error_code::size_mismatch)) return &p;
    return nullptr;
}

result<void> external_data::check_unchanged() const {
    for (const auto& f : files)
        if (f.file) ONNXSTREAM_TRY(f.file->check_unchanged());
    return {};
}

std::uint64_t inlined_size(const model_file& model, const external_data& data) {
    const auto& tree = model.tree;
    // How much each message's payload grows (modulo 2^64: it may shrink), by message,
    // children first: a child's index is greater than its parent's.
    std::map<std::uint32_t, std::uint64_t, std::greater<>> growth;
    // Message `m` now `payload` bytes long: its parent grows by what its field does. The
    // header stays as written when the size does not change, as the planner keeps it.
    const auto resize = [&](std::uint32_t m, std::uint64_t payload) {
        const auto& f = tree.field(tree.at(m).parent_field);
        const auto header = payload == f.payload_length() ? f.header_length()
                                                          : proto::tag_size(f.number()) + proto::varint_size(payload);
        growth[tree.at(m).parent] += header + payload - f.total_length();
    };
    // What inline_external drops of a tensor: its value fields, as its binding keeps them,
    // or as a read of its body finds them.
    tensor_pass pass(model);
    const auto value_fields_of = [&](const external_tensor& binding) {
        if (binding.positions_known) return std::uint64_t{binding.value_bytes};
        const auto handle = pass.read(binding.site);
        const auto& body = handle.tree();
        // The tensor's fields: in the model's tree, or in its body read again (message 0).
        const auto own = &body == &tree ? handle->message : 0U;
        std::uint64_t bytes = 0;
        for (const auto& f : body.fields(own))
            if (holds_tensor_value(f.number())) bytes += f.total_length();
        return bytes;
    };
    for (const auto& binding : data.tensors) {
        if (!binding.usable) continue;
        const auto m = model.sites[binding.site].message;
        const auto value_fields = value_fields_of(binding);
        const auto raw_data = proto::length_delimited_field_size(number(tensor_field::raw_data), binding.length);
        resize(m, tree.payload_range(m).length - value_fields + raw_data);
    }
    if (growth.empty()) return tree.bytes().size();
    while (growth.begin()->first != 0) {
        const auto [m, grown] = *growth.begin();
        growth.erase(growth.begin());
        resize(m, tree.payload_range(m).length + grown);
    }
    return tree.bytes().size() + growth.begin()->second;
}

result<std::optional<io::sha1_digest>> expected_sha1(const tensor_info& tensor) {
    if (tensor.storage != tensor_storage::external || !tensor.external->checksum) return std::optional<io::sha1_digest>{};
    const auto text = *tensor.external->checksum;
    if (const auto digest = io::parse_sha1_hex(text)) return std::optional<io::sha1_digest>{*digest};
    return failure(error_code::checksum_mismatch,
                   "tensor '" + std::string(tensor.name) + "' has a checksum that is not a SHA-1 ('" +
                       std::string(text.substr(0, 48)) + "'); its bytes cannot be checked",
                   "the ONNX spec says `checksum` holds 40 hexadecimal digits of SHA-1");
}

std::optional<io::sha1_digest> expected_sha1(const tensor_info& tensor, std::vector<error>& warnings) {
    auto expected = expected_sha1(tensor);
    if (expected) return *expected;
    warnings.push_back(std::move(expected).error());
    return std::nullopt;
}

error checksum_mismatch(std::string_view tensor_name, const io::sha1_digest& expected, const io::sha1_digest& found, bool fatal,
                        std::string_view where) {
    error e{error_code::checksum_mismatch,
            "the bytes of tensor '" + std::string(tensor_name) + "' " + (where.empty() ? "" : std::string(where) + " ") +
                "do not match its SHA-1 checksum (expected " + io::to_hex(expected) + ", found " + io::to_hex(found) + ")",
            fatal ? "the data file is damaged or belongs to another model; fetch it again"
                  : "the data file may be damaged; {0} makes this an error"};
    if (!fatal) e.remedies = {{remedy::refuse_guesses, {}}};
    return e;
}

std::vector<std::byte> encode_string_entry(std::string_view key, std::string_view value) {
    std::vector<std::byte> out;
    auto put_varint = [&out](std::uint64_t v) {
        const auto encoded = proto::encode_varint(v);
        out.insert(out.end(), encoded.view().begin(), encoded.view().end());
    };
    for (const auto& [field, text] : {std::pair{string_entry_field::key, key}, std::pair{string_entry_field::value, value}}) {
        put_varint(proto::make_tag(number(field), proto::wire_type::length_delimited));
        put_varint(text.size());
        const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
        out.insert(out.end(), bytes.begin(), bytes.end());
    }
    return out;
}

}  // namespace onnxstream::onnx
