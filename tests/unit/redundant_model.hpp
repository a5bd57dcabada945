// A model with one redundancy of each common kind, for the analyze and optimize tests:
//   relu = Relu(X); r2 = Identity(relu)                       (an Identity)
//   s1 = Sigmoid(X); s2 = Sigmoid(X)                           (a duplicate)
//   a = Add(r2, s1); Y = Add(a, s2)                            (the graph output)
//   unused = Mul(X, U), U a FLOAT[4] initializer only it reads  (a dead node, 16 bytes)
// 7 nodes; without the three redundant ones: Relu, Sigmoid, Add, Add.
#pragma once

#include "test_passes_builder.hpp"

namespace test_passes {

inline std::vector<std::byte> redundant_model() {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"relu"}, "relu"),      onnx_node("Identity", {"relu"}, {"r2"}, "id"),
                  onnx_node("Sigmoid", {"X"}, {"s1"}, "sig1"),     onnx_node("Sigmoid", {"X"}, {"s2"}, "sig2"),
                  onnx_node("Add", {"r2", "s1"}, {"a"}, "add"),    onnx_node("Add", {"a", "s2"}, {"Y"}, "add2"),
                  onnx_node("Mul", {"X", "U"}, {"unused"}, "dead")};
    main.initializers = {float_tensor("U", {4}, {1, 2, 3, 4})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    return model(graph(main));
}

}  // namespace test_passes
