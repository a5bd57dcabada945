// What the io layer must do the same on every platform (Linux and the Windows build under
// wine): external-data locations in Windows spellings never escape the model's folder,
// every writer backend writes the same bytes through output_file, offsets past 4 GiB
// work, and a file is recognised through another spelling of its name.
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/onnx/float_conversion.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace io = onnxstream::io;
namespace fs = std::filesystem;
using onnxstream::error_code;
using onnxstream::onnx::data_resolver;

namespace {

std::vector<std::byte> bytes_of(std::string_view text) {
    std::vector<std::byte> out(text.size());
    std::transform(text.begin(), text.end(), out.begin(), [](char c) { return static_cast<std::byte>(c); });
    return out;
}

// Runs `job` (its output descriptor set here) through a writer of `backend` into a new file
// of `size` bytes at `destination`, committed when the run succeeds.
onnxstream::result<io::write_report> write_to(io::writer_backend backend, io::write_job job, const fs::path& destination,
                                              std::uint64_t size, io::writer_options options) {
    auto writer = io::make_writer(backend);
    auto output = io::output_file::create(destination, size, {});
    REQUIRE(output);
    job.output_descriptor = output->descriptor();
    options.buffer_count = 3;
    auto report = writer->run(job, options);
    if (report) REQUIRE(output->commit());
    return report;
}

}  // namespace

TEST_CASE("a location with a drive letter, a root, a UNC prefix or ..\\ is refused on every platform") {
    for (const char* location :
         {"C:\\Windows\\win.ini", "C:/x.bin", "c:x.bin", "\\x.bin", "/x.bin", "\\\\server\\share\\x.bin", "//server/share/x.bin",
          "\\\\?\\C:\\x.bin", "..\\x.bin", "sub\\..\\..\\x.bin", "../x.bin", "sub/../../x.bin"}) {
        CAPTURE(location);
        const auto checked = data_resolver::check_location_text(location);
        REQUIRE_FALSE(checked);
        CHECK(checked.error().code == error_code::unsafe_location);
    }
    for (const char* location : {"w.bin", "sub/w.bin", "sub\\w.bin", "model.onnx.data", "a..b.bin"}) {
        CAPTURE(location);
        CHECK(data_resolver::check_location_text(location));
    }
}

TEST_CASE("every writer backend writes the same bytes through an output file, hashes included") {
    const test_support::temp_folder dir;
    std::string content(3 << 20, '\0');
    for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 131 + i / 977) & 0xff);
    const auto input_path = dir.write("input.bin", content);
    auto source = io::source_file::open(input_path, true);
    REQUIRE(source);
    const auto pool = bytes_of("header-bytes|trailer");
    // emit 13, a small copy, a hashed large copy, a large copy, the trailer
    std::vector<io::write_operation> ops;
    ops.push_back({io::operation_kind::emit, 0, io::no_check, 0, 13, 0});
    ops.push_back({io::operation_kind::copy, 0, io::no_check, 13, 1000, 5});
    ops.push_back({io::operation_kind::copy, 0, 0, 1013, (2 << 20) + 12345, 1000});
    ops.push_back({io::operation_kind::copy, 0, io::no_check, 1013 + (2 << 20) + 12345, 700000, 17});
    const std::uint64_t tail = 1013 + (2 << 20) + 12345 + 700000;
    ops.push_back({io::operation_kind::emit, 0, io::no_check, tail, 7, 13});
    const std::uint64_t size = tail + 7;
    std::string expected = "header-bytes|" + content.substr(5, 1000) + content.substr(1000, (2 << 20) + 12345) +
                           content.substr(17, 700000) + "trailer";
    REQUIRE(expected.size() == size);
    std::vector<io::stream_check> checks(1);
    checks[0].tensor = "w";
    checks[0].compute_sha1 = true;
    const io::source_file* sources[] = {&*source};

    // automatic is io_uring on Linux, overlapped on Windows; overlapped is portable on Linux.
    int run = 0;
    io::write_job job;
    job.operations = ops;
    job.pool = pool;
    job.checks = checks;
    job.sources = sources;
    io::writer_options options;
    options.buffer_size = 256 * 1024;  // several buffers per large copy
    for (const auto backend : {io::writer_backend::portable, io::writer_backend::automatic, io::writer_backend::overlapped}) {
        CAPTURE(static_cast<int>(backend));
        const auto destination = dir.path() / ("out-" + std::to_string(run++) + ".bin");
        const auto report = write_to(backend, job, destination, size, options);
        REQUIRE(report);
        CHECK(report->bytes_written == size);
        REQUIRE(report->checks.size() == 1);
        REQUIRE(report->checks[0].sha1);
        CHECK(*report->checks[0].sha1 == io::sha1_of(bytes_of(content.substr(1000, (2 << 20) + 12345))));
        CHECK(test_support::read_file(destination) == expected);
    }
}

