#include <onnxstream/io/hashing.hpp>

#include "platform_digest.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>

namespace onnxstream::io {

using digest_detail::digest_algorithm;
using digest_detail::platform_digest;

struct sha1_hasher::state : platform_digest {
    state() : platform_digest(digest_algorithm::sha1) {}
};

sha1_hasher::sha1_hasher() : state_(std::make_unique<state>()) {}
sha1_hasher::sha1_hasher(sha1_hasher&&) noexcept = default;
sha1_hasher& sha1_hasher::operator=(sha1_hasher&&) noexcept = default;
sha1_hasher::~sha1_hasher() = default;
void sha1_hasher::update(std::span<const std::byte> bytes) { state_->update(bytes); }
sha1_digest sha1_hasher::finish() {
    sha1_digest digest{};
    state_->finish(digest);
    return digest;
}

struct sha256_hasher::state : platform_digest {
    state() : platform_digest(digest_algorithm::sha256) {}
};

sha256_hasher::sha256_hasher() : state_(std::make_unique<state>()) {}
sha256_hasher::sha256_hasher(sha256_hasher&&) noexcept = default;
sha256_hasher& sha256_hasher::operator=(sha256_hasher&&) noexcept = default;
sha256_hasher::~sha256_hasher() = default;
void sha256_hasher::update(std::span<const std::byte> bytes) { state_->update(bytes); }
sha256_digest sha256_hasher::finish() {
    sha256_digest digest{};
    state_->finish(digest);
    return digest;
}

struct xxh3_hasher::state {
    XXH3_state_t value;
};

xxh3_hasher::xxh3_hasher() : state_(std::make_unique<state>()) { XXH3_64bits_reset(&state_->value); }
xxh3_hasher::xxh3_hasher(xxh3_hasher&&) noexcept = default;
xxh3_hasher& xxh3_hasher::operator=(xxh3_hasher&&) noexcept = default;
xxh3_hasher::~xxh3_hasher() = default;

void xxh3_hasher::update(std::span<const std::byte> bytes) { XXH3_64bits_update(&state_->value, bytes.data(), bytes.size()); }
std::uint64_t xxh3_hasher::digest() const { return XXH3_64bits_digest(&state_->value); }

sha1_digest sha1_of(std::span<const std::byte> bytes) {
    sha1_hasher hasher;
    hasher.update(bytes);
    return hasher.finish();
}

std::uint64_t xxh3_of(std::span<const std::byte> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::uint64_t xxh3_of(const mapped_file& mapping, std::span<const std::byte> bytes) {
    constexpr std::size_t window = 1U << 20;
    if (bytes.size() <= window) return xxh3_of(bytes);
    const auto base = mapping.bytes();
    const auto begin = reinterpret_cast<std::uintptr_t>(base.data());
    const auto at = reinterpret_cast<std::uintptr_t>(bytes.data());
    const bool inside = !base.empty() && at >= begin && bytes.size() <= base.size() && at - begin <= base.size() - bytes.size();
    xxh3_hasher hasher;
    for (std::size_t done = 0; done < bytes.size(); done += window) {
        const auto piece = bytes.subspan(done, std::min(window, bytes.size() - done));
        hasher.update(piece);
        if (inside) mapping.release(at - begin + done, piece.size());
    }
    return hasher.digest();
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    text.reserve(bytes.size() * 2);
    for (const auto byte : bytes) {
        text.push_back(digits[byte >> 4]);
        text.push_back(digits[byte & 15]);
    }
    return text;
}

std::optional<sha1_digest> parse_sha1_hex(std::string_view text) {
    if (text.size() != 40) return std::nullopt;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    sha1_digest digest{};
    for (std::size_t i = 0; i < digest.size(); ++i) {
        const int high = nibble(text[2 * i]);
        const int low = nibble(text[2 * i + 1]);
        if (high < 0 || low < 0) return std::nullopt;
        digest[i] = static_cast<std::uint8_t>(high * 16 + low);
    }
    return digest;
}

}  // namespace onnxstream::io
