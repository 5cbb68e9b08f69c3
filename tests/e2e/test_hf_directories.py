"""Hugging Face model directories (issue 31) end to end: `tempered serve --model DIR` on SmolLM2's HF copy
(scripts/fixtures/make_hf_directories.py; scripts/test.sh writes it into build/hf-models) answers; the
directory's generation_config.json arrives as source "model" in the sampling report; tokenizer.json tokenizes
and decodes every text line of the tokenizer corpus as HF's own `tokenizers` library does; `tempered inspect
DIR` names what each tensor is read as; a directory tempered cannot run is refused by name.
Without the directories the tests are skipped, or fail when TEMPERED_REQUIRE_MODELS=1."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from helpers import REPO, running_server, tempered_bin

HF_MODELS = REPO / "build" / "hf-models"
CORPUS = REPO / "tests" / "fixtures" / "tokenizer" / "corpus.jsonl"


def directory(name):
    path = HF_MODELS / name
    if not (path / "config.json").exists():
        message = f"{path} is missing (scripts/fixtures/make_hf_directories.py)"
        if os.environ.get("TEMPERED_REQUIRE_MODELS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def smollm2_server():
    with running_server(["--model", str(directory("smollm2-f32"))], name="hf-smollm2") as server:
        yield server


def test_a_directory_answers_under_its_own_name(smollm2_server):
    reply = smollm2_server.openai().chat.completions.create(
        model="smollm2-f32", max_tokens=16, temperature=0,
        messages=[{"role": "user", "content": "Write a Python function that adds two numbers."}])
    assert reply.model == "smollm2-f32"
    assert "def " in reply.choices[0].message.content


def test_generation_config_json_is_the_models_defaults(smollm2_server):
    config = json.loads((directory("smollm2-f32") / "generation_config.json").read_text())
    response = smollm2_server.client().post("/v1/chat/completions", json={
        "model": "smollm2-f32", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]})
    assert response.status_code == 200, response.text
    sampling = response.json()["sampling"]
    for name in ("temperature", "top_p", "top_k"):
        assert sampling[name] == {"source": "model", "value": pytest.approx(config[name])}, (name, sampling[name])


def test_tokenizer_json_equals_hf_tokenizers(smollm2_server):
    from tokenizers import Tokenizer
    reference = Tokenizer.from_file(str(directory("smollm2-f32") / "tokenizer.json"))
    client = smollm2_server.client()
    # Lines end at "\n" only: str.splitlines would also cut at the U+2028 and U+0085 some lines hold.
    lines = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line]
    texts = [line["text"] for line in lines if "text" in line]
    assert len(texts) >= 2000
    for text in texts:
        expected = reference.encode(text, add_special_tokens=False).ids
        got = client.post("/tokenize", json={"prompt": text, "add_special_tokens": False}).json()["tokens"]
        assert got == expected, text
        decoded = client.post("/detokenize", json={"tokens": got}).json()["prompt"]
        assert decoded == reference.decode(expected, skip_special_tokens=False), text


def test_inspect_names_what_each_tensor_is_read_as():
    out = subprocess.run([str(tempered_bin()), "inspect", str(directory("smollm2-fp8"))], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "llama.block_count (uint32) = 30" in out.stdout
    assert "tokenizer.ggml.pre (string) = \"smollm\"" in out.stdout
    lines = [line.split() for line in out.stdout.splitlines()]
    row = next(line for line in lines if line and line[0] == "model.layers.3.self_attn.q_proj.weight")
    assert row[1:] == ["F8_E4M3", "[576,", "576]", "blk.3.attn_q.weight"], row


def test_an_architecture_it_cannot_run_is_refused_by_name(tmp_path):
    source = directory("smollm2-f32")
    copy = tmp_path / "mistral"
    copy.mkdir()
    config = json.loads((source / "config.json").read_text())
    config["architectures"] = ["MistralForCausalLM"]
    (copy / "config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json", "model.safetensors.index.json"):
        shutil.copy(source / name, copy / name)
    for shard in source.glob("*.safetensors"):
        (copy / shard.name).symlink_to(shard)
    out = subprocess.run([str(tempered_bin()), "serve", "--model", str(copy), "--port", "0"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "architecture 'MistralForCausalLM' is not supported" in out.stderr, out.stderr