TEST_CASE("every writer backend converts small slices (staged) and large ones (on their own) alike") {
    // Float32 bytes, then convert operations between emitted headers: many small ones (some
    // straddling a 4 KiB staging buffer), a small one with a check, and a large one.
    const test_support::temp_folder dir;
    const std::size_t count = 300000;
    std::string content(count * 4, '\0');
    for (std::size_t i = 0; i < count; ++i) {
        const auto bits = static_cast<std::uint32_t>(i * 2654435761U);
        for (std::size_t k = 0; k < 4; ++k) content[4 * i + k] = static_cast<char>((bits >> (8 * k)) & 0xFF);
    }
    const auto input_path = dir.write("floats.bin", content);
    const auto pool = bytes_of("hdr!");
    std::vector<io::write_operation> ops;
    std::string expected;
    std::uint64_t saturated = 0;
    std::string checked;
    std::size_t value = 0;
    for (std::size_t n = 0; value < count; ++n) {
        const std::size_t values = std::min(count - value, n == 40 ? std::size_t{200000} : n % 9 == 8 ? 1500 : 1 + n % 4);
        ops.push_back({io::operation_kind::emit, 0, io::no_check, expected.size(), 4, 0});
        expected += "hdr!";
        io::write_operation op{io::operation_kind::convert, 0, io::no_check, expected.size(), values * 2, value * 4};
        const bool half = n % 2 == 0;
        op.conversion = half ? onnxstream::onnx::float_conversion::float32_to_float16
                             : onnxstream::onnx::float_conversion::float32_to_bfloat16;
        if (n == 17) {
            op.check = 0;
            checked = content.substr(value * 4, values * 4);
        }
        ops.push_back(op);
        for (std::size_t i = value; i < value + values; ++i) {
            std::uint32_t bits = 0;
            for (std::size_t k = 0; k < 4; ++k)
                bits |= static_cast<std::uint32_t>(static_cast<unsigned char>(content[4 * i + k])) << (8 * k);
            bool over = false;
            const auto h = half ? onnxstream::onnx::float32_to_float16_bits(bits, over)
                                : onnxstream::onnx::float32_to_bfloat16_bits(bits);
            saturated += over ? 1 : 0;
            expected += static_cast<char>(h & 0xFF);
            expected += static_cast<char>(h >> 8);
        }
        value += values;
    }
    std::vector<io::stream_check> checks(1);
    checks[0].tensor = "w";
    checks[0].compute_sha1 = true;
    int run = 0;
    for (const bool mapped : {true, false}) {
        auto source = io::source_file::open(input_path, mapped);
        REQUIRE(source);
        const io::source_file* sources[] = {&*source};
        io::write_job job;
        job.operations = ops;
        job.pool = pool;
        job.checks = checks;
        job.sources = sources;
        std::uint64_t progressed = 0;
        io::writer_options options;
        options.buffer_size = 4096;
        options.on_progress = [&progressed](std::uint64_t bytes) { progressed += bytes; };
        for (const auto backend : {io::writer_backend::portable, io::writer_backend::automatic, io::writer_backend::overlapped}) {
            CAPTURE(static_cast<int>(backend));
            CAPTURE(mapped);
            progressed = 0;
            const auto destination = dir.path() / ("converted-" + std::to_string(run++) + ".bin");
            const auto report = write_to(backend, job, destination, expected.size(), options);
            REQUIRE(report);
            CHECK(report->bytes_written == expected.size());
            CHECK(progressed == expected.size());
            CHECK(report->saturated == saturated);
            REQUIRE(report->checks[0].sha1);
            CHECK(*report->checks[0].sha1 == io::sha1_of(bytes_of(checked)));
            CHECK(test_support::read_file(destination) == expected);
            // A small convert past the end of its source fails as a large one does.
            auto past = ops;
            past.push_back({io::operation_kind::convert, 0, io::no_check, expected.size(), 8, count * 4 - 8});
            past.back().conversion = onnxstream::onnx::float_conversion::float32_to_float16;
            auto past_job = job;
            past_job.operations = past;
            const auto failed = write_to(backend, past_job, dir.path() / "past.bin", expected.size() + 8, options);
            REQUIRE_FALSE(failed);
            CHECK(failed.error().code == error_code::truncated_data);
        }
    }
}

