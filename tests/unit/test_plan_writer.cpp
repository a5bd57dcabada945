// Both writer backends run the same plans, with and without copy_file_range and with
// buffer rings small enough that every path (staging across buffers, chunked reads and
// writes, hashes spread over several buffers and threads) is taken. The expected output is
// assembled here byte by byte from the plan, independently of the writers.
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/io/source_file.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::temp_folder;
namespace fs = std::filesystem;

namespace {

struct configuration {
    std::string label;
    bool uring = false;
    io::writer_options options;
};

std::unique_ptr<io::plan_writer> writer_for(const configuration& c) {
    return c.uring ? io::make_uring_writer() : io::make_portable_writer();
}

// Every backend, with the kernel copy allowed and refused, with the default ring and with
// a ring of two 4 KiB buffers (every piece spans several of them), one and three threads.
std::vector<configuration> configurations() {
    std::vector<configuration> all;
    const bool have_uring = io::make_uring_writer() != nullptr;
    if (!have_uring) MESSAGE("io_uring is not available here: only the portable writer is tested");
    for (const bool uring : {false, true}) {
        if (uring && !have_uring) continue;
        for (const bool kernel_copy : {true, false}) {
            for (const bool small_ring : {false, true}) {
                configuration c;
                c.uring = uring;
                c.options.allow_copy_file_range = kernel_copy;
                c.options.threads = small_ring ? 3 : 1;
                if (small_ring) {
                    c.options.buffer_size = 4096;
                    c.options.buffer_count = 2;
                }
                c.label = std::string(uring ? "io_uring" : "portable") +
                          (kernel_copy ? " +copy_file_range" : " -copy_file_range") +
                          (small_ring ? " small ring, 3 threads" : " default ring");
                all.push_back(c);
            }
        }
    }
    return all;
}

// Deterministic bytes that differ at every offset and between files.
std::string pattern(std::size_t size, std::uint32_t seed) {
    std::string bytes(size, '\0');
    std::uint32_t state = seed * 2654435761U + 1;
    for (auto& c : bytes) {
        state = state * 1664525U + 1013904223U;
        c = static_cast<char>(state >> 24);
    }
    return bytes;
}

std::span<const std::byte> as_bytes(const std::string& text) { return std::as_bytes(std::span(text.data(), text.size())); }

// A plan under construction, with the output it must produce.
struct plan_fixture {
    std::vector<io::write_operation> operations;
    std::vector<std::byte> pool;
    std::vector<io::stream_check> checks;
    std::string expected;                      // holes stay '\0'
    std::vector<const std::string*> contents;  // per source, what the source file holds

    std::uint64_t end() const { return expected.size(); }

    void emit(const std::string& bytes) {
        io::write_operation op;
        op.kind = io::operation_kind::emit;
        op.output_offset = end();
        op.length = bytes.size();
        op.input_offset = pool.size();
        const auto view = as_bytes(bytes);
        pool.insert(pool.end(), view.begin(), view.end());
        expected += bytes;
        operations.push_back(op);
    }
    void copy(std::uint32_t source, std::uint64_t offset, std::uint64_t length, std::uint32_t check = io::no_check) {
        io::write_operation op;
        op.kind = io::operation_kind::copy;
        op.source = source;
        op.check = check;
        op.output_offset = end();
        op.length = length;
        op.input_offset = offset;
        expected += contents[source]->substr(offset, length);
        operations.push_back(op);
    }
    void hole(std::uint64_t length) { expected.append(length, '\0'); }
    std::uint32_t add_check(io::stream_check check) {
        checks.push_back(std::move(check));
        return static_cast<std::uint32_t>(checks.size() - 1);
    }
};

// Source files in a temporary folder: the first mapped (like a model), the rest not
// (like external data files).
struct sources_fixture {
    temp_folder dir;
    std::vector<std::string> contents;
    std::vector<io::source_file> files;
    std::vector<const io::source_file*> table;

    explicit sources_fixture(std::vector<std::size_t> sizes) {
        for (std::size_t i = 0; i < sizes.size(); ++i) contents.push_back(pattern(sizes[i], static_cast<std::uint32_t>(i + 7)));
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            const auto path = dir.write("source" + std::to_string(i), contents[i]);
            auto opened = io::source_file::open(path, i == 0);
            REQUIRE(opened);
            files.push_back(std::move(opened).value());
        }
        for (const auto& f : files) table.push_back(&f);
    }
    void attach(plan_fixture& plan) const {
        for (const auto& c : contents) plan.contents.push_back(&c);
    }
};

