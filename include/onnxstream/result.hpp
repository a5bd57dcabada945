// result<T>: a value or an `error`, shaped like std::expected (C++23) so it can be swapped
// for it later. `result<void>` carries only success or an error.
#pragma once

#include <onnxstream/error.hpp>

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace onnxstream {

/// Wraps an error so that `return failure(...)` converts to any result<T>.
struct failure {
    error value;
    explicit failure(error e) : value(std::move(e)) {}
    failure(error_code code, std::string message, std::string hint = {}) : value(code, std::move(message), std::move(hint)) {}
    /// `hint` names `steps` as {0}, {1} ... (see error.hpp).
    failure(error_code code, std::string message, std::string hint, std::vector<remedy_step> steps)
        : value(code, std::move(message), std::move(hint)) {
        value.remedies = std::move(steps);
    }
};

template <class T>
class [[nodiscard]] result {
public:
    result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
    result(failure f) : state_(std::in_place_index<1>, std::move(f.value)) {}

    [[nodiscard]] bool has_value() const noexcept { return state_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    [[nodiscard]] T& value() & {
        assert(has_value());
        return std::get<0>(state_);
    }
    [[nodiscard]] const T& value() const& {
        assert(has_value());
        return std::get<0>(state_);
    }
    [[nodiscard]] T&& value() && {
        assert(has_value());
        return std::get<0>(std::move(state_));
    }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    [[nodiscard]] const onnxstream::error& error() const& {
        assert(!has_value());
        return std::get<1>(state_);
    }
    [[nodiscard]] onnxstream::error&& error() && {
        assert(!has_value());
        return std::get<1>(std::move(state_));
    }

private:
    std::variant<T, onnxstream::error> state_;
};

template <>
class [[nodiscard]] result<void> {
public:
    // User-provided, not defaulted: `return {}` would otherwise value-initialize, zero-filling
    // the error's whole storage (160 bytes) on every success; the parser returns one per message.
    result() noexcept {}
    result(failure f) : error_(std::move(f.value)) {}

    [[nodiscard]] bool has_value() const noexcept { return !error_.has_value(); }
    explicit operator bool() const noexcept { return has_value(); }
    [[nodiscard]] const onnxstream::error& error() const& {
        assert(error_);
        return *error_;
    }
    [[nodiscard]] onnxstream::error&& error() && {
        assert(error_);
        return std::move(*error_);
    }

private:
    std::optional<onnxstream::error> error_;
};

}  // namespace onnxstream

/// Propagates the error of a result-returning expression; the macro keeps call sites flat.
#define ONNXSTREAM_TRY(expr)                                                                                  \
    do {                                                                                                      \
        auto&& onnxstream_try_result_ = (expr);                                                               \
        if (!onnxstream_try_result_) return ::onnxstream::failure(std::move(onnxstream_try_result_).error()); \
    } while (false)

#define ONNXSTREAM_CONCAT_INNER(a, b) a##b
#define ONNXSTREAM_CONCAT(a, b) ONNXSTREAM_CONCAT_INNER(a, b)
/// `ONNXSTREAM_ASSIGN(auto x, f());` declares x from a result or returns its error.
#define ONNXSTREAM_ASSIGN(decl, expr) ONNXSTREAM_ASSIGN_IMPL(ONNXSTREAM_CONCAT(onnxstream_assign_, __LINE__), decl, expr)
#define ONNXSTREAM_ASSIGN_IMPL(tmp, decl, expr)                     \
    auto tmp = (expr);                                              \
    if (!tmp) return ::onnxstream::failure(std::move(tmp).error()); \
    decl = std::move(tmp).value()
