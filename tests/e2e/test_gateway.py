"""Two tempered workers behind the real sgl-model-gateway (sglang-router, tests/requirements.txt):
registration without the tokenizer download attempt, chat through the gateway with the OpenAI SDK,
cache-aware routing that keeps a repeated system prompt on one worker, the gateway's /flush_cache, and a
killed worker that costs no request.

Processes start as the benches start them (bench/gateway_harness.py); the fixture kills them all.
"""
import pathlib
import signal
import sys

import pytest

from helpers import MODEL_SHORT_NAME, model_args, tempered_bin

pytest.importorskip("sglang_router", reason="sglang-router is not installed (pip install -r tests/requirements.txt)")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import gateway_harness as harness  # noqa: E402

SYSTEM_PROMPT = "You answer questions about a public library. " * 24  # several KV blocks


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    args = model_args()
    with harness.Cluster(tempered_bin(), workers=2, policy="cache_aware", model=args[1], threads=1,
                         worker_flags=args[2:], log_dir=tmp_path_factory.mktemp("gateway"),
                         gateway_flags=harness.FAILOVER_FLAGS) as running:
        yield running


def chat(cluster, user, max_tokens=4):
    import openai
    client = openai.OpenAI(base_url=cluster.gateway.url + "/v1", api_key="x", max_retries=0, timeout=120)
    return client.chat.completions.create(model=MODEL_SHORT_NAME, max_tokens=max_tokens, temperature=0,
                                          messages=[{"role": "system", "content": SYSTEM_PROMPT},
                                                    {"role": "user", "content": user}])


def served_counts(cluster):
    return [harness.metric_sum(w.metrics(), "vllm:request_success_total") for w in cluster.workers]


def test_registration_reads_our_labels_and_tries_no_tokenizer_download(cluster):
    status, listing = harness.http_json("GET", cluster.gateway.url + "/workers")
    assert status == 200
    metadata = {entry["url"]: entry["metadata"] for entry in listing["workers"]}
    for worker in cluster.workers:
        assert metadata[worker.url]["served_model_name"] == MODEL_SHORT_NAME
        assert metadata[worker.url]["model_type"] == "llama"
        assert "model_path" not in metadata[worker.url]
    log = cluster.gateway.log()
    assert "Failed to load tokenizer" not in log and "HuggingFace" not in log, cluster.gateway.tokenizer_warnings()


def test_chat_through_the_gateway(cluster):
    completion = chat(cluster, "Name a colour.")
    assert completion.choices[0].message.content
    assert completion.usage.prompt_tokens > 200


def test_cache_aware_keeps_a_system_prompt_on_one_worker(cluster):
    before = served_counts(cluster)
    cached = [chat(cluster, f"Question {i}: when do you open?").usage.prompt_tokens_details.cached_tokens
              for i in range(5)]
    served = [after - prior for after, prior in zip(served_counts(cluster), before)]
    assert sorted(served) == [0, 5], served
    # After the first, every one found the system prompt cached on the worker it was sent to.
    assert all(tokens >= 128 for tokens in cached[1:]), cached


def test_the_gateways_flush_cache_empties_every_workers_cache(cluster):
    chat(cluster, "Warm the cache.")
    status, answer = harness.http_json("POST", cluster.gateway.url + "/flush_cache")
    assert status == 200 and answer["workers_flushed"] == 2, answer
    assert chat(cluster, "After the flush.").usage.prompt_tokens_details.cached_tokens == 0


def temperature_from_requests(cluster):
    """Requests whose temperature the workers took from the request (all of the front's: it sends every value)."""
    return sum(value for worker in cluster.workers for name, labels, value in worker.metrics()
               if name == "tempered:sampling_param_source_total" and labels.get("param") == "temperature"
               and labels.get("source") == "request")


def test_a_tempered_front_governs_through_the_gateway(cluster):
    """tempered serve --upstream <gateway>: the front renders and governs, the gateway routes its
    /v1/completions (token-id prompts) to the workers; the answer is the one the gateway gives directly."""
    from helpers import chat_body, running_server
    with running_server(model_args() + ["--upstream", cluster.gateway.url], name="front-gateway") as front:
        direct = chat(cluster, "Name a colour.", max_tokens=12)
        body = chat_body("Name a colour.", max_tokens=12, temperature=0,
                         messages=[{"role": "system", "content": SYSTEM_PROMPT},
                                   {"role": "user", "content": "Name a colour."}])
        response = front.post("/v1/chat/completions", body)
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"] == direct.choices[0].message.content
        before = temperature_from_requests(cluster)
        omitted = front.post("/v1/chat/completions", chat_body("Hello.", max_tokens=4))
        assert omitted.status_code == 200, omitted.text
        assert omitted.json()["sampling"]["temperature"]["source"] != "request"  # the front filled it in
        assert temperature_from_requests(cluster) == before + 1, "the worker drew with the value the front sent"
        assert front.metrics().require("tempered:upstream_requests_total", outcome="completed") == 2


def test_a_killed_worker_costs_no_request(cluster):
    # Kill the worker that holds the system prompt's cache: cache_aware would send the next ones there.
    counts = served_counts(cluster)
    victim = cluster.workers[counts.index(max(counts))]
    victim.kill(signal.SIGKILL)
    for i in range(6):
        assert chat(cluster, f"After the kill {i}: where is the entrance?").choices[0].message.content
    survivor = next(w for w in cluster.workers if w is not victim)
    assert survivor.alive()


def test_keyed_workers_accept_only_what_the_gateway_forwards_with_a_key(tmp_path):
    # Workers started with --api-key: the gateway registers them through the open probes and forwards the
    # client's Authorization header, so only a client holding a key reaches the engine (and its bootstrap
    # fields, on PD decode servers: the trust they ask for is the key's).
    import openai
    args = model_args()
    worker = harness.Worker(0, tempered_bin(), args[1], 1, tmp_path, extra=[*args[2:], "--api-key", "worker-key"])
    gateway = None
    try:
        worker.wait_ready()
        gateway = harness.Gateway(sys.executable, [worker.url], "round_robin", tmp_path)
        gateway.wait_ready()
        keyed = openai.OpenAI(base_url=gateway.url + "/v1", api_key="worker-key", max_retries=0, timeout=120)
        answer = keyed.chat.completions.create(model=MODEL_SHORT_NAME, max_tokens=2, temperature=0,
                                               messages=[{"role": "user", "content": "Hi"}])
        assert answer.choices[0].message.content is not None
        wrong = openai.OpenAI(base_url=gateway.url + "/v1", api_key="wrong-key", max_retries=0, timeout=120)
        with pytest.raises(openai.AuthenticationError):
            wrong.chat.completions.create(model=MODEL_SHORT_NAME, max_tokens=2,
                                          messages=[{"role": "user", "content": "Hi"}])
        assert harness.metric_sum(worker.metrics(), "vllm:request_success_total") == 1
    finally:
        if gateway:
            gateway.kill()
        worker.kill()
