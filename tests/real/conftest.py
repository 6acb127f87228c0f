"""Shared, session-scoped fixtures for the real-model tests: one test-sized tiny model and one
in-process vLLM engine (building either costs tens of seconds on 2 cores)."""

import pytest

import real._env  # noqa: F401  (env vars before torch / vllm)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    from real.tiny import TinySettings, build_tiny

    return build_tiny(tmp_path_factory.mktemp("tiny") / "model", TinySettings.test())


@pytest.fixture(scope="session")
def engine(tiny_dir):
    from real.engine import Engine

    return Engine(tiny_dir, seed=0)


@pytest.fixture
def hf_model(tiny_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_dir, dtype="float32")
