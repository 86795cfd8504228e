"""get_model(): the lab model by default, a real one named by LABKIT_MODEL, clear errors else.

Real providers are only constructed here, never called; outbound connections are refused.
"""

from __future__ import annotations

import sys

import pytest

from labkit.model import LabModel, get_model

pytestmark = pytest.mark.allow_hosts([])  # pytest-socket: no connect() in this module

PROVIDER_ENV = ("LABKIT_MODEL", "LABKIT_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_default_is_the_lab_model():
    model = get_model(window=60_000)
    assert isinstance(model, LabModel) and model.profile["max_input_tokens"] == 60_000


@pytest.mark.parametrize("value", ["lab", "labkit", "lab-model", "", "  lab  "])
def test_labkit_model_lab_gives_the_lab_model(clean_env, value):
    clean_env.setenv("LABKIT_MODEL", value)
    assert isinstance(get_model(), LabModel)


def test_an_explicit_spec_wins_over_the_environment(clean_env):
    clean_env.setenv("LABKIT_MODEL", "nosuch:model")
    assert isinstance(get_model("lab"), LabModel)


def test_an_unknown_provider_lists_the_supported_ones(clean_env):
    clean_env.setenv("LABKIT_MODEL", "mistral:large")
    with pytest.raises(ValueError, match=r"unknown provider 'mistral'.*anthropic, ollama, openai"):
        get_model()


@pytest.mark.parametrize("spec", ["openai", "openai:", ":gpt-4.1-mini", "gpt-4.1-mini"])
def test_a_malformed_spec_is_refused(spec):
    with pytest.raises(ValueError, match="provider:model"):
        get_model(spec)


@pytest.mark.parametrize("spec, key", [("openai:gpt-4.1-mini", "OPENAI_API_KEY"),
                                       ("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY")])
def test_a_missing_key_names_the_environment_variable(clean_env, spec, key):
    clean_env.setenv("LABKIT_MODEL", spec)
    with pytest.raises(RuntimeError, match=key):
        get_model()


@pytest.mark.parametrize("spec, module, package", [
    ("openai:gpt-4.1-mini", "langchain_openai", "langchain-openai"),
    ("anthropic:claude-haiku-4-5", "langchain_anthropic", "langchain-anthropic"),
    ("ollama:llama3.2", "langchain_ollama", "langchain-ollama"),
])
def test_a_missing_package_is_named(clean_env, spec, module, package):
    clean_env.setitem(sys.modules, module, None)  # makes `import module` fail, as if absent
    with pytest.raises(ImportError, match=f"needs the {package} package"):
        get_model(spec)


def test_openai_with_a_base_url_is_built_for_that_endpoint(clean_env):
    from langchain_openai import ChatOpenAI

    clean_env.setenv("LABKIT_MODEL", "openai:deepseek-chat")
    clean_env.setenv("LABKIT_BASE_URL", "https://api.deepseek.com")
    clean_env.setenv("OPENAI_API_KEY", "sk-fake-key-for-a-test")
    model = get_model()
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "deepseek-chat"
    assert model.openai_api_base == "https://api.deepseek.com"


def test_ollama_needs_no_key(clean_env):
    from langchain_ollama import ChatOllama

    model = get_model("ollama:llama3.2")
    assert isinstance(model, ChatOllama) and model.model == "llama3.2"


def test_the_notebooks_say_what_the_switch_does():
    """Every notebook's first cell says what LABKIT_MODEL changes: nothing but its "On your model"
    section, which runs through labkit.yourmodel.on_your_model; no other cell calls get_model()."""
    import json
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        first = "".join(cells[0]["source"])
        code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        has_section = any("".join(c["source"]).startswith("## On your model") for c in cells)
        assert "get_model(" not in code, f"{path.name} calls get_model() in a cell"
        if has_section:
            assert "*On your model*" in first and "on_your_model(" in code, path.name
        else:
            assert "chooses only what `labkit.get_model()` returns" in first, path.name
