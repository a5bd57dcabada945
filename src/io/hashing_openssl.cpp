// SHA-1 and SHA-256 from OpenSSL's EVP interface (Linux; hashing_win.cpp on Windows).
#include <onnxstream/io/hashing.hpp>

#include <openssl/evp.h>

#include <new>

namespace onnxstream::io {
namespace {

struct evp_state {
    EVP_MD_CTX* context = nullptr;
    explicit evp_state(const EVP_MD* algorithm) : context(EVP_MD_CTX_new()) {
        // Allocation failure inside OpenSSL is the one failure here that cannot be a
        // value: it means the process is out of memory.
        if (context == nullptr || EVP_DigestInit_ex(context, algorithm, nullptr) != 1) {
            EVP_MD_CTX_free(context);
            throw std::bad_alloc();
        }
    }
    evp_state(const evp_state&) = delete;
    evp_state& operator=(const evp_state&) = delete;
    ~evp_state() { EVP_MD_CTX_free(context); }

    void update(std::span<const std::byte> bytes) { EVP_DigestUpdate(context, bytes.data(), bytes.size()); }
    template <std::size_t N>
    std::array<std::uint8_t, N> finish() {
        std::array<std::uint8_t, N> digest{};
        unsigned int length = 0;
        EVP_DigestFinal_ex(context, digest.data(), &length);
        return digest;
    }
};

}  // namespace

struct sha1_hasher::state : evp_state {
    state() : evp_state(EVP_sha1()) {}
};

sha1_hasher::sha1_hasher() : state_(std::make_unique<state>()) {}
sha1_hasher::sha1_hasher(sha1_hasher&&) noexcept = default;
sha1_hasher& sha1_hasher::operator=(sha1_hasher&&) noexcept = default;
sha1_hasher::~sha1_hasher() = default;
void sha1_hasher::update(std::span<const std::byte> bytes) { state_->update(bytes); }
sha1_digest sha1_hasher::finish() { return state_->finish<20>(); }

struct sha256_hasher::state : evp_state {
    state() : evp_state(EVP_sha256()) {}
};

sha256_hasher::sha256_hasher() : state_(std::make_unique<state>()) {}
sha256_hasher::sha256_hasher(sha256_hasher&&) noexcept = default;
sha256_hasher& sha256_hasher::operator=(sha256_hasher&&) noexcept = default;
sha256_hasher::~sha256_hasher() = default;
void sha256_hasher::update(std::span<const std::byte> bytes) { state_->update(bytes); }
sha256_digest sha256_hasher::finish() { return state_->finish<32>(); }

}  // namespace onnxstream::io
