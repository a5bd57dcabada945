// A `main` for fuzz targets built without libFuzzer: runs LLVMFuzzerTestOneInput once on
// every file named on the command line and on every file under every folder named
// (recursively, in name order), so ctest can replay a corpus with any compiler. Arguments
// that start with '-' are libFuzzer flags and are ignored, so one command line serves both
// builds. Exits 1 when there was nothing to run: an empty corpus must not pass unnoticed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs_under(const fs::path& root) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) return {root};
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code type_error;
        if (it->is_regular_file(type_error)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

bool run_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
        return false;
    }
    const std::vector<char> contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // An exactly sized heap copy, so that AddressSanitizer sees any read past the end.
    const auto copy = std::make_unique<std::uint8_t[]>(contents.size() + (contents.empty() ? 1 : 0));
    std::copy(contents.begin(), contents.end(), reinterpret_cast<char*>(copy.get()));
    (void)LLVMFuzzerTestOneInput(copy.get(), contents.size());
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (LLVMFuzzerInitialize != nullptr) (void)LLVMFuzzerInitialize(&argc, &argv);
    std::size_t ran = 0;
    bool unreadable = false;
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        if (argument.empty() || argument.front() == '-') continue;
        const auto files = inputs_under(argument);
        if (files.empty()) std::fprintf(stderr, "replay: no inputs under %s\n", argument.c_str());
        for (const auto& file : files) {
            if (!run_file(file)) unreadable = true;
            else ++ran;
        }
    }
    (void)LLVMFuzzerTestOneInput(nullptr, 0);
    std::fprintf(stderr, "replay: %zu inputs ran without a failure\n", ran);
    return ran == 0 || unreadable ? 1 : 0;
}