// The output file, created at the planned size (so holes read as zeros), read back whole.
struct output_fixture {
    fs::path path;
    int fd = -1;
    output_fixture(const temp_folder& dir, std::uint64_t size, const std::string& name = "output") {
        path = dir.path() / name;
        fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        REQUIRE(fd >= 0);
        REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
    }
    ~output_fixture() {
        if (fd >= 0) ::close(fd);
    }
    output_fixture(const output_fixture&) = delete;
    output_fixture& operator=(const output_fixture&) = delete;
    std::string bytes() const { return test_support::read_file(path); }
};

io::write_job job_of(const plan_fixture& plan, const sources_fixture& sources, int output) {
    io::write_job job;
    job.operations = plan.operations;
    job.pool = plan.pool;
    job.checks = plan.checks;
    job.sources = sources.table;
    job.output_descriptor = output;
    return job;
}

// A plan touching every path: emits (tiny, and larger than a small ring's buffer), small
// copies from the mapped and unmapped sources, large copies (several kernel-copy chunks
// among them), holes, adjacent copies, and hashed copies of every kind.
plan_fixture mixed_plan(const sources_fixture& sources) {
    plan_fixture plan;
    sources.attach(plan);
    plan.emit("\x08\x07");
    plan.copy(0, 0, 100);            // small, mapped
    plan.copy(1, 5, 3000);           // small, read
    plan.emit(pattern(10'000, 99));  // an emit over several small buffers
    plan.hole(4093);                 // alignment padding
    plan.copy(1, 4096, 200'000);     // large
    plan.copy(1, 204'096, 70'000);   // large, right after the previous one
    plan.copy(0, 1000, 65'536);      // exactly the small-copy limit, mapped
    plan.hole(1);
    plan.copy(2, 0, (16U << 20) + 12'345);  // more than one kernel-copy chunk
    const auto& data = *plan.contents[1];
    const auto expected_ok = io::sha1_of(as_bytes(data.substr(300'000, 150'001)));
    auto wrong = expected_ok;
    wrong[0] ^= 1;
    plan.copy(1, 300'000, 150'001, plan.add_check({.tensor = "matches", .expected_sha1 = expected_ok}));
    plan.emit("x");
    plan.copy(1, 500'000, 99'999, plan.add_check({.tensor = "differs", .expected_sha1 = wrong}));
    plan.copy(1, 600'000, 3,
              plan.add_check({.tensor = "computed", .expected_sha1 = std::nullopt, .compute_sha1 = true, .compute_xxh3 = true}));
    plan.copy(0, 2000, 90'000, plan.add_check({.tensor = "xxh3 only", .expected_sha1 = std::nullopt, .compute_xxh3 = true}));
    plan.emit(std::string(5, 'z'));
    return plan;
}

}  // namespace

TEST_CASE("both backends write every byte of a mixed plan, leave holes zero and report checks") {
    sources_fixture sources({200'000, 800'000, (16U << 20) + 20'000});
    const auto plan = mixed_plan(sources);
    const auto& data = sources.contents[1];

    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        output_fixture output(sources.dir, plan.end());
        auto writer = writer_for(config);
        REQUIRE(writer);
        std::uint64_t reported = 0;
        auto options = config.options;
        options.on_progress = [&](std::uint64_t bytes) { reported += bytes; };
        auto report = writer->run(job_of(plan, sources, output.fd), options);
        REQUIRE_MESSAGE(report, (report ? "" : report.error().describe()));
        CHECK(std::string(report->backend) == (config.uring ? "io_uring" : "portable"));
        const auto written = output.bytes();
        REQUIRE(written.size() == plan.expected.size());
        CHECK(written == plan.expected);
        CHECK(report->bytes_written == plan.expected.size() - 4093 - 1);  // every byte but the holes
        CHECK(reported == report->bytes_written);

        REQUIRE(report->checks.size() == 4);
        CHECK(report->checks[0].sha1_matches);
        CHECK(report->checks[0].sha1 == io::sha1_of(as_bytes(data.substr(300'000, 150'001))));
        CHECK_FALSE(report->checks[1].sha1_matches);
        CHECK(report->checks[1].sha1 == io::sha1_of(as_bytes(data.substr(500'000, 99'999))));
        CHECK(report->checks[2].sha1_matches);
        CHECK(report->checks[2].sha1 == io::sha1_of(as_bytes(data.substr(600'000, 3))));
        CHECK(report->checks[2].xxh3 == io::xxh3_of(as_bytes(data.substr(600'000, 3))));
        CHECK_FALSE(report->checks[3].sha1.has_value());
        CHECK(report->checks[3].xxh3 == io::xxh3_of(as_bytes(sources.contents[0].substr(2000, 90'000))));
    }
}

TEST_CASE("a plan given in windows writes the same bytes, with each window's memory reused for the next") {
    sources_fixture sources({200'000, 800'000, (16U << 20) + 20'000});
    const auto plan = mixed_plan(sources);
    for (const std::size_t per_window : {std::size_t{1}, std::size_t{3}}) {
        for (const auto& config : configurations()) {
            CAPTURE(config.label);
            CAPTURE(per_window);
            // Each window is copied into the same two vectors, its emits' bytes rebased onto
            // its own pool: a writer that read a window after asking for the next would
            // find other bytes there (scribbled over first).
            std::vector<io::write_operation> window;
            std::vector<std::byte> window_pool;
            std::size_t next = 0;
            std::size_t windows = 0;
            auto fill = [&](std::span<const io::write_operation>& operations, std::span<const std::byte>& pool) {
                std::fill(window_pool.begin(), window_pool.end(), std::byte{0xEE});
                for (auto& op : window) op.length = 0xDEAD;
                window.clear();
                window_pool.clear();
                for (; next < plan.operations.size() && window.size() < per_window; ++next) {
                    auto op = plan.operations[next];
                    if (op.kind == io::operation_kind::emit) {
                        const auto bytes = std::span(plan.pool).subspan(op.input_offset, op.length);
                        op.input_offset = window_pool.size();
                        window_pool.insert(window_pool.end(), bytes.begin(), bytes.end());
                    }
                    window.push_back(op);
                }
                operations = window;
                pool = window_pool;
                ++windows;
                return !window.empty();
            };
            output_fixture output(sources.dir, plan.end());
            auto writer = writer_for(config);
            REQUIRE(writer);
            io::write_job job;
            job.checks = plan.checks;
            job.sources = sources.table;
            job.output_descriptor = output.fd;
            job.more = [&](std::span<const io::write_operation>& operations, std::span<const std::byte>& pool) -> result<bool> {
                return fill(operations, pool);
            };
            auto report = writer->run(job, config.options);
            REQUIRE_MESSAGE(report, (report ? "" : report.error().describe()));
            CHECK(output.bytes() == plan.expected);
            CHECK(windows == (plan.operations.size() + per_window - 1) / per_window + 1);
            REQUIRE(report->checks.size() == 4);
            CHECK(report->checks[0].sha1_matches);
            CHECK_FALSE(report->checks[1].sha1_matches);
            CHECK(report->checks[3].xxh3 == io::xxh3_of(as_bytes(sources.contents[0].substr(2000, 90'000))));
        }
    }
}

TEST_CASE("a failure to give the next window stops the run with that error") {
    sources_fixture sources({1000});
    plan_fixture plan;
    sources.attach(plan);
    plan.emit("first");
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        output_fixture output(sources.dir, 100);
        auto writer = writer_for(config);
        REQUIRE(writer);
        auto job = job_of(plan, sources, output.fd);
        job.more = [](std::span<const io::write_operation>&, std::span<const std::byte>&) -> result<bool> {
            return failure(error_code::io, "no more windows here");
        };
        auto report = writer->run(job, config.options);
        REQUIRE_FALSE(report);
        CHECK(report.error().message == "no more windows here");
    }
}

TEST_CASE("hashes of many checks, each over many buffers, come out right with several threads") {
    sources_fixture sources({64, 3U << 20});
    plan_fixture plan;
    sources.attach(plan);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (std::uint64_t i = 0; i < 24; ++i) ranges.emplace_back(i * 131'072 + i, 65'537 + i * 1001);
    for (const auto& [offset, length] : ranges) {
        plan.copy(1, offset, length,
                  plan.add_check({.tensor = "t", .expected_sha1 = std::nullopt, .compute_sha1 = true, .compute_xxh3 = true}));
        plan.emit("--");
    }
    for (auto config : configurations()) {
        CAPTURE(config.label);
        config.options.threads = 4;
        output_fixture output(sources.dir, plan.end());
        auto report = writer_for(config)->run(job_of(plan, sources, output.fd), config.options);
        REQUIRE_MESSAGE(report, (report ? "" : report.error().describe()));
        CHECK(output.bytes() == plan.expected);
        for (std::size_t i = 0; i < ranges.size(); ++i) {
            const auto expected = sources.contents[1].substr(ranges[i].first, ranges[i].second);
            CHECK(report->checks[i].sha1 == io::sha1_of(as_bytes(expected)));
            CHECK(report->checks[i].xxh3 == io::xxh3_of(as_bytes(expected)));
        }
    }
}

TEST_CASE("a known SHA-1 is found through every backend") {
    const std::string fox = "The quick brown fox jumps over the lazy dog";
    temp_folder dir;
    sources_fixture sources({1});
    const auto path = dir.write("fox", fox);
    auto file = io::source_file::open(path, false);
    REQUIRE(file);
    sources.contents.push_back(fox);
    sources.table.push_back(&*file);
    plan_fixture plan;
    sources.attach(plan);
    plan.copy(1, 0, fox.size(),
              plan.add_check({.tensor = "fox", .expected_sha1 = io::parse_sha1_hex("2fd4e1c67a2d28fced849ee1bb76e7391b93eb12")}));
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        output_fixture output(dir, plan.end());
        auto report = writer_for(config)->run(job_of(plan, sources, output.fd), config.options);
        REQUIRE(report);
        CHECK(report->checks[0].sha1_matches);
    }
}

TEST_CASE("an empty tensor's check reports the hash of nothing; a check on two copies is refused") {
    sources_fixture sources({16, 100'000});
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        {
            plan_fixture plan;
            sources.attach(plan);
            plan.emit("e");
            plan.copy(1, 10, 0,
                      plan.add_check({.tensor = "empty",
                                      .expected_sha1 = io::parse_sha1_hex("da39a3ee5e6b4b0d3255bfef95601890afd80709"),
                                      .compute_xxh3 = true}));
            output_fixture output(sources.dir, plan.end());
            auto report = writer_for(config)->run(job_of(plan, sources, output.fd), config.options);
            REQUIRE(report);
            CHECK(report->checks[0].sha1_matches);
            CHECK(report->checks[0].sha1 == io::sha1_of({}));
            CHECK(report->checks[0].xxh3 == io::xxh3_of({}));
        }
        {
            plan_fixture plan;
            sources.attach(plan);
            const auto check = plan.add_check({.tensor = "twice", .expected_sha1 = std::nullopt, .compute_sha1 = true});
            plan.copy(1, 0, 70'000, check);
            plan.copy(1, 0, 70'000, check);
            output_fixture output(sources.dir, plan.end());
            auto report = writer_for(config)->run(job_of(plan, sources, output.fd), config.options);
            REQUIRE_FALSE(report);
            CHECK(report.error().code == error_code::io);
        }
    }
}

TEST_CASE("an empty plan writes nothing and succeeds") {
    sources_fixture sources({16});
    plan_fixture plan;
    sources.attach(plan);
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        output_fixture output(sources.dir, 0);
        auto report = writer_for(config)->run(job_of(plan, sources, output.fd), config.options);
        REQUIRE(report);
        CHECK(report->bytes_written == 0);
    }
}

TEST_CASE("a cancelled run stops with `interrupted`, before or during the work") {
    sources_fixture sources({4096, 4U << 20});
    plan_fixture plan;
    sources.attach(plan);
    for (std::uint64_t i = 0; i < 8; ++i) {
        plan.copy(1, i * 4096, 300'000);
        plan.copy(1, i * 7, 200'000, plan.add_check({.tensor = "h", .expected_sha1 = std::nullopt, .compute_sha1 = true}));
        plan.emit("abc");
    }
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        {
            std::atomic<bool> cancel{true};
            output_fixture output(sources.dir, plan.end());
            auto options = config.options;
            options.cancel = &cancel;
            auto report = writer_for(config)->run(job_of(plan, sources, output.fd), options);
            REQUIRE_FALSE(report);
            CHECK(report.error().code == error_code::interrupted);
        }
        {
            std::atomic<bool> cancel{false};
            output_fixture output(sources.dir, plan.end());
            auto options = config.options;
            options.cancel = &cancel;
            std::uint64_t seen = 0;
            options.on_progress = [&](std::uint64_t bytes) {
                seen += bytes;
                cancel.store(true);  // as a signal handler would, once work has begun
            };
            auto report = writer_for(config)->run(job_of(plan, sources, output.fd), options);
            REQUIRE_FALSE(report);
            CHECK(report.error().code == error_code::interrupted);
            CHECK(seen > 0);
            CHECK(seen < plan.expected.size());
        }
    }
}

TEST_CASE("a source shorter than planned is an error, not a crash") {
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        SUBCASE("the plan reaches past the end of the source as it was opened") {
            sources_fixture sources({1000, 100'000});
            plan_fixture plan;
            sources.attach(plan);
            plan.emit("ab");
            plan.operations.push_back({io::operation_kind::copy, 1, io::no_check, 2, 100'001, 0});
            output_fixture output(sources.dir, 100'003);
            auto report = writer_for(config)->run(job_of(plan, sources, output.fd), config.options);
            REQUIRE_FALSE(report);
            CHECK(report.error().code == error_code::truncated_data);
        }
        SUBCASE("the source was truncated after it was opened (and mapped)") {
            for (const std::uint32_t victim : {0U, 1U}) {
                CAPTURE(victim);
                sources_fixture sources({300'000, 300'000});
                plan_fixture plan;
                sources.attach(plan);
                plan.copy(victim, 0, 1000);        // small
                plan.copy(victim, 1000, 200'000);  // large
                plan.copy(victim, 201'000, 90'000,
                          plan.add_check({.tensor = "h", .expected_sha1 = std::nullopt, .compute_sha1 = true}));  // hashed
                output_fixture output(sources.dir, plan.end());
                REQUIRE(::truncate((sources.dir.path() / ("source" + std::to_string(victim))).c_str(), 500) == 0);
                auto report = writer_for(config)->run(job_of(plan, sources, output.fd), config.options);
                REQUIRE_FALSE(report);
                CHECK(report.error().code == error_code::truncated_data);
                CHECK(report.error().message.find("source" + std::to_string(victim)) != std::string::npos);
            }
        }
        SUBCASE("the source shrinks while it is being copied") {
            // Truncated once the first bytes are out: the reads, kernel copies and hashed
            // copies still to come meet its end.
            for (int kind = 0; kind < 3; ++kind) {
                CAPTURE(kind);
                // More than the default ring holds (8 MiB), so that not everything can be
                // read before the first write completes.
                sources_fixture sources({16, 16U << 20});
                plan_fixture plan;
                sources.attach(plan);
                for (std::uint64_t i = 0; i < 200; ++i) {
                    const auto check = kind == 2
                                           ? plan.add_check({.tensor = "h", .expected_sha1 = std::nullopt, .compute_sha1 = true})
                                           : io::no_check;
                    plan.copy(1, i * 80'000, kind == 0 ? 60'000 : 100'000, check);
                }
                output_fixture output(sources.dir, plan.end());
                const auto victim = sources.dir.path() / "source1";
                bool truncated = false;
                auto options = config.options;
                options.on_progress = [&](std::uint64_t) {
                    if (!truncated) truncated = ::truncate(victim.c_str(), 150'000) == 0;
                };
                auto report = writer_for(config)->run(job_of(plan, sources, output.fd), options);
                REQUIRE(truncated);
                REQUIRE_FALSE(report);
                CHECK(report.error().code == error_code::truncated_data);
            }
        }
    }
}

TEST_CASE("a plan naming an unknown source, or an output that refuses writes, is an error") {
    sources_fixture sources({1000, 300'000});
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        {
            plan_fixture plan;
            sources.attach(plan);
            plan.operations.push_back({io::operation_kind::copy, 7, io::no_check, 0, 10, 0});
            output_fixture output(sources.dir, 10);
            auto report = writer_for(config)->run(job_of(plan, sources, output.fd), config.options);
            REQUIRE_FALSE(report);
            CHECK(report.error().code == error_code::io);
        }
        {
            plan_fixture plan;
            sources.attach(plan);
            plan.emit("header");
            plan.copy(1, 0, 250'000);
            plan.copy(1, 0, 80'000, plan.add_check({.tensor = "h", .expected_sha1 = std::nullopt, .compute_sha1 = true}));
            output_fixture output(sources.dir, plan.end());
            const int read_only = ::open(output.path.c_str(), O_RDONLY | O_CLOEXEC);
            REQUIRE(read_only >= 0);
            auto report = writer_for(config)->run(job_of(plan, sources, read_only), config.options);
            ::close(read_only);
            REQUIRE_FALSE(report);
            CHECK(report.error().code == error_code::io);
            CHECK(report.error().os_error);
        }
    }
}

TEST_CASE("one writer runs several plans in a row") {
    sources_fixture sources({5000, 400'000});
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        auto writer = writer_for(config);
        for (int round = 0; round < 3; ++round) {
            plan_fixture plan;
            sources.attach(plan);
            plan.emit(std::string(static_cast<std::size_t>(round + 1), 'r'));
            plan.copy(1, static_cast<std::uint64_t>(round) * 1000, 250'000,
                      plan.add_check({.tensor = "h", .expected_sha1 = std::nullopt, .compute_xxh3 = true}));
            plan.copy(1, 1, 100'000 + static_cast<std::uint64_t>(round));
            output_fixture output(sources.dir, plan.end(), "round" + std::to_string(round));
            auto report = writer->run(job_of(plan, sources, output.fd), config.options);
            REQUIRE(report);
            CHECK(output.bytes() == plan.expected);
            CHECK(report->checks[0].xxh3 ==
                  io::xxh3_of(as_bytes(plan.expected.substr(static_cast<std::size_t>(round + 1), 250'000))));
        }
    }
}

TEST_CASE("make_writer honours the backend asked for") {
    CHECK(std::string(io::make_writer(io::writer_backend::portable)->name()) == "portable");
    const auto automatic = io::make_writer(io::writer_backend::automatic);
    REQUIRE(automatic);
    if (io::make_uring_writer() != nullptr && std::getenv("ONNXSTREAM_WRITER") == nullptr)
        CHECK(std::string(automatic->name()) == "io_uring");
}

namespace {

// KiB of `path`'s mappings resident in this process (/proc/self/smaps), or -1 when
// nothing maps it.
long resident_kib(const fs::path& path) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    long total = -1;
    while (std::getline(smaps, line)) {
        // A mapping's first line: "start-end perms offset device inode [path]"; then "Key: value" lines.
        const auto first_word = line.substr(0, line.find(' '));
        if (first_word.find('-') != std::string::npos && first_word.find(':') == std::string::npos)
            inside = line.ends_with(" " + path.string());
        else if (inside && line.starts_with("Rss:")) total = std::max(total, 0L) + std::stol(line.substr(4));
    }
    return total;
}

}  // namespace

TEST_CASE("small copies from a mapped source leave no more than a window of it resident") {
    // A model's unchanged messages: a million small copies in file order. Each is too small
    // to release alone; the writer releases the pages behind them.
    constexpr std::size_t size = 48U << 20;
    sources_fixture sources({size});
    const auto path = fs::canonical(sources.dir.path() / "source0");
    for (const auto& config : configurations()) {
        CAPTURE(config.label);
        plan_fixture plan;
        sources.attach(plan);
        for (std::uint64_t at = 0; at < size; at += 3000) plan.copy(0, at, std::min<std::uint64_t>(1000, size - at));
        output_fixture output(sources.dir, plan.end());
        auto writer = writer_for(config);
        REQUIRE(writer);
        auto report = writer->run(job_of(plan, sources, output.fd), config.options);
        REQUIRE_MESSAGE(report, (report ? "" : report.error().describe()));
        CHECK(output.bytes() == plan.expected);
        const auto resident = resident_kib(path);
        REQUIRE(resident >= 0);  // the mapping was found
        CHECK(resident <= 16 * 1024);
    }
}
