"""The search settings a door passes down: whether the semantic arm is used, and its tuning constants."""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from .. import vectors
from ..core.errors import InvalidInput


@dataclass(frozen=True)
class SearchSettings:
    """
    How search ranks and when it abstains. The defaults were tuned on the
    retrieval benchmark (``bench/retrieval``).

    :param semantic: use the semantic arm when the ``vectors`` extra is installed
    :param rrf_k: the reciprocal rank fusion constant ``k``
    :param rrf_bm25: weight of the BM25 ranking (BM25-heavy: equal weights cost recall on an outside dataset)
    :param rrf_vector: weight of the vector ranking
    :param vector_min_similarity: least cosine similarity for a related entity (one that is not a match)
    :param vector_band: ... and at most this far below the best similarity
    :param related_limit: most related entities a search returns
    :param vector_elsewhere_margin: abstain when another project's closest entity beats this one's by more than this
    """

    semantic: bool = True
    rrf_k: float = 60.0
    rrf_bm25: float = 1.0
    rrf_vector: float = 0.5
    vector_min_similarity: float = 0.25
    vector_band: float = 0.1
    related_limit: int = 3
    vector_elsewhere_margin: float = 0.0

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> "SearchSettings":
        """
        Settings from a mapping of field names (such as Datasette's plugin configuration), checked.

        :param values: field names to values; missing fields keep their defaults
        :raises InvalidInput: naming an unknown field or a value of the wrong type
        """
        fields = {f.name: f for f in dataclasses.fields(cls)}
        checked: dict[str, object] = {}
        for name, value in values.items():
            if name not in fields:
                raise InvalidInput(f"search.{name}: unknown setting; the settings are {', '.join(fields)}")
            if name == "semantic":
                if not isinstance(value, bool):
                    raise InvalidInput(f"search.semantic: must be true or false, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidInput(f"search.{name}: must be a number, got {value!r}")
            elif name == "related_limit" and (value < 0 or value != int(value)):
                raise InvalidInput(f"search.related_limit: must be a whole number, 0 or more, got {value!r}")
            checked[name] = value
        return cls(**checked)  # type: ignore[arg-type]

    def semantic_on(self) -> bool:
        "Whether the semantic arm runs: asked for, and the ``vectors`` extra is installed."
        return self.semantic and vectors.extra_installed()
