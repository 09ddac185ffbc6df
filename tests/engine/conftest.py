"""One SparkSession for every Spark test of the suite (tests/engine/test_spark*.py): Spark
local mode takes seconds to start, and the tests share it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from tieeval.engine import spark as tspark  # only the Spark tests ask for it
    session = tspark.session("tieeval-tests")
    yield session
    session.stop()
