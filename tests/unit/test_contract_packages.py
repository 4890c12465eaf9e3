"""``commands`` and ``results`` are packages of topic modules (ADR 0092); each
re-exports every name of its topics, so ``commands.X`` / ``results.X`` and the
``from ...contracts.results import X`` lines of hosts keep working."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from context_compaction.application.contracts import commands, results


def _topic_classes(package: ModuleType) -> dict[str, type]:
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found |= {
            name: value for name, value in vars(module).items()
            if isinstance(value, type) and value.__module__ == module.__name__ and not name.startswith("_")
        }
    return found


def test_every_class_of_a_topic_is_a_name_of_its_package() -> None:
    for package, at_least in ((commands, 30), (results, 44)):
        classes = _topic_classes(package)
        assert len(classes) >= at_least
        missing = sorted(name for name, cls in classes.items() if getattr(package, name, None) is not cls)
        assert missing == [], package.__name__
        assert set(classes) <= set(package.__all__)


def test_every_routed_command_is_a_name_of_the_package() -> None:
    assert all(getattr(commands, kind.__name__) is kind for kind in commands.ROUTES)


def test_the_checkpoint_answer_shows_every_stored_checkpoint_field() -> None:
    # ``CheckpointInfo`` declares its own fields (ADR 0092: ``Checkpoint`` is the stored,
    # slotted dataclass); this keeps the two lists from drifting apart. ``provider_state``
    # stays in the event: the answer names who made it (``native_state``).
    from dataclasses import fields

    from context_compaction.domain.checkpoint import Checkpoint

    stored = {f.name for f in fields(Checkpoint)} - {"provider_state"}
    assert len(stored) >= 15
    assert stored <= set(results.CheckpointInfo.model_fields)
