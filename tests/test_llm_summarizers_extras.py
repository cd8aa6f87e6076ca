"""The LLM SDKs are optional extras: imported lazily, and a missing one names its extra.

Each check runs in a fresh interpreter, so modules imported by other tests cannot hide an
eager import; a ``sys.meta_path`` finder plays the part of an environment without the SDK.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import orjson
import pytest

_BLOCKER = """
import sys

class _Blocker:
    # Refuses to import the named top-level packages, as if they were not installed.
    def __init__(self, names):
        self.names = set(names)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Blocker(BLOCKED))
"""


def _run(code: str, *, blocked: tuple[str, ...] = ()) -> dict[str, object]:
    prelude = f"BLOCKED = {list(blocked)!r}\n" + _BLOCKER if blocked else ""
    script = prelude + textwrap.dedent(code)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = orjson.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_importing_sessiontree_and_the_summariser_modules_imports_no_sdk() -> None:
    out = _run(
        """
        import sys, json
        import sessiontree
        from sessiontree.summarizers.anthropic import AnthropicSummarizer
        from sessiontree.summarizers.openai import OpenAISummarizer
        import sessiontree.summarizers.openai
        import sessiontree.summarizers.anthropic
        import sessiontree.summarizers._prompt
        import sessiontree.providers.endpoint
        import sessiontree.providers.openai
        import sessiontree.providers.anthropic
        import sessiontree.models.openai_chat
        import sessiontree.models.anthropic
        import sessiontree.summarizers.model
        import sessiontree.summarizers._transcript
        names = (OpenAISummarizer, AnthropicSummarizer)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("openai", "anthropic"))
        print(json.dumps({"loaded": loaded, "names": [n.__name__ for n in names]}))
        """
    )
    assert out == {"loaded": [], "names": ["OpenAISummarizer", "AnthropicSummarizer"]}


@pytest.mark.parametrize(
    ("cls", "sdk", "kwargs"),
    [
        ("OpenAISummarizer", "openai", "base_url='http://127.0.0.1:9/v1'"),
        ("AnthropicSummarizer", "anthropic", "base_url='http://127.0.0.1:9'"),
    ],
)
def test_missing_sdk_raises_missing_extra_error_naming_the_extra(
    cls: str, sdk: str, kwargs: str
) -> None:
    out = _run(
        f"""
        import json
        from sessiontree import {cls}
        from sessiontree.errors import MissingExtraError
        try:
            {cls}("some-model", {kwargs})
        except MissingExtraError as exc:
            print(json.dumps({{
                "message": str(exc),
                "extra": exc.extra,
                "is_import_error": isinstance(exc, ImportError),
                "cause": type(exc.__cause__).__name__,
            }}))
        else:
            print(json.dumps({{"message": "no error"}}))
        """,
        blocked=(sdk,),
    )
    assert f"pip install 'sessiontree[{sdk}]'" in str(out["message"])
    assert out["extra"] == sdk
    assert out["is_import_error"] is True
    assert out["cause"] == "ModuleNotFoundError"
