"""What installing the package asks of someone's Python, and the exact set the tests run with.

pyproject.toml gives ranges, so the plugin can join a Datasette without replacing its
packages; requirements/lock.txt pins the set that is tested, and tests/run installs
it. The lock must pin every requirement at a version its range admits, and the
environment running these tests must be that set.
"""

import email.parser
import importlib.metadata
import pathlib
import tomllib
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = pathlib.Path(__file__).parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
EXTRAS = ("test", "vectors", "replicate")  # what tests/run installs


def requirements() -> list[Requirement]:
    "Every requirement pyproject.toml declares: the runtime ones and each extra's."
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = project["dependencies"] + [line for extra in project["optional-dependencies"].values() for line in extra]
    return [Requirement(line) for line in lines]


def installed_here(requirement: Requirement) -> bool:
    "Whether ``requirement`` applies on this machine when tests/run installs the package with its extras."
    return requirement.marker is None or any(requirement.marker.evaluate({"extra": extra}) for extra in EXTRAS)


def locked() -> dict[str, Version]:
    "The lock's pins, by canonical name."
    pins = {}
    for number, line in enumerate(LOCK.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, separator, version = line.partition("==")
        assert separator and Requirement(line).specifier, f"{LOCK.name} line {number} is not name==version: {line!r}"
        pins[canonicalize_name(name)] = Version(version)
    return pins


@pytest.mark.parametrize("requirement", requirements(), ids=str)
def test_a_requirement_is_a_range(requirement):
    "No exact pin (installing the plugin would replace someone's copy), and a bound on each side."
    operators = {spec.operator for spec in requirement.specifier}
    assert not operators & {"==", "==="}, f"{requirement} pins one version: give a range, and the version in {LOCK.name}"
    assert operators & {">=", ">", "~="}, f"{requirement} has no lower bound: start it at the version tested"
    assert operators & {"<", "~="}, f"{requirement} has no upper bound: stop it before the next release that may break"


def test_the_lock_pins_every_requirement_inside_its_range():
    pins = locked()
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {LOCK.name}: regenerate it as its header says"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{LOCK.name} pins {name}=={pins[name]}, outside {requirement}: widen the range or regenerate the lock"
        )


def test_the_lock_is_whole_and_nothing_more():
    "The lock pins exactly what tests/run's install needs here: each requirement and, in turn, what each installed one needs."
    needed = needed_here()
    pins = set(locked())
    assert sorted(needed - pins) == [], f"{LOCK.name} does not pin these: regenerate it as its header says"
    assert sorted(pins - needed) == [], f"{LOCK.name} pins these, which nothing needs: regenerate it"


def needed_here() -> set[str]:
    "The names tests/run's install brings in on this machine: its requirements, then what each installed one needs."
    queue = [requirement for requirement in requirements() if installed_here(requirement)]
    extras_of: dict[str, set[str]] = {}
    while queue:
        requirement = queue.pop()
        name = canonicalize_name(requirement.name)
        if name in extras_of and requirement.extras <= extras_of[name]:
            continue
        extras = extras_of.setdefault(name, {""})
        extras |= requirement.extras
        try:
            lines = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue  # test_these_tests_run_on_the_locked_set names it
        for line in lines:
            needs = Requirement(line)
            if needs.marker is None or any(needs.marker.evaluate({"extra": extra}) for extra in extras):
                queue.append(needs)
    return set(extras_of)


def test_these_tests_run_on_the_locked_set():
    "tests/run installs the lock; a package at another version means this run is not the tested set."
    differ = []
    for name, version in locked().items():
        try:
            found = Version(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            differ.append(f"{name} is not installed ({LOCK.name} pins {version})")
            continue
        if found.public != version.public:
            differ.append(f"{name} {found} is installed, {LOCK.name} pins {version}")
    assert differ == [], "run bash tests/run, which installs the lock: " + "; ".join(differ)


def test_the_wheel_says_what_it_is(wheel):
    "A Datasette plugin, typed, with its addresses, asking for ranges."
    archive = zipfile.ZipFile(wheel)
    (metadata_name,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
    metadata = email.parser.Parser().parsestr(archive.read(metadata_name).decode())
    assert "Framework :: Datasette" in metadata.get_all("Classifier")
    assert {url.split(",")[0] for url in metadata.get_all("Project-URL")} >= {"Homepage", "Issues", "Changelog"}
    assert [line for line in metadata.get_all("Requires-Dist") if "==" in line.split(";")[0]] == []
    assert "datasette_memory/py.typed" in archive.namelist()
