// The page's files, embedded in the binary at build time (page/*.html, *.css, *.js).
#pragma once

#include <string_view>

namespace onnxstream::server {

[[nodiscard]] std::string_view page_html();
[[nodiscard]] std::string_view page_css();
[[nodiscard]] std::string_view page_js();
[[nodiscard]] std::string_view page_graph_js();  // graph.js: the Graph and Tensors tabs

}  // namespace onnxstream::server
