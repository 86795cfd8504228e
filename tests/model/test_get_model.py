"""get_model(): the lab model by default, a real one named by LABKIT_MODEL, clear errors else.

Real providers are only constructed here, never called; outbound connections are refused.
"""

from __future__ import annotations

import sys

import pytest

from labkit.model import LabModel, describe, get_model

pytestmark = pytest.mark.allow_hosts([])  # pytest-socket: no connect() in this module

PROVIDER_ENV = ("LABKIT_MODEL", "LABKIT_BASE_URL", "LABKIT_WINDOW", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                "GOOGLE_API_KEY", "GEMINI_API_KEY")


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
    clean_env.setenv("LABKIT_MODEL", "nosuch:large")
    with pytest.raises(ValueError, match=r"unknown provider 'nosuch'.*anthropic.*google_genai.*ollama"):
        get_model()


def test_a_provider_labkit_does_not_list_still_goes_to_init_chat_model(clean_env):
    """mistralai is one of init_chat_model's providers; its package is not installed here."""
    clean_env.setitem(sys.modules, "langchain_mistralai", None)
    with pytest.raises(ImportError, match="langchain_mistralai|langchain-mistralai"):
        get_model("mistralai:mistral-large-latest")


def test_google_genai_is_built_when_its_key_is_set(clean_env):
    from langchain_google_genai import ChatGoogleGenerativeAI

    with pytest.raises(RuntimeError, match="GOOGLE_API_KEY"):
        get_model("google_genai:gemini-2.5-flash")
    clean_env.setenv("GOOGLE_API_KEY", "fake-key-for-a-test")
    assert isinstance(get_model("google_genai:gemini-2.5-flash"), ChatGoogleGenerativeAI)


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
    ("google_genai:gemini-2.5-flash", "langchain_google_genai", "langchain-google-genai"),
])
def test_a_missing_package_is_named(clean_env, spec, module, package):
    clean_env.setitem(sys.modules, module, None)  # makes `import module` fail, as if absent
    with pytest.raises(ImportError, match=f"needs the {package} package.*make setup"):
        get_model(spec)


def test_installed_from_the_wheel_the_missing_package_is_pip_installed(clean_env):
    """Outside a checkout there is no `make setup` and no .tools/bin/uv: the advice is pip's."""
    from labkit.model import providers

    clean_env.setitem(sys.modules, "langchain_openai", None)
    clean_env.setattr(providers, "in_checkout", lambda: False)
    advice = r"run `pip install langchain-openai` .*labkit-context\[providers\]"
    with pytest.raises(ImportError, match=advice) as e:
        get_model("openai:gpt-4.1-mini")
    assert "make setup" not in str(e.value) and ".tools" not in str(e.value)


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


def test_labkit_window_sets_the_profile_of_a_model_with_none(clean_env):
    """An OpenAI-compatible endpoint's model has no profile; LABKIT_WINDOW gives it a window."""
    clean_env.setenv("LABKIT_BASE_URL", "https://api.deepseek.com")
    clean_env.setenv("OPENAI_API_KEY", "sk-fake-key-for-a-test")
    assert not (get_model("openai:deepseek-chat").profile or {}).get("max_input_tokens")
    clean_env.setenv("LABKIT_WINDOW", "64_000")
    assert get_model("openai:deepseek-chat").profile["max_input_tokens"] == 64_000


@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_a_bad_labkit_window_is_refused(clean_env, value):
    clean_env.setenv("LABKIT_WINDOW", value)
    with pytest.raises(ValueError, match="LABKIT_WINDOW"):
        get_model("ollama:llama3.2")


def test_a_base_url_turns_on_stream_usage(clean_env):
    """ChatOpenAI turns it on for OpenAI's own API only; get_model for any endpoint."""
    from langchain_openai import ChatOpenAI

    clean_env.setenv("OPENAI_API_KEY", "sk-fake-key-for-a-test")
    url = "http://127.0.0.1:9/v1"
    assert not ChatOpenAI(model="deepseek-chat", base_url=url).stream_usage
    clean_env.setenv("LABKIT_BASE_URL", url)
    assert get_model("openai:deepseek-chat").stream_usage


def test_describe_the_lab_model():
    assert describe(LabModel(window=128_000)) == "the lab model (offline, scripted), window 128,000"
    assert describe(LabModel(profile=None)).endswith("no window: deepagents' 170,000-token fallback applies")


def test_describe_a_real_model_and_where_its_window_comes_from(clean_env):
    clean_env.setenv("OPENAI_API_KEY", "sk-fake-key-for-a-test")
    clean_env.setenv("LABKIT_BASE_URL", "http://127.0.0.1:8000/v1")
    model = get_model("openai:fake-model")
    assert describe(model) == ("openai:fake-model at http://127.0.0.1:8000/v1, "
                               "no window: deepagents' 170,000-token fallback applies")
    clean_env.setenv("LABKIT_WINDOW", "32000")
    assert describe(get_model("openai:fake-model")) == (
        "openai:fake-model at http://127.0.0.1:8000/v1, window 32,000 (LABKIT_WINDOW)")


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_an_ollama_server_that_is_down_fails_at_the_first_call(clean_env):
    """Building needs no server; the first call is refused with httpx's bare ConnectError, which
    does not name Ollama — get_model's docstring says to run ``ollama serve``."""
    import socket

    import httpx

    with socket.socket() as s:  # a port nothing listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = get_model("ollama:llama3.2", base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(httpx.ConnectError, match="Connection refused"):
        model.invoke("hello")
