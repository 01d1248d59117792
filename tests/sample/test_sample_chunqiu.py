"""The bundled ChunQiu sample is what its generator writes (deterministic), and small."""

from __future__ import annotations

from pathlib import Path

import generate_chunqiu

import reteco_measures as rm

SAMPLE = Path(rm.__file__).resolve().parent / "sample" / "data"


def test_generator_is_deterministic_and_matches_the_bundled_sample(tmp_path):
    written = generate_chunqiu.generate(tmp_path)
    assert len(written) == 5
    for path in written:
        bundled = SAMPLE / path.relative_to(tmp_path)
        assert bundled.read_bytes() == path.read_bytes(), f"{bundled} differs from the generator's output"
    assert sum(p.stat().st_size for p in written) < 200_000
