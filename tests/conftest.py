from __future__ import annotations

import os

# No network, ever: litellm must use its bundled model map (ADR 0008).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Our PostgreSQL connections carry a name per test process, so a test that drops
# connections drops only its own (xdist runs several test processes at once).
# The pid of the pytest main process keeps two test runs on one server apart.
os.environ.setdefault("CTXC_TEST_RUN", str(os.getpid()))
os.environ["PGAPPNAME"] = (
    f"ctxc-tests-{os.environ['CTXC_TEST_RUN']}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
)
# The fake provider listens on loopback; never send it through a proxy.
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# Property tests and fuzzers draw the same examples on every run by default, so a CI run
# is the run its author saw (a landing must not depend on the luck of one draw). To
# explore new examples, set CTXC_HYPOTHESIS_PROFILE=explore; whatever it finds becomes a
# deterministic regression case in the test it broke.
hypothesis_settings.register_profile("ci", derandomize=True)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("CTXC_HYPOTHESIS_PROFILE", "ci"))

from backends import POOL, POSTGRES_URL, Databases, MakeHarness, postgres_reachable
from context_compaction.application.runtime.bus import MessageBus
from fakeprovider import FakeProvider
from helpers import Harness

_postgres_problem: list[str | None] = []


def _require_postgres() -> None:
    if not _postgres_problem:
        _postgres_problem.append(postgres_reachable())
    if _postgres_problem[0] is not None:
        # Fail, never skip: a green run must have exercised PostgreSQL (issue 5).
        pytest.fail(
            f"PostgreSQL is not reachable at {POSTGRES_URL} ({_postgres_problem[0]}). "
            "Start it (.ci/run does) or deselect these tests with -m 'not postgres'.",
            pytrace=False,
        )


#: The backends a test's ``backend`` fixture runs on, unless its module sets its own
#: ``BACKENDS`` (handler unit tests: ``BACKENDS = ("memory",)``, ADR 0045) or the test
#: is marked ``@pytest.mark.backends(...)`` (a test of storage among handler tests).
STORAGE_BACKENDS = ("sqlite", "postgres")


def _parametrized_by_the_test(metafunc: pytest.Metafunc, name: str) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if name in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names):
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # (a test that names its own (backend, ...) combinations parametrizes it itself)
    if "backend" not in metafunc.fixturenames or _parametrized_by_the_test(metafunc, "backend"):
        return
    marker = metafunc.definition.get_closest_marker("backends")
    kinds = marker.args if marker else getattr(metafunc.module, "BACKENDS", STORAGE_BACKENDS)
    # CTXC_TEST_BACKENDS=sqlite,postgres runs the handler unit tests on the databases too.
    forced = os.environ.get("CTXC_TEST_BACKENDS")
    if forced and not marker:
        kinds = tuple(k.strip() for k in forced.split(",") if k.strip())
    metafunc.parametrize(
        "backend",
        [pytest.param(k, marks=pytest.mark.postgres) if k == "postgres" else k for k in kinds],
        indirect=True,
    )


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        _require_postgres()
    return str(request.param)


@pytest.fixture
def databases(backend: str, tmp_path: Path) -> Iterator[Databases]:
    dbs = Databases(backend, tmp_path)
    yield dbs
    dbs.cleanup()


@pytest.fixture
def pg_databases(tmp_path: Path) -> Iterator[Databases]:
    """PostgreSQL only (tests of PostgreSQL-specific faults)."""
    _require_postgres()
    dbs = Databases("postgres", tmp_path, recycle=False)
    yield dbs
    dbs.cleanup()


@pytest.fixture
def make_harness(databases: Databases) -> MakeHarness:
    """``make_harness(name="main", **settings)``: a harness on the named database of this test."""
    return databases.harness


@pytest.fixture
def harness(make_harness: MakeHarness) -> Harness:
    return make_harness("main")


@pytest.fixture
def bus(harness: Harness) -> MessageBus:
    return harness.bus


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    fake = FakeProvider().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def rt_bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MessageBus]:
    """One SQLite database for a module's round-trip examples (a session each): the
    framework integrations' property tests; bootstrapping per example would dominate."""
    from context_compaction import Settings, bootstrap

    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path_factory.mktemp('rt') / 'rt.db'}",
                             summarizer="extractive"))
    yield bus
    bus.close()


@pytest.fixture(params=["lazy-tracking", "every-dict-tracked"])
def handout_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The hand-out copy's two ways to find a flat dict: the collector's lazy dict tracking
    (CPython up to 3.13), or the type scan of interpreters that track every dict (3.14,
    GH-127010), forced here on any interpreter (issue 38)."""
    from context_compaction.application.runtime import handout

    if request.param == "every-dict-tracked":
        monkeypatch.setattr(handout, "LAZY_TRACKING", False)
    elif not handout.LAZY_TRACKING:
        pytest.skip("this interpreter tracks every dict")
    return str(request.param)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The emptied PostgreSQL schemas this process kept for the next test go (backends.POOL)."""
    try:
        POOL.close()
    except Exception:  # noqa: BLE001 - a run without PostgreSQL left none
        pass
