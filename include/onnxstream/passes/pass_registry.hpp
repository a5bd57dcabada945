// The graph passes, one entry each: its name (what `--passes` takes), a one-line summary
// (help text), what optimize runs and what analyze runs. optimize, analyze, the `--passes`
// parser and the help text all read this one list, in its order, which is the default order.
//
// Adding a pass: one new source file that defines `pass_entry <something>_pass()`, and its
// line in ONNXSTREAM_PASS_LIST (src/passes/pass_registry.cpp).
#pragma once

#include <onnxstream/passes/pass_context.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::passes {

struct pass_entry {
    std::string_view name;     // "fold-bn"
    std::string_view summary;  // "BatchNormalization folded into Conv, ConvTranspose, Gemm"
    /// optimize: edits the graph model, reports findings; returns how many changes it made
    /// (0 ends the rounds).
    std::uint64_t (*run)(pass_context&) = nullptr;
    /// analyze: adds what the pass would do to a fresh copy of the graph model to the
    /// findings (it may edit that copy); null when analyze does not show the pass.
    void (*analyze)(pass_context&) = nullptr;
    /// What a summary line leads with: "folded 3 BatchNormalizations" ("would fold" in a dry
    /// run). `kind` is the finding counted; `skipped` for none.
    struct headline_text {
        finding_kind kind = finding_kind::skipped;
        std::string_view done;   // "folded"
        std::string_view would;  // "would fold"
        std::string_view noun;   // "BatchNormalization"
    } headline{};
    /// Whether the summary line always says how many nodes were removed (false: only when
    /// some were).
    bool always_count_nodes = true;
};

/// Every pass, in the default order.
[[nodiscard]] std::span<const pass_entry> pass_registry();

/// The pass called `name`, or null.
[[nodiscard]] const pass_entry* find_pass(std::string_view name);

/// "dce, const-if, ..." for messages.
[[nodiscard]] std::string pass_names(std::string_view separator = ", ");

/// Parses `dce,cse`: known names, no repeats. Errors: `invalid_argument` naming the known passes.
[[nodiscard]] result<std::vector<const pass_entry*>> parse_pass_list(std::string_view list);

}  // namespace onnxstream::passes
