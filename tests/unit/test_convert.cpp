// convert on the model python-onnx wrote (reference_model.hpp, merged so that the output
// stays one embedded .onnx): the weights become numpy's float16 (`astype(np.float16)`) or
// bfloat16 (float32 bits rounded to nearest even, top half) bit patterns, and the
// graph output's type follows. ONNX Runtime runs converted models in e2e test_convert.py.
#include <onnxstream/ops/convert.hpp>

#include "reference_model.hpp"
#include "test_passes_builder.hpp"

using namespace onnxstream;
using namespace test_passes;

namespace {

std::vector<std::uint16_t> halves_of(harness& h, std::string_view name, std::int32_t& data_type) {
    auto& m = h.model();
    for (const auto t : m.tensors.ids()) {
        if (!m.tensor_live(t) || m.text(m.tensors[t].name) != name) continue;
        data_type = m.tensor_type(t);
        const auto bytes = h.reader().tensor_bytes(m, t);
        REQUIRE(bytes);
        std::vector<std::uint16_t> out(bytes->size() / 2);
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = static_cast<std::uint16_t>(std::to_integer<unsigned>((*bytes)[2 * i]) |
                                                (std::to_integer<unsigned>((*bytes)[2 * i + 1]) << 8));
        return out;
    }
    FAIL("no tensor " << name);
    return {};
}

std::unique_ptr<harness> converted(ops::half_type target, ops::convert_report& report) {
    const test_support::temp_folder dir;
    const auto model = dir.write("merged.onnx", test_support::text_of(test_support::reference_merged));
    ops::convert_options options;
    options.target = target;
    options.output = dir.path() / "half.onnx";
    options.backend = io::writer_backend::portable;
    auto result = ops::convert(model, options);
    REQUIRE(result);
    report = *result;
    const auto bytes = test_support::read_file(options.output);
    return std::make_unique<harness>(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

}  // namespace

TEST_CASE("float16: numpy's bit patterns for every weight; the output is FLOAT16") {
    ops::convert_report report;
    const auto out = converted(ops::half_type::float16, report);
    CHECK_FALSE(report.external_layout);
    CHECK(report.tensors_converted == 2);
    CHECK(report.bytes_before == 80);
    CHECK(report.bytes_after == 40);
    CHECK(report.saturated == 0);
    CHECK(report.types_changed >= 1);  // Y
    std::int32_t type = 0;
    CHECK(halves_of(*out, "W", type) == std::vector<std::uint16_t>{0x0000, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600, 0x4700,
                                                                   0x4800, 0x4880, 0x4900, 0x4980, 0x4a00, 0x4a80, 0x4b00,
                                                                   0x4b80});
    CHECK(type == 10);
    CHECK(halves_of(*out, "B", type) == std::vector<std::uint16_t>{0x3800, 0xbc00, 0x4000, 0x4200});
    CHECK(type == 10);
}

TEST_CASE("bfloat16: the float32 bits rounded to their top half") {
    ops::convert_report report;
    const auto out = converted(ops::half_type::bfloat16, report);
    CHECK(report.tensors_converted == 2);
    std::int32_t type = 0;
    CHECK(halves_of(*out, "W", type) == std::vector<std::uint16_t>{0x0000, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0, 0x40e0,
                                                                   0x4100, 0x4110, 0x4120, 0x4130, 0x4140, 0x4150, 0x4160,
                                                                   0x4170});
    CHECK(type == 16);
    CHECK(halves_of(*out, "B", type) == std::vector<std::uint16_t>{0x3f00, 0xbf80, 0x4000, 0x4040});
}
