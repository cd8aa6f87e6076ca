"""What a user installs: ``__version__``, the project metadata and the distribution built
from the checkout (its metadata, what the sdist holds)."""

from __future__ import annotations

import email
import importlib.util
import os
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from backends import unavailable

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_comes_from_the_distribution_and_import_stays_light() -> None:
    probe = (
        "import sys, sessiontree\n"
        "light = 'importlib.metadata' not in sys.modules\n"
        "from importlib.metadata import version\n"
        "print(light, sessiontree.__version__, version('sessiontree'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
        check=True,
    )
    light, ours, installed = done.stdout.split()
    assert light == "True"
    assert ours == installed
    import sessiontree

    assert sessiontree.__version__ == installed


def test_dev_and_bench_are_dependency_groups_not_published_extras() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "dev" not in extras and "bench" not in extras
    groups = PYPROJECT["dependency-groups"]
    assert "pytest>=8" in groups["dev"]
    assert any(r.startswith("google-adk") for r in groups["bench"])


def test_metadata_names_license_python_versions_and_typing() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "## 0.1.0" in (ROOT / "CHANGELOG.md").read_text()
    classifiers = project["classifiers"]
    assert "Typing :: Typed" in classifiers
    assert (ROOT / "src" / "sessiontree" / "py.typed").is_file()
    minimum = int(project["requires-python"].removeprefix(">=3."))
    versions = [c for c in classifiers if c.startswith("Programming Language :: Python :: 3.")]
    assert versions and min(int(v.rsplit(".", 1)[1]) for v in versions) == minimum
    assert project["keywords"]


@pytest.fixture(scope="module")
def hatchling_available() -> None:
    if importlib.util.find_spec("hatchling") is None:
        unavailable("needs hatchling (the build backend; part of the dev group)")


def _backend(hook: str, out: Path) -> Path:
    """Call the build backend's PEP 517 ``hook`` on the checkout; the file or folder made."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, hatchling.build as b; print(b.{hook}(sys.argv[1]))",
            out,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out / done.stdout.strip()


@pytest.mark.usefixtures("hatchling_available")
def test_sdist_leaves_out_ci_and_ships_license_and_changelog(tmp_path: Path) -> None:
    sdist = _backend("build_sdist", tmp_path)
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    assert not [n for n in names if n.startswith(".ci")]
    for shipped in ("LICENSE", "CHANGELOG.md", "README.md", "src/sessiontree/py.typed"):
        assert shipped in names, shipped


@pytest.mark.usefixtures("hatchling_available")
def test_built_metadata_has_classifiers_license_and_no_dev_extra(tmp_path: Path) -> None:
    info = _backend("prepare_metadata_for_build_wheel", tmp_path)
    meta = email.message_from_string((info / "METADATA").read_text())
    assert meta["License-Expression"] == "MIT"
    assert "LICENSE" in meta.get_all("License-File", [])
    assert "Typing :: Typed" in meta.get_all("Classifier", [])
    extras = set(meta.get_all("Provides-Extra", []))
    assert {"web", "postgres", "openai", "anthropic"} <= extras
    assert not extras & {"dev", "bench"}
    assert meta["Keywords"]


@pytest.mark.usefixtures("hatchling_available")
def test_the_wheel_ships_the_viewers_templates_scripts_and_chart_library(tmp_path: Path) -> None:
    import zipfile

    wheel = _backend("build_wheel", tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    web = "sessiontree/web/"
    for shipped in (
        "templates/base.html",
        "templates/style.css",
        "static/list.js",
        "static/usage.js",
        "templates/transcript.html",
        "static/transcript.js",
        "static/transcript.css",
        "static/vendor/uplot/uPlot.iife.min.js",
        "static/vendor/uplot/uPlot.min.css",
        "static/vendor/uplot/LICENSE",
    ):
        assert web + shipped in names, shipped
