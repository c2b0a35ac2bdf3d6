"""``inferview calc``: exact numbers written out by hand, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from inferview.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def kv_json(*args: str) -> dict:
    r = run("calc", "kv", *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_llama3_70b_128k():
    # 80 layers x 8 kv heads x 128 dim x 2 (K, V) x 2 bytes x 131072 tokens = 40 GiB
    d = kv_json("--model", "llama-3-70b", "--seq-len", "131072")
    assert d["kv_cache_bytes"] == 80 * 8 * 128 * 2 * 2 * 131072 == 42_949_672_960
    assert d["kv_bytes_per_token"] == 327_680
    assert d["kv_cache_human"].startswith("40 GiB")
    assert kv_json("--model", "llama-3-70b", "--seq-len", "128k")["kv_cache_bytes"] == 42_949_672_960


def test_mistral_beyond_window():
    # 32 layers x 8 kv heads x 128 x 2 x 2 bytes x 4096 (window), although 32768 tokens were asked
    d = kv_json("--model", "mistral-7b", "--seq-len", "32768", "--batch", "2")
    assert d["kv_cache_bytes"] == 2 * 32 * 8 * 128 * 2 * 2 * 4096 == 1_073_741_824
    assert d["sliding_layers"] == 32 and d["sliding_window"] == 4096


def test_deepseek_v3_mla():
    # 61 layers x (512 + 64) x 2 bytes = 70,272 bytes per token
    d = kv_json("--model", "deepseek-v3", "--seq-len", "1000")
    assert d["kv_bytes_per_token"] == 61 * (512 + 64) * 2 == 70_272
    assert d["kv_cache_bytes"] == 70_272 * 1000
    assert d["attention"] == "mla"


def test_gpu_fit():
    d = kv_json("--model", "llama-3-8b", "--seq-len", "8192", "--gpu", "h100-sxm")
    g = d["gpu"]
    per_seq = 32 * 8 * 128 * 2 * 2 * 8192
    budget = 80 * 2**30 - d["weight_bytes"]
    assert g["budget_bytes"] == budget and g["max_batch_size"] == budget // per_seq
    assert g["max_context_tokens"] == budget // (32 * 8 * 128 * 2 * 2)


def test_config_file(tmp_path):
    cfg = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256, "vocab_size": 100,
           "intermediate_size": 512}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    d = kv_json("--config", str(p), "--seq-len", "10", "--dtype", "int4")
    assert d["kv_cache_bytes"] == 2 * 2 * 4 * 64 * 10 // 2


def test_text_output_mentions_window_and_gpu():
    r = run("calc", "kv", "--model", "gpt-oss-120b", "--seq-len", "65536", "--gpu", "h200",
              "--weight-dtype", "int4")
    assert r.exit_code == 0
    assert "18 of 36 layers keep only the last 128 tokens" in r.output
    assert "largest batch" in r.output


def test_models_lists_sources():
    r = run("calc", "models", "--json")
    d = json.loads(r.output)
    names = {m["name"] for m in d["models"]}
    assert {"llama-2-7b", "deepseek-v3", "gpt-oss-120b", "mixtral-8x7b"} <= names
    assert all(m["source"] for m in d["models"]) and all(g["source"] for g in d["gpus"])
    text = run("calc", "models").output
    assert "source:" in text
    # The listed active count leaves the input embedding out; say so beside a source that counts it.
    assert "12.75B active" in text and "input-embedding lookup not" in text


def test_errors_are_one_line(tmp_path):
    r = run("calc", "kv", "--model", "llama-9", "--seq-len", "5")
    assert r.exit_code == 2 and "unknown model" in r.output
    r = run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "lots")
    assert r.exit_code == 2 and "not a whole number" in r.output
    r = run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "0")
    assert r.exit_code == 2
    r = run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "5", "--gpu", "tpu")
    assert r.exit_code == 2 and "unknown GPU" in r.output
    r = run("calc", "kv", "--seq-len", "5")
    assert r.exit_code == 2 and "exactly one" in r.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"num_hidden_layers": ')
    r = run("calc", "kv", "--config", str(bad), "--seq-len", "5")
    assert r.exit_code == 2 and "not valid JSON" in r.output  # a broken input file: a usage error
    bad.write_text('{"hidden_size": 4}')
    r = run("calc", "kv", "--config", str(bad), "--seq-len", "5")
    assert r.exit_code == 2 and "missing 'num_hidden_layers'" in r.output
    r = run("calc", "kv", "--config", str(tmp_path / "none.json"), "--seq-len", "5")
    assert r.exit_code == 2 and "not found" in r.output  # a missing input file is a usage error


def test_calc_does_not_import_torch():
    code = ("import sys; from inferview.cli import main\n"
            "try:\n    main(['calc', 'kv', '--model', 'llama-3-8b', '--seq-len', '10'])\n"
            "except SystemExit:\n    pass\n"
            "print('torch' in sys.modules, 'textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False"


def _one_clean_error(r, code: int, says: str) -> None:
    assert r.exit_code == code, r.output
    assert says in r.output
    assert "Traceback" not in r.output and not isinstance(r.exception, (TypeError, OverflowError))


def test_malformed_configs_give_one_line_and_exit_2(tmp_path):
    base = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 8, "vocab_size": 10,
            "intermediate_size": 4}
    cases = [
        ({**base, "num_hidden_layers": "2"}, "must be a non-negative integer"),
        ({**base, "num_attention_heads": 0}, "must be positive"),
        ({**base, "layer_types": 5, "sliding_window": 4}, "layer_types must be a list"),
        ({**base, "layer_types": ["linear_attention", "full_attention"], "sliding_window": 4},
         "unknown layer type"),
        ({**base, "num_local_experts": [8]}, "num_local_experts"),
        ({**base, "num_hidden_layers": 10**30}, "too large"),
        ({k: v for k, v in base.items() if k != "vocab_size"}, "vocab_size"),
        ({**base, "num_key_value_heads": 0}, "between 1 and num_attention_heads (4), got 0"),
        ({**base, "num_key_value_heads": 8}, "between 1 and num_attention_heads (4), got 8"),
        ({**base, "num_attention_heads": 3, "num_key_value_heads": 2, "hidden_size": 6},
         "must be a multiple of num_key_value_heads"),
        ({**base, "hidden_size": 9}, "give head_dim"),
        ({**base, "num_hidden_layers": 0}, "at least 1"),
    ]
    for i, (config, says) in enumerate(cases):
        p = tmp_path / f"c{i}.json"
        p.write_text(json.dumps(config))
        _one_clean_error(run("calc", "kv", "--config", str(p), "--seq-len", "16", "--gpu", "h100"),
                         2, says)
    p = tmp_path / "list.json"
    p.write_text("[1, 2]")
    _one_clean_error(run("calc", "kv", "--config", str(p), "--seq-len", "16"), 2, "JSON object")


def test_bad_numbers_and_names_give_usage_errors():
    _one_clean_error(run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "-5"), 2, "at least 1")
    assert run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "1.5k").exit_code == 0  # 1,536
    assert run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "1M").exit_code == 0
    _one_clean_error(run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "1.3"), 2,
                     "not a whole number")
    _one_clean_error(run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "8k", "--batch", "-1"),
                     2, "--batch")
    _one_clean_error(run("calc", "kv", "--model", "llama3-70b", "--seq-len", "8k"), 2,
                     "did you mean llama-3-70b?")


def test_context_past_the_trained_limit_is_flagged():
    out = run("calc", "kv", "--model", "llama-3-70b", "--seq-len", "128k").output
    assert "past the model's max_position_embeddings, 8,192" in out
    assert "max_position" not in run("calc", "kv", "--model", "llama-3-70b", "--seq-len", "8k").output


def test_per_token_cost_past_the_window():
    # gpt-oss: 18 of 36 layers slide, so past 128 tokens a token adds 18 x 2 x 8 x 64 x 2 B = 36 KiB
    out = run("calc", "kv", "--model", "gpt-oss-120b", "--seq-len", "4096").output
    assert "past the window a token costs 36 KiB/token (18 full-attention layers)" in out
    out = run("calc", "kv", "--model", "mistral-7b", "--seq-len", "4096").output
    assert "past the window a token costs nothing more" in out


def test_the_cli_and_the_app_read_a_multimodal_config_alike(tmp_path):
    from inferview.tui.calculation import CalcInputs, calculate

    inner = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
             "hidden_size": 256, "vocab_size": 1000, "intermediate_size": 512,
             "max_position_embeddings": 4096}
    p = tmp_path / "config.json"
    # top-level keys of the wrapper must not leak into the language model's config
    p.write_text(json.dumps({"model_type": "mm", "max_position_embeddings": 99, "text_config": inner}))
    r = run("calc", "kv", "--config", str(p), "--seq-len", "1k", "--json")
    assert r.exit_code == 0, r.output
    cli = json.loads(r.output)
    app = calculate(CalcInputs(model="", config_path=str(p), context=1024))
    assert cli["kv_cache_bytes"] == app.kv_cache == 4 * 2 * 2 * 32 * 2 * 1024
    assert app.context_limit == 4096  # the language model's own limit, not the wrapper's


def test_gpus_multiplies_the_memory_as_the_app_does():
    from inferview.tui.calculation import CalcInputs, calculate

    one = json.loads(CliRunner().invoke(cli, ["calc", "kv", "--model", "llama-3-70b", "--seq-len", "8k",
                                              "--gpu", "h100", "--json"]).output)["gpu"]
    res = CliRunner().invoke(cli, ["calc", "kv", "--model", "llama-3-70b", "--seq-len", "8k",
                                   "--gpu", "h100", "--gpus", "2", "--json"])
    assert res.exit_code == 0, res.output
    two = json.loads(res.output)["gpu"]
    assert two["memory_bytes"] == 2 * one["memory_bytes"] and two["gpus"] == 2
    assert not one["fits"] and two["fits"]
    app = calculate(CalcInputs(model="llama-3-70b", context=8192, gpu="h100", gpus=2))
    assert app.max_batch == two["max_batch_size"] and app.gpu_bytes == two["memory_bytes"]
    bad = CliRunner().invoke(cli, ["calc", "kv", "--model", "llama-3-70b", "--seq-len", "8k", "--gpus", "2"])
    assert bad.exit_code == 2 and "--gpus needs --gpu" in bad.output


def test_mock_help_states_the_range_once():
    out = CliRunner().invoke(cli, ["mock", "--help"]).output
    assert "any number" not in out and "1 to 240" in out
    assert "--write-schema" not in CliRunner().invoke(cli, ["lint", "--help"]).output
