// Where a pass puts its findings: a view of a list the caller owns. A plain
// `std::vector<finding>` serves tests and small callers; a caller that may get a million
// findings (dce on a model of a million unused initializers) gives a list that stores them
// compactly instead (ops/finding_list.hpp), so that they are never held as structs.
//
// The sink never owns: the list it was made from must outlive it.
#pragma once

#include <onnxstream/passes/finding.hpp>

#include <concepts>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace onnxstream::passes {

class finding_sink {
public:
    /// Appends to `findings` (implicit: `pass_context{model, reader, findings, ...}`).
    finding_sink(std::vector<finding>& findings) noexcept  // NOLINT(google-explicit-constructor)
        : list_(&findings),
          add_([](void* list, finding&& f) { static_cast<std::vector<finding>*>(list)->push_back(std::move(f)); }),
          reserve_([](void* list, std::uint64_t count, std::uint64_t) {
              auto& vector = *static_cast<std::vector<finding>*>(list);
              vector.reserve(vector.size() + count);
          }) {}

    /// Calls `list.add(f)` for each finding, and `list.reserve(count, bytes_each)` when the
    /// list has one: any list with an `add(const finding&)`.
    template <class List>
    requires(!std::same_as<std::remove_cv_t<List>, finding_sink> && !std::same_as<List, std::vector<finding>> &&
             requires(List & list, const finding& f) { list.add(f); }) finding_sink(List& list)
    noexcept  // NOLINT(google-explicit-constructor)
        : list_(&list),
          add_([](void* to, finding&& f) { static_cast<List*>(to)->add(f); }),
          reserve_([](void* to, std::uint64_t count, std::uint64_t bytes_each) {
              if constexpr (requires(List & l) { l.reserve(count, bytes_each); })
                  static_cast<List*>(to)->reserve(count, bytes_each);
          }) {}

    /// Hands `f` to the list.
    void add(finding f) const { add_(list_, std::move(f)); }

    /// Says that about `count` more findings come, of about `bytes_each` bytes each (their
    /// texts, plus 16 for their numbers): a pass that knows it makes a million findings says
    /// so first, and the list grows once rather than by copies of itself.
    void reserve(std::uint64_t count, std::uint64_t bytes_each) const { reserve_(list_, count, bytes_each); }

private:
    void* list_;
    void (*add_)(void*, finding&&);
    void (*reserve_)(void*, std::uint64_t, std::uint64_t);
};

}  // namespace onnxstream::passes
