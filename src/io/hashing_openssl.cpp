// SHA-1 and SHA-256 from OpenSSL's EVP interface (Linux; hashing_win.cpp on Windows).
#include "platform_digest.hpp"

#include <openssl/evp.h>

#include <new>

namespace onnxstream::io::digest_detail {

namespace {

EVP_MD_CTX* evp_context(void* context) { return static_cast<EVP_MD_CTX*>(context); }

}  // namespace

platform_digest::platform_digest(digest_algorithm algorithm) : context_(EVP_MD_CTX_new()) {
    // Allocation failure inside OpenSSL is the one failure here that cannot be a value:
    // it means the process is out of memory.
    const EVP_MD* md = algorithm == digest_algorithm::sha1 ? EVP_sha1() : EVP_sha256();
    if (context_ == nullptr || EVP_DigestInit_ex(evp_context(context_), md, nullptr) != 1) {
        EVP_MD_CTX_free(evp_context(context_));
        throw std::bad_alloc();
    }
}

platform_digest::~platform_digest() { EVP_MD_CTX_free(evp_context(context_)); }

void platform_digest::update(std::span<const std::byte> bytes) {
    EVP_DigestUpdate(evp_context(context_), bytes.data(), bytes.size());
}

void platform_digest::finish(std::span<std::uint8_t> digest) {
    unsigned int length = 0;
    EVP_DigestFinal_ex(evp_context(context_), digest.data(), &length);
}

}  // namespace onnxstream::io::digest_detail
