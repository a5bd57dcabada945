// A program outside onnxstream's build, linked against an installed onnxstream through
// find_package (tests/consumer/check_consumer.sh builds and runs it):
//   onnxstream_consumer MODEL OUTPUT
// inspects MODEL, merges it into OUTPUT, inspects OUTPUT, and prints one line of counts for
// each step; the script compares them with what the fixture holds.
#include <onnxstream/ops/inspect.hpp>
#include <onnxstream/ops/merge.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

unsigned long long external_tensors(const onnxstream::ops::inspect_report& report) {
    const auto found = report.by_storage.find("external");
    return found == report.by_storage.end() ? 0 : found->second.tensors;
}

void print_report(const char* step, const onnxstream::ops::inspect_report& report) {
    std::printf("%s tensors=%llu external=%llu data_files=%zu file_size=%llu merged_size=%llu clean=%d\n", step,
                static_cast<unsigned long long>(report.tensors), external_tensors(report), report.data_files.size(),
                static_cast<unsigned long long>(report.file_size),
                static_cast<unsigned long long>(report.merged_size.value_or(0)), report.clean() ? 1 : 0);
}

int fail(const char* step, const onnxstream::error& error) {
    std::fprintf(stderr, "consumer: %s failed: %s (%s)\n", step, error.message.c_str(), error.hint.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: onnxstream_consumer MODEL OUTPUT\n");
        return 2;
    }
    const std::filesystem::path model = argv[1];
    const std::filesystem::path output = argv[2];

    const auto before = onnxstream::ops::inspect(model, {});
    if (!before) return fail("inspect", before.error());
    print_report("input", *before);

    onnxstream::ops::rewrite_options options;
    options.output = output;
    options.force = true;
    const auto merged = onnxstream::ops::merge(model, options);
    if (!merged) return fail("merge", merged.error());
    std::printf("merge tensors_inlined=%llu output_size=%llu exists=%d\n",
                static_cast<unsigned long long>(merged->tensors_inlined), static_cast<unsigned long long>(merged->output_size),
                std::filesystem::exists(output) ? 1 : 0);

    const auto after = onnxstream::ops::inspect(output, {});
    if (!after) return fail("inspect of the output", after.error());
    print_report("output", *after);
    return 0;
}
