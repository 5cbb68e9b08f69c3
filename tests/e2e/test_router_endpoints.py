"""The endpoints sgl-model-gateway reads from a worker, with the values it reads, and /flush_cache.

What the gateway (sglang-router 0.3.2) takes from them: /server_info's served_model_name (and model_path,
which it would load a tokenizer from: tempered reports its GGUF as model_file instead), /model_info's
model_type and architectures, /get_load's num_tokens summed over the array; it POSTs /flush_cache.
"""
import threading

from helpers import CONTEXT_LENGTH, MODEL_SHORT_NAME, VOCAB_SIZE

# A prompt long enough for several full KV blocks, so that a repeat finds a cached prefix.
SYSTEM_PROMPT = "You are a careful assistant for a library. " * 30


def chat_usage(server, user="Name a colour."):
    response = server.post("/v1/chat/completions", {
        "model": MODEL_SHORT_NAME, "max_tokens": 2, "temperature": 0,
        "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]})
    assert response.status_code == 200, response.text
    return response.json()["usage"]


def cached_tokens(usage):
    return usage["prompt_tokens_details"]["cached_tokens"]


def test_server_info_names_the_model_without_a_tokenizer_path(default_server):
    info = default_server.get("/server_info").json()
    assert info["served_model_name"] == MODEL_SHORT_NAME
    assert info["model_file"].endswith(".gguf")
    assert "model_path" not in info and "tokenizer_path" not in info
    assert info["dp_size"] == 1
    assert info["max_total_tokens"] == info["kv_blocks_total"] * info["kv_block_size"] > 0
    assert default_server.get("/get_server_info").json()["served_model_name"] == MODEL_SHORT_NAME


def test_model_info_has_the_fields_the_gateway_labels_workers_with(default_server):
    for path in ("/model_info", "/get_model_info"):
        info = default_server.get(path).json()
        assert info["is_generation"] is True
        assert info["model_type"] == "llama"
        assert info["architectures"] == ["llama"]
        assert info["max_model_len"] == CONTEXT_LENGTH and info["vocab_size"] == VOCAB_SIZE
        assert "model_path" not in info and "tokenizer_path" not in info


def test_get_load_counts_tokens_of_running_requests(server):
    idle = server.get("/get_load").json()
    assert idle == [{"dp_rank": 0, "num_reqs": 0, "num_waiting_reqs": 0, "num_tokens": 0}]
    # While a long generation runs, its prompt and generated tokens are in the KV cache.
    thread = threading.Thread(target=lambda: server.post("/v1/completions", {
        "model": MODEL_SHORT_NAME, "prompt": "Count: one, two,", "max_tokens": 200, "ignore_eos": True}))
    thread.start()
    try:
        seen = []
        while thread.is_alive() and not any(load["num_reqs"] == 1 and load["num_tokens"] > 0 for load in seen):
            seen.append(server.get("/get_load").json()[0])
        assert any(load["num_reqs"] == 1 and load["num_tokens"] > 0 for load in seen), seen
    finally:
        thread.join()


def test_flush_cache_drops_the_cached_prefix(server):
    chat_usage(server)
    assert cached_tokens(chat_usage(server, "Name a fruit.")) > 0
    for method in ("POST", "GET"):
        response = server.client().request(method, "/flush_cache")
        assert response.status_code == 200, response.text
        assert response.text.startswith("Cache flushed")
    assert cached_tokens(chat_usage(server, "Name a tree.")) == 0
    assert cached_tokens(chat_usage(server, "Name a river.")) > 0  # cached again from the last request


def test_flush_cache_is_refused_while_a_request_runs(server):
    chat_usage(server)
    thread = threading.Thread(target=lambda: server.post("/v1/completions", {
        "model": MODEL_SHORT_NAME, "prompt": "Count: one, two,", "max_tokens": 400, "ignore_eos": True}))
    thread.start()
    try:
        while server.get("/get_load").json()[0]["num_reqs"] == 0:
            assert thread.is_alive()
        response = server.post("/flush_cache")
        assert response.status_code == 400, response.text
        assert "running or waiting" in response.text
    finally:
        thread.join()
    assert cached_tokens(chat_usage(server, "Name a bird.")) > 0  # nothing was dropped
