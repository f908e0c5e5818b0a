"""service.deliveries: a try's error is kept whole, or cut after a whole word."""

from __future__ import annotations

from service.deliveries import MAX_ERROR, clip


def test_an_error_that_fits_is_kept_whole_and_a_long_one_is_cut_at_a_word() -> None:
    reason = "token endpoint: refused: 10.0.0.5 is not a public address"
    assert clip(reason) == reason
    long = "refused: " + " ".join(f"word{i}" for i in range(200))
    cut = clip(long)
    assert len(cut) <= MAX_ERROR and cut.endswith("…")
    assert long.startswith(cut[:-1]) and long[len(cut) - 1] == " "  # a whole word
    assert clip("x" * 600) == "x" * (MAX_ERROR - 1) + "…"
