#!/usr/bin/env python3
"""What an FP8 KV cache costs in quality (issue 17): the perplexity of each model over a fixed text
(tests/fixtures/model/perplexity_text.txt; the llama.cpp oracle's protocol, cli/perplexity.h) with
--kv-cache-dtype f16 and fp8, by `tempered run --perplexity`. Writes results/kv-fp8-quality-<date>.{json,md}
with the exact commands. The fp8 warning at start-up quotes these numbers (src/kv/kv_fp8_quality.h).

    bench/kv_cache_quality.py [--bin build/tempered] [--threads 2] [--window 512] [--date 2026-12-02]
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEXT = ROOT / "tests" / "fixtures" / "model" / "perplexity_text.txt"
MODELS = [("SmolLM2-135M-Instruct Q4_1", "SmolLM2-135M-Instruct.Q4_1.gguf"),
          ("Qwen2.5-Coder-0.5B-Instruct Q4_K_M", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")]
MODEL_DIR = pathlib.Path.home() / ".cache" / "tempered" / "models"


def measure(binary, model, dtype, threads, window):
    command = [str(binary), "run", "--model", str(model), "--perplexity", str(TEXT.relative_to(ROOT)),
               "--perplexity-window", str(window), "--kv-cache-dtype", dtype, "--threads", str(threads)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["seconds"] = round(time.monotonic() - started, 1)
    shown = [os.path.relpath(part, ROOT) if part.startswith(str(ROOT) + "/") else part for part in command]
    shown = [part.replace(str(pathlib.Path.home()), "~", 1) for part in shown]
    report["command"] = " ".join(shown)  # no spaces in these paths; ~ left for the shell
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=str(ROOT / "build" / "tempered"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--window", type=int, default=512)
    parser.add_argument("--date", default=datetime.date.today().isoformat())
    args = parser.parse_args()
    rows = []
    for label, file_name in MODELS:
        model = MODEL_DIR / file_name
        f16 = measure(args.bin, model, "f16", args.threads, args.window)
        fp8 = measure(args.bin, model, "fp8", args.threads, args.window)
        change = 100.0 * (fp8["perplexity"] - f16["perplexity"]) / f16["perplexity"]
        rows.append({"model": label, "file": file_name, "f16": f16, "fp8": fp8, "perplexity_change_percent": change})
        print(f"{label}: f16 {f16['perplexity']:.4f}, fp8 {fp8['perplexity']:.4f} ({change:+.3f}%)", flush=True)
    result = {"date": args.date, "machine": platform.processor() or platform.machine(),
              "text": str(TEXT.relative_to(ROOT)), "window": args.window, "results": rows}
    out = ROOT / "bench" / "results" / f"kv-fp8-quality-{args.date}"
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# FP8 (E4M3) KV cache: perplexity against f16 KV ({args.date})", "",
             f"Text: `{result['text']}`, non-overlapping windows of {args.window} tokens from position 0, no BOS, "
             "every token after a window's first scored (the llama.cpp oracle's protocol). Weights as in the file; "
             "only the KV cache's element type changes. FP8: E4M3 codes, one float scale per stored head vector "
             "(max |x| / 448). Produced by `bench/kv_cache_quality.py`.", "",
             "| model | tokens scored | f16 KV | fp8 KV | change |", "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['model']} | {row['f16']['tokens_scored']} | {row['f16']['perplexity']:.4f} | "
                     f"{row['fp8']['perplexity']:.4f} | {row['perplexity_change_percent']:+.3f}% |")
    lines += ["", "Commands (from the repository root):", "", "```"]
    for row in rows:
        lines += [row["f16"]["command"], row["fp8"]["command"]]
    lines += ["```", ""]
    out.with_suffix(".md").write_text("\n".join(lines))
    print(f"wrote {out}.{{json,md}}")


if __name__ == "__main__":
    main()
