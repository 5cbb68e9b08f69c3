"""The chat-template sandbox end to end: a model whose chat template runs away (an endless loop, endless
recursion, a gigabyte of output) is refused at load by its probe render, with the limit named, unless
--chat-template replaces the template; a template that passes the probe but runs away on one request answers
that request with a clean error and keeps serving.

The hostile models are SmolLM2's GGUF with only `tokenizer.chat_template` rewritten, written into the test's
tmp dir (header rewritten, tensor data copied as is).
"""
import shutil
import struct
import subprocess

import pytest

from helpers import (assert_error, chat_body, free_port, model_args, model_path, running_server, tempered_bin,
                     MODEL_SHORT_NAME)

GOOD_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
ENDLESS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
HOSTILE = {
    "loop": (ENDLESS + GOOD_TEMPLATE, "max_loop_iterations"),
    "recursion": ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}" + GOOD_TEMPLATE, "max_depth"),
    "gigabyte": ("{% for i in range(100000) %}{{ 'x' * 10000 }}{% endfor %}" + GOOD_TEMPLATE, "max_output_bytes"),
}
# Passes the probe (four messages, no magic word) but runs away on a request with the magic word, or with
# many messages (a loop cubic in their number).
BOMB = ("{% for m in messages %}{% if m.content == 'detonate' %}" + ENDLESS + "{% endif %}{% endfor %}"
        "{% for a in messages %}{% for b in messages %}{% for c in messages %}{% endfor %}{% endfor %}{% endfor %}"
        + GOOD_TEMPLATE)
LOAD_TIMEOUT_S = 60  # loading the model on a busy 2-core machine; the probe itself takes well under a second


# ---- a GGUF copy with another chat template

def _read_string(data, at):
    (length,) = struct.unpack_from("<Q", data, at)
    return data[at + 8:at + 8 + length], at + 8 + length


_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _skip_value(data, at, kind):
    if kind == 8:
        return _read_string(data, at)[1]
    if kind == 9:
        element, count = struct.unpack_from("<IQ", data, at)
        at += 12
        if element in _SCALAR_SIZES:
            return at + count * _SCALAR_SIZES[element]
        for _ in range(count):
            at = _skip_value(data, at, element)
        return at
    return at + _SCALAR_SIZES[kind]


def write_gguf_with_template(source, target, template):
    """Copies GGUF `source` to `target` with tokenizer.chat_template set to `template`."""
    with open(source, "rb") as f:
        head = f.read(64 << 20)  # the header (vocabulary included) is a few MiB
    magic, version, tensors, kvs = struct.unpack_from("<4sIQQ", head, 0)
    assert magic == b"GGUF" and version == 3
    out = bytearray(head[:24])
    at, alignment = 24, 32
    for _ in range(kvs):
        start = at
        key, at = _read_string(head, at)
        (kind,) = struct.unpack_from("<I", head, at)
        end = _skip_value(head, at + 4, kind)
        if key == b"general.alignment":
            (alignment,) = struct.unpack_from("<I", head, at + 4)
        if key == b"tokenizer.chat_template":
            encoded = template.encode()
            out += head[start:at + 4] + struct.pack("<Q", len(encoded)) + encoded
        else:
            out += head[start:end]
        at = end
    infos_start = at
    for _ in range(tensors):
        _, at = _read_string(head, at)
        (dims,) = struct.unpack_from("<I", head, at)
        at += 4 + 8 * dims + 4 + 8
    out += head[infos_start:at]
    data_start = (at + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    with open(source, "rb") as f, open(target, "wb") as g:
        g.write(out)
        f.seek(data_start)
        shutil.copyfileobj(f, g, 16 << 20)
    return target


def serve_until_exit(args):
    command = [str(tempered_bin()), "serve", "--host", "127.0.0.1", "--port", str(free_port()), "--threads", "2"]
    return subprocess.run(command + args, capture_output=True, text=True, timeout=LOAD_TIMEOUT_S)


# ---- load time

@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_template_refuses_the_model(tmp_path, kind):
    template, limit = HOSTILE[kind]
    hostile = write_gguf_with_template(model_path(), tmp_path / f"{kind}.gguf", template)
    result = serve_until_exit(["--model", str(hostile)])
    assert result.returncode != 0, result.stderr[-2000:]
    assert "the model's chat template failed its probe render" in result.stderr, result.stderr[-2000:]
    assert limit in result.stderr and "--chat-template FILE" in result.stderr, result.stderr[-2000:]


def test_chat_template_flag_replaces_a_hostile_template(tmp_path):
    hostile = write_gguf_with_template(model_path(), tmp_path / "loop.gguf", HOSTILE["loop"][0])
    good = tmp_path / "good.jinja"
    good.write_text(GOOD_TEMPLATE)
    args = ["--model", str(hostile), "--served-model-name", MODEL_SHORT_NAME, "--chat-template", str(good)]
    with running_server(args, name="template-replaced") as server:
        response = server.post("/v1/chat/completions", chat_body(max_tokens=4, temperature=0))
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"]


def test_a_missing_or_hostile_chat_template_file_is_refused(tmp_path):
    missing = serve_until_exit(model_args() + ["--chat-template", str(tmp_path / "absent.jinja")])
    assert missing.returncode != 0
    assert "--chat-template" in missing.stderr and "absent.jinja" in missing.stderr, missing.stderr[-2000:]
    hostile = tmp_path / "hostile.jinja"
    hostile.write_text(HOSTILE["recursion"][0])
    refused = serve_until_exit(model_args() + ["--chat-template", str(hostile)])
    assert refused.returncode != 0
    assert "failed its probe render" in refused.stderr and "max_depth" in refused.stderr, refused.stderr[-2000:]


def test_run_refuses_a_hostile_template(tmp_path):
    hostile = tmp_path / "hostile.jinja"
    hostile.write_text(HOSTILE["loop"][0])
    result = subprocess.run([str(tempered_bin()), "run", "--model", str(model_path()), "--chat", "hi",
                             "--chat-template", str(hostile), "--max-tokens", "1"],
                            capture_output=True, text=True, timeout=LOAD_TIMEOUT_S)
    assert result.returncode != 0
    assert "max_loop_iterations" in result.stderr, result.stderr[-2000:]


# ---- request time

def test_a_request_that_sets_off_the_template_gets_an_error_and_the_server_goes_on(tmp_path):
    template = tmp_path / "bomb.jinja"
    template.write_text(BOMB)
    with running_server(model_args() + ["--chat-template", str(template)], name="template-bomb") as server:
        for messages in ([{"role": "user", "content": "detonate"}], [{"role": "user", "content": "hi"}] * 200):
            body = chat_body(max_tokens=4, temperature=0)
            body["messages"] = messages
            error = assert_error(server.post("/v1/chat/completions", body), 400)
            assert "max_loop_iterations" in error["message"], error
            response = server.post("/v1/chat/completions", chat_body(max_tokens=4, temperature=0))
            assert response.status_code == 200, response.text