TEST_CASE("an output replaces an existing file only with overwrite, and the commit leaves no temporary") {
    const test_support::temp_folder dir;
    const auto destination = dir.write("out.bin", "old");
    CHECK(io::output_file::create(destination, 3, {}).error().code == error_code::output_exists);
    auto output = io::output_file::create(destination, 3, {true, true, true});
    REQUIRE(output);
    const auto pool = bytes_of("new");
    const io::write_operation op{io::operation_kind::emit, 0, io::no_check, 0, 3, 0};
    io::write_job job;
    job.operations = std::span(&op, 1);
    job.pool = pool;
    job.output_descriptor = output->descriptor();
    REQUIRE(io::make_writer(io::writer_backend::portable)->run(job, {}));
    REQUIRE(output->commit());
    CHECK(test_support::read_file(destination) == "new");
    std::vector<fs::path> left;
    for (const auto& entry : fs::directory_iterator(dir.path())) left.push_back(entry.path().filename());
    CHECK(left == std::vector<fs::path>{"out.bin"});
}

TEST_CASE("bytes past 4 GiB are written and read back at their offset") {
    const test_support::temp_folder dir;
    const std::uint64_t offset = (4ULL << 30) + 4093;  // past every 32-bit boundary
    const auto destination = dir.path() / "large.bin";
    auto output = io::output_file::create(destination, offset + 6, {false, false, true});  // sparse
    REQUIRE(output);
    const auto pool = bytes_of("beyond");
    const io::write_operation op{io::operation_kind::emit, 0, io::no_check, offset, 6, 0};
    io::write_job job;
    job.operations = std::span(&op, 1);
    job.pool = pool;
    job.output_descriptor = output->descriptor();
    REQUIRE(io::make_writer()->run(job, {}));
    REQUIRE(output->commit());
    auto source = io::source_file::open(destination, false);
    REQUIRE(source);
    CHECK(source->size() == offset + 6);
    std::vector<std::byte> back(6);
    REQUIRE(source->read_at(offset, back));
    CHECK(back == pool);
    std::vector<std::byte> hole(4);
    REQUIRE(source->read_at(1ULL << 32, hole));
    CHECK(hole == std::vector<std::byte>(4));
}

#if defined(_WIN32)
TEST_CASE("UTF-8 names become UTF-16 paths and back, surrogate pairs included") {
    // "é", "日" and an emoji (U+1F600: two UTF-16 units) in one name.
    const std::string utf8 = "\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80.onnx";
    const fs::path path(utf8);
    CHECK(path.wstring() == std::wstring{L'\u00E9', L'\u65E5', wchar_t(0xD83D), wchar_t(0xDE00), L'.', L'o', L'n', L'n', L'x'});
    CHECK(path.string() == utf8);
    const test_support::temp_folder dir;
    const auto written = dir.write(utf8, "x");
    CHECK(fs::exists(written));
    CHECK(io::identity_of(dir.path() / utf8).has_value());
    // Invalid: a lone surrogate encoded in UTF-8, and a code point past U+10FFFF.
    CHECK_THROWS(fs::path(std::string("\xED\xA0\x80")));
    CHECK_THROWS(fs::path(std::string("\xF4\x90\x80\x80")));
}
#endif

TEST_CASE("a file is the same file through another spelling of its name") {
    const test_support::temp_folder dir;
    const auto path = dir.write("Model.onnx", "x");
    const auto same = io::identity_of(path);
    REQUIRE(same);
    CHECK(io::identity_of(dir.path() / "." / "Model.onnx") == same);
#if defined(_WIN32)
    // Windows names are case-insensitive, and `/` separates as `\` does.
    CHECK(io::identity_of(dir.path() / "MODEL.ONNX") == same);
    CHECK(io::identity_of(fs::path(dir.path().generic_wstring() + L"/model.onnx")) == same);
#endif
    const auto located = io::located_file::locate(dir.path() / "." / "Model.onnx");
    REQUIRE(located);
    CHECK(located->is_regular());
    CHECK(located->real_path().filename() == "Model.onnx");
    auto opened = located->open(false);
    REQUIRE(opened);
    CHECK(opened->identity() == *same);
}
