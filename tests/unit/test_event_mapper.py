"""The event mapper stores our events as plain JSON (ADR 0005): it takes no compressor
or cipher rather than ignore one (review of the storage simplification, issue 37)."""

from __future__ import annotations

import pytest
from eventsourcing.compressor import ZlibCompressor

from context_compaction.infrastructure.eventstore import EventMapper
from context_compaction.infrastructure.transcoding import PlainJSONTranscoder


@pytest.mark.parametrize("setting", ["compressor", "cipher"])
def test_a_mapper_given_a_compressor_or_cipher_is_refused_not_silently_plain(setting: str) -> None:
    # (any object: the mapper refuses before using it)
    value = ZlibCompressor() if setting == "compressor" else object()
    with pytest.raises(ValueError, match="no compressor or cipher"):
        EventMapper(transcoder=PlainJSONTranscoder(), **{setting: value})


def test_a_mapper_without_them_is_built() -> None:
    mapper = EventMapper(transcoder=PlainJSONTranscoder())
    assert mapper.compressor is None and mapper.cipher is None
