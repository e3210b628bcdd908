"""Our secret scanner beside detect-secrets, the maintained scanner on PyPI, on the same text in one run.

Three questions, each answered for both:

- found: of the outside audit's formats and variations (``tests/test_secrets.py``'s
  FORMATS), how many each finds;
- false alarms: of the ordinary text the retrieval benchmarks hold (entities,
  observations, conversation turns, queries: a few thousand strings), how many
  each flags;
- speed: milliseconds per kilobyte over that ordinary text.

detect-secrets runs twice: with every plugin (its entropy detectors included),
and without its two high-entropy plugins, which are what make it flag prose.

Run: ``pip install detect-secrets==1.5.0 && python bench/secret_scanners.py``
"""

import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datasette_memory.core.secrets import find_secrets  # noqa: E402
from tests.test_secrets import FORMATS, strings_in  # noqa: E402

ENTROPY_PLUGINS = ("Base64HighEntropyString", "HexHighEntropyString")


def ordinary_texts() -> list[str]:
    "Every string of the retrieval corpora and their queries."
    texts = []
    for folder in (ROOT / "bench" / "retrieval", ROOT / "bench" / "retrieval" / "conversations"):
        for name in ("corpus.jsonl", "updates.jsonl", "queries.jsonl", "heldout.jsonl"):
            for line in (folder / name).read_text().splitlines():
                texts += [t for t in strings_in(json.loads(line)) if t.strip()]
    return texts


def detect_secrets_scanner(with_entropy: bool):
    "A function text -> found, running detect-secrets' plugins on each line, or None if it is not installed."
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import transient_settings
    except ImportError:
        return None
    plugins = [
        {"name": cls.__name__} for cls in get_mapping_from_secret_type_to_class().values()
        if with_entropy or cls.__name__ not in ENTROPY_PLUGINS
    ]

    def scan(text: str) -> bool:
        with transient_settings({"plugins_used": plugins}):
            return any(True for line in text.splitlines() or [text] for _ in scan_line(line))

    return scan


def measure(name: str, scan, texts: list[str]) -> None:
    found = [variation for variation, text, _, _ in FORMATS if scan(text)]
    started = time.perf_counter()
    alarms = [t for t in texts if scan(t)]
    elapsed = time.perf_counter() - started
    kilobytes = sum(len(t.encode()) for t in texts) / 1000
    missed = [variation for variation, *_ in FORMATS if variation not in found]
    print(f"{name:40} found {len(found):2}/{len(FORMATS)}   false alarms {len(alarms):5}/{len(texts)}   "
          f"{elapsed * 1000 / kilobytes:6.3f} ms/KB")
    if missed:
        print(f"{'':40} missed: {', '.join(missed)}")
    if alarms:
        print(f"{'':40} e.g. flagged: {alarms[0][:70]!r}")


def main() -> None:
    texts = ordinary_texts()
    print(f"{len(FORMATS)} formats and variations; {len(texts)} ordinary strings "
          f"({sum(len(t.encode()) for t in texts) / 1000:.0f} KB)\n")
    measure("datasette-memory (core/secrets.py)", lambda text: bool(find_secrets(text)), texts)
    for with_entropy in (True, False):
        scan = detect_secrets_scanner(with_entropy)
        label = "detect-secrets, " + ("every plugin" if with_entropy else "without entropy plugins")
        if scan is None:
            print(f"{label:40} not installed: pip install detect-secrets==1.5.0")
        else:
            measure(label, scan, texts)


if __name__ == "__main__":
    main()
