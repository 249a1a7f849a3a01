"""Shared helpers of the baton package's tests (run by ctest with PYTHONPATH=build/python)."""
import os
import socket

import pytest

BATON_ENV = ("BATON_CHECKPOINT_DIR", "BATON_PROGRESS_FILE", "BATON_ATTEMPT",
             "BATON_GRACE_SECONDS", "BATON_JOB_ID")


@pytest.fixture(autouse=True)
def no_baton_env(monkeypatch):
    """Tests start outside any baton job, whatever the shell running them has set."""
    for var in BATON_ENV:
        monkeypatch.delenv(var, raising=False)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def source_dir():
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
