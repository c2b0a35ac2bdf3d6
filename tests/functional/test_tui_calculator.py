"""Calculator: every number on screen is the estimators' number, for presets and a config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inferview.reference import estimators as est
from inferview.reference import presets
from inferview.tests.support.tui import app_factory_fixture, screen_text  # noqa: F401
from inferview.tui.calculation import CalcInputs, calculate
from inferview.tui.screens.calculator import CalculatorScreen

from inferview.model_config import parse_count


async def _set(pilot, selector: str, value: str) -> None:
    widget = pilot.app.screen.query_one(selector)
    widget.value = value
    await pilot.pause()


async def test_calculator_shows_the_estimators_numbers(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CalculatorScreen)
        await _set(pilot, "#calc-model", "llama-3-70b")
        await _set(pilot, "#calc-batch", "4")
        await _set(pilot, "#calc-context", "128k")
        await _set(pilot, "#calc-gpu", "h200")
        await _set(pilot, "#calc-gpus", "2")
        config = presets.get_model("llama-3-70b").config
        gpu_bytes = 2 * presets.get_gpu("h200").memory_bytes
        weights = est.weight_bytes(config, "bf16")
        r = screen.result
        assert r is not None
        assert r.kv_cache == est.kv_cache_bytes(config, 131072, 4, "bf16") == 4 * 40 * 2**30
        assert r.kv_per_token == est.kv_bytes_per_token(config, "bf16") == 327680
        assert r.weights == weights
        assert r.max_batch == est.max_batch_size(config, 131072, gpu_bytes, weights, "bf16")
        assert r.max_context == est.max_context_length(config, gpu_bytes, weights, 4, "bf16",
                                                       limit=config["max_position_embeddings"])
        text = screen_text(app)
        assert f"{r.kv_cache:,} B" in text
        assert "160 GiB" in text  # 4 sequences x 40 GiB: the seed's worked example, times four
        await _set(pilot, "#calc-kv-dtype", "fp8")
        assert screen.result.kv_cache == r.kv_cache // 2


async def test_calculator_reads_a_config_json_and_explains_bad_input(app_factory, tmp_path: Path) -> None:
    config = dict(presets.get_model("mistral-7b").config)
    path = tmp_path / "my-model" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        screen = app.screen
        await _set(pilot, "#calc-config", str(path))
        await _set(pilot, "#calc-context", "32768")
        assert screen.result.kv_cache == est.kv_cache_bytes(config, 32768, 1, "bf16")
        assert "my-model/config.json" in screen_text(app)
        await _set(pilot, "#calc-batch", "two")
        assert screen.result is None and "batch: 'two' is not a whole number" in screen.error
        await _set(pilot, "#calc-batch", "1")
        await _set(pilot, "#calc-config", str(tmp_path / "missing.json"))
        assert screen.result is None and "not found" in screen.error


def test_parse_count_reads_binary_suffixes() -> None:
    assert parse_count("128k", "context") == 131072
    assert parse_count("8,192", "context") == 8192
    assert parse_count("1M", "context") == 2**20
    with pytest.raises(ValueError, match="at least 1"):
        parse_count("0", "batch")


def test_sliding_window_and_mla_presets_go_through_the_estimators() -> None:
    for name in ("mistral-7b", "deepseek-v3", "gpt-oss-120b"):
        config = presets.get_model(name).config
        r = calculate(CalcInputs(name, context=65536, batch=2, kv_dtype="fp8"))
        assert r.kv_cache == est.kv_cache_bytes(config, 65536, 2, "fp8")
        assert r.moe == (name != "mistral-7b")


async def test_a_fractional_count_is_refused_not_truncated(app_factory) -> None:
    """"2.5" sequences used to read as 2; "1.5k" (= 1536) tokens is still a whole number."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        screen = app.screen
        await _set(pilot, "#calc-batch", "2.5")
        assert screen.result is None and "batch: '2.5' is not a whole number" in screen_text(app)
        await _set(pilot, "#calc-batch", "1")
        await _set(pilot, "#calc-context", "1.5k")
        assert screen.result is not None and "at 1,536 tokens" in screen_text(app)
    with pytest.raises(ValueError, match="not a whole number"):
        parse_count("1e999.0", "context")


async def test_a_context_past_the_limit_is_flagged_and_a_config_path_overrides_the_preset(
        app_factory, tmp_path: Path) -> None:
    path = tmp_path / "m" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(dict(presets.get_model("mistral-7b").config)))
    app = app_factory()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        screen = app.screen
        await _set(pilot, "#calc-model", "llama-3-70b")  # max_position_embeddings 8192
        await _set(pilot, "#calc-context", "16k")
        assert "past the model's limit" in screen_text(app)
        await _set(pilot, "#calc-context", "8k")
        assert "past the model's limit" not in screen_text(app)
        assert not screen.query_one("#calc-model").disabled
        await _set(pilot, "#calc-config", str(path))
        assert screen.query_one("#calc-model").disabled
        assert "Preset (config.json used)" in screen_text(app)
        assert screen.result.title != presets.get_model("llama-3-70b").title


async def test_the_challenge_list_shows_the_highlighted_id_for_the_cli(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        text = screen_text(app)
        assert "Best" not in text and "Graded in" in text
        cid = next(iter(app.services.get_library().challenges_in_order())).id
        assert f"id {cid} · inferview grade {cid} FILE" in text
