// SHA-1 and SHA-256 from Windows' BCrypt (OpenSSL is not part of a bare Windows).
#include <onnxstream/io/hashing.hpp>

#include <windows.h>
// after windows.h, which it needs
#include <bcrypt.h>

#include <new>

namespace onnxstream::io {
// Named, not anonymous: the hashers' states derive from it (-Wsubobject-linkage).
namespace win {

// BCryptHashData takes a ULONG length: large spans go in pieces.
constexpr std::size_t max_piece = 1U << 30;

struct bcrypt_state {
    BCRYPT_ALG_HANDLE algorithm = nullptr;
    BCRYPT_HASH_HANDLE hash = nullptr;
    explicit bcrypt_state(const wchar_t* name) {
        // The algorithm provider and the hash object are allocated by the system; failing
        // that means the process is out of memory (SHA-1 and SHA-256 are always there).
        if (!BCRYPT_SUCCESS(::BCryptOpenAlgorithmProvider(&algorithm, name, nullptr, 0)) ||
            !BCRYPT_SUCCESS(::BCryptCreateHash(algorithm, &hash, nullptr, 0, nullptr, 0, 0))) {
            close();
            throw std::bad_alloc();
        }
    }
    bcrypt_state(const bcrypt_state&) = delete;
    bcrypt_state& operator=(const bcrypt_state&) = delete;
    ~bcrypt_state() { close(); }

    void close() noexcept {
        if (hash != nullptr) ::BCryptDestroyHash(hash);
        if (algorithm != nullptr) ::BCryptCloseAlgorithmProvider(algorithm, 0);
        hash = nullptr;
        algorithm = nullptr;
    }
    void update(std::span<const std::byte> bytes) {
        while (!bytes.empty()) {
            const auto piece = bytes.first(std::min(bytes.size(), max_piece));
            // BCryptHashData does not write through its input pointer.
            ::BCryptHashData(hash, reinterpret_cast<PUCHAR>(const_cast<std::byte*>(piece.data())),
                             static_cast<ULONG>(piece.size()), 0);
            bytes = bytes.subspan(piece.size());
        }
    }
    template <std::size_t N>
    std::array<std::uint8_t, N> finish() {
        std::array<std::uint8_t, N> digest{};
        ::BCryptFinishHash(hash, digest.data(), static_cast<ULONG>(digest.size()), 0);
        return digest;
    }
};

}  // namespace win

struct sha1_hasher::state : win::bcrypt_state {
    state() : bcrypt_state(BCRYPT_SHA1_ALGORITHM) {}
};

sha1_hasher::sha1_hasher() : state_(std::make_unique<state>()) {}
sha1_hasher::sha1_hasher(sha1_hasher&&) noexcept = default;
sha1_hasher& sha1_hasher::operator=(sha1_hasher&&) noexcept = default;
sha1_hasher::~sha1_hasher() = default;
void sha1_hasher::update(std::span<const std::byte> bytes) { state_->update(bytes); }
sha1_digest sha1_hasher::finish() { return state_->finish<20>(); }

struct sha256_hasher::state : win::bcrypt_state {
    state() : bcrypt_state(BCRYPT_SHA256_ALGORITHM) {}
};

sha256_hasher::sha256_hasher() : state_(std::make_unique<state>()) {}
sha256_hasher::sha256_hasher(sha256_hasher&&) noexcept = default;
sha256_hasher& sha256_hasher::operator=(sha256_hasher&&) noexcept = default;
sha256_hasher::~sha256_hasher() = default;
void sha256_hasher::update(std::span<const std::byte> bytes) { state_->update(bytes); }
sha256_digest sha256_hasher::finish() { return state_->finish<32>(); }

}  // namespace onnxstream::io
