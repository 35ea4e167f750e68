import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402

import ember  # noqa: E402


@pytest.fixture
def x64():
    """Runs the test with jax_enable_x64 on (restored afterwards)."""
    old = ember.config.jax_enable_x64
    ember.config.update("jax_enable_x64", True)
    yield
    ember.config.update("jax_enable_x64", old)
