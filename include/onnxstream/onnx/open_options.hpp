// How a command opens a model: where its external data may be (resolve_options) and the
// two choices about data that does not match what the model says. Every operation opens
// its model through bound_model::open with these, so that a flag cannot be honoured by one
// command and forgotten by another (--strict once was, by three).
#pragma once

#include <onnxstream/onnx/resolve_options.hpp>

namespace onnxstream::onnx {

struct open_options {
    resolve_options data{};            // --data, --data-dir
    bool strict = false;               // --strict: no guessed data file, and a checksum mismatch is an error
    bool allow_size_mismatch = false;  // --allow-size-mismatch: take bytes that do not match the dims

    /// `data` as the resolver must see it: with `strict`, nothing is guessed.
    [[nodiscard]] resolve_options resolving() const {
        auto resolving = data;
        resolving.allow_guesses = resolving.allow_guesses && !strict;
        return resolving;
    }
};

}  // namespace onnxstream::onnx
