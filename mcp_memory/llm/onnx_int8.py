"""Run the MiniLM model's int8 weights through int8 kernels instead of widening them to float32.

The packaged model stores each weight matrix as int8 with one float scale per output column, and
dequantizes it in the graph (`Cast` to float, `Mul` by the scales) before a float32 `MatMul`.
onnxruntime folds that into a float32 matrix at load, so every text streams all the weights, at
four times their int8 size, through float kernels. Here each such chain becomes one
`DynamicQuantizeMatMul` (an onnxruntime operator): the activations are quantized to uint8 per call,
the weights keep their values and scales, and the product is computed with integer kernels. Moving
a quarter of the bytes through integer kernels makes a query's embedding markedly faster on CPU,
while the vectors stay very close to the float path's (bench/embedder.py measures both; see
docs/benchmarks.md).

The weights go in as uint8 (each int8 value + 128, zero point 128), not as int8: x86's AVX2 kernel
for uint8 x int8 sums pairs of products in saturating 16-bit lanes, which cost accuracy here (the
vectors strayed visibly further from the float path's than with uint8 x uint8).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
from onnx import helper, numpy_helper

MICROSOFT_DOMAIN = "com.microsoft"  # onnxruntime's contrib operators, DynamicQuantizeMatMul among them


def with_int8_matmuls(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """Rewrite `MatMul(x, Mul(Cast(int8 W), scale))` into `DynamicQuantizeMatMul(x, W + 128, scale, 128)`.

    Returns the model (changed in place) and how many matrix products were rewritten. Chains that
    do not have exactly that shape (a shared weight, a scale that is not one per column) are left
    as they are, so the result always computes the same function up to activation rounding.
    """
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    readers = Counter(name for node in graph.node for name in node.input)

    replaced: dict[int, onnx.NodeProto] = {}  # id(MatMul) -> its replacement
    dropped: set[int] = set()  # the Cast and Mul that fed it
    added: list[onnx.TensorProto] = []
    for matmul in graph.node:
        chain = _dequantized_weight(matmul, producer, initializers, readers)
        if chain is None:
            continue
        cast, mul, weights, scales = chain
        columns = weights.dims[1]
        scale = numpy_helper.to_array(initializers[scales]).astype(np.float32)
        if scale.size != columns:
            continue
        shifted = (numpy_helper.to_array(weights).astype(np.int16) + 128).astype(np.uint8)
        names = [f"{weights.name}_{part}" for part in ("uint8", "column_scale", "zero_point")]
        added.append(numpy_helper.from_array(shifted, names[0]))
        added.append(numpy_helper.from_array(scale.reshape(columns), names[1]))
        added.append(numpy_helper.from_array(np.full(columns, 128, dtype=np.uint8), names[2]))
        replaced[id(matmul)] = helper.make_node(
            "DynamicQuantizeMatMul",
            [matmul.input[0], *names],
            list(matmul.output),
            name=f"{matmul.output[0]}_int8",  # outputs are unique; node names may be empty
            domain=MICROSOFT_DOMAIN,
        )
        dropped.update((id(cast), id(mul)))

    if not replaced:
        return model, 0
    nodes = [replaced.get(id(n), n) for n in graph.node if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    # The int8 weights and the scales the Mul nodes read are now unread: drop them, or onnxruntime
    # warns about each at load and the model carries both copies.
    still_read = {name for node in graph.node for name in node.input}
    kept = [i for i in graph.initializer if i.name in still_read]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(o.domain == MICROSOFT_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MICROSOFT_DOMAIN, 1))
    return model, len(replaced)


def _dequantized_weight(
    matmul: onnx.NodeProto,
    producer: dict[str, onnx.NodeProto],
    initializers: dict[str, onnx.TensorProto],
    readers: Counter[str],
) -> tuple[onnx.NodeProto, onnx.NodeProto, onnx.TensorProto, str] | None:
    """(Cast, Mul, int8 weight, scale name) when `matmul`'s right side is a dequantized int8 matrix."""
    if matmul.op_type != "MatMul" or len(matmul.input) != 2:
        return None
    mul = producer.get(matmul.input[1])
    if mul is None or mul.op_type != "Mul" or readers[mul.output[0]] != 1:
        return None
    cast = producer.get(mul.input[0])
    scales = mul.input[1]
    if cast is None or cast.op_type != "Cast" or readers[cast.output[0]] != 1 or scales not in initializers:
        return None
    weights = initializers.get(cast.input[0])
    if weights is None or weights.data_type != onnx.TensorProto.INT8 or len(weights.dims) != 2:
        return None
    return cast, mul, weights, scales
