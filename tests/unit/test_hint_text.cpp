// Hints worded per front end (report/hint_text.hpp): slots filled from the error's
// remedies, everything else left as written.
#include <onnxstream/report/hint_text.hpp>
#include <onnxstream/report/json.hpp>

#include <doctest/doctest.h>

using namespace onnxstream;

namespace {

std::string shouted(const remedy_step& step) { return "<" + std::string(to_string(step.change)) + ":" + step.argument + ">"; }

}  // namespace

TEST_CASE("each slot takes its remedy's words; other braces stay") {
    const report::hint_wording wording{shouted, false};
    const std::vector<remedy_step> steps{{remedy::replace_output, {}}, {remedy::give_data_file, "w.bin"}};
    CHECK(report::worded_hint("{0} to replace it, or {1}", steps, wording) ==
          "<replace_output:> to replace it, or <give_data_file:w.bin>");
    CHECK(report::worded_hint("{1}{0}{1}", steps, wording) == "<give_data_file:w.bin><replace_output:><give_data_file:w.bin>");
    // Not slots: no remedy 2, no digits, an unclosed brace, a brace at the end.
    CHECK(report::worded_hint("a {2} b {x} c {0 d {", steps, wording) == "a {2} b {x} c {0 d {");
    // Without remedies a hint is plain text, braces and all.
    CHECK(report::worded_hint("weights{0}.bin", {}, wording) == "weights{0}.bin");
}

TEST_CASE("text quoted into a hint never becomes a slot") {
    const report::hint_wording wording{shouted, false};
    const std::vector<remedy_step> steps{{remedy::give_data_file, "w.bin"}};
    // A model's location "weights{0}.bin" quoted into a hint with one remedy.
    const auto hint = "rename the file to " + quoted_in_hint("weights{0}.bin") + ", or pass it with {0}";
    CHECK(hint == "rename the file to weights{{0}.bin, or pass it with {0}");
    CHECK(report::worded_hint(hint, steps, wording) ==
          "rename the file to weights{0}.bin, or pass it with <give_data_file:w.bin>");
    CHECK(report::worded_hint(quoted_in_hint("{{{0}}}"), steps, wording) == "{{{0}}}");
    CHECK(quoted_in_hint("no braces") == "no braces");
}

TEST_CASE("add_remedy numbers its slot and quotes a hint that had no slots") {
    const report::hint_wording wording{shouted, false};
    error plain{error_code::size_mismatch, "bad", "tensor 'w{0}' is damaged"};
    add_remedy(plain, "; {N} lists all", {remedy::inspect_model, {}});
    CHECK(plain.remedies.size() == 1);
    CHECK(report::worded_hint(plain, wording) == "tensor 'w{0}' is damaged; <inspect_model:> lists all");
    // A hint with slots already keeps them, and the new one is the next number.
    error slotted = with_remedies({error_code::size_mismatch, "bad"}, "{0} copies anyway", {{remedy::accept_size_mismatch, {}}});
    add_remedy(slotted, " ({N} lists all)", {remedy::inspect_model, {}});
    CHECK(report::worded_hint(slotted, wording) == "<accept_size_mismatch:> copies anyway (<inspect_model:> lists all)");
}

TEST_CASE("without words, a remedy is named by its stable name") {
    error e{error_code::output_exists, "the output exists"};
    e = with_remedies(std::move(e), "{0} to replace it", {{remedy::replace_output, {}}});
    CHECK(report::worded_hint(e, {}) == "replace_output to replace it");
}

TEST_CASE("a JSON error words its hint, and lists its remedies only when the wording asks") {
    const auto e = with_remedies({error_code::output_exists, "exists"}, "{0}", {{remedy::choose_output, "x.onnx"}});
    CHECK(report::error_json(e, {shouted, false}) ==
          R"({"ok":false,"error":{"code":"output_exists","message":"exists","hint":"<choose_output:x.onnx>"}})");
    CHECK(report::error_json(e, {shouted, true}) ==
          R"({"ok":false,"error":{"code":"output_exists","message":"exists","hint":"<choose_output:x.onnx>",)"
          R"("remedies":[{"change":"choose_output","argument":"x.onnx"}]}})");
}
