"""return_token_ids on /v1/completions (vLLM's name): each choice carries the ids of the tokens it generated, so that
a front that rendered the prompt (`tempered serve --upstream`) reads exactly what this server drew. Checked on
SmolLM2 against the server's own /detokenize and usage: the ids spell the text, there are as many as
completion_tokens, the stream's ids add up to the whole response's, and a response without the field is unchanged."""
from helpers import assert_error, completion_body, stream_events


def body(**fields):
    return completion_body(max_tokens=24, temperature=0, **fields)


def test_the_ids_spell_the_text_and_count_as_completion_tokens(default_server):
    response = default_server.post("/v1/completions", body(return_token_ids=True, n=2, seed=3))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert sum(len(choice["token_ids"]) for choice in answer["choices"]) == answer["usage"]["completion_tokens"]
    for choice in answer["choices"]:
        spelled = default_server.post("/detokenize", {"tokens": choice["token_ids"]}).json()["prompt"]
        assert spelled == choice["text"]


def test_the_stream_carries_the_same_ids_chunk_by_chunk(default_server):
    whole = default_server.post("/v1/completions", body(return_token_ids=True)).json()["choices"][0]
    with default_server.client() as client:
        status, _, events = stream_events(client, "/v1/completions", body(return_token_ids=True, stream=True))
    assert status == 200
    streamed = [token for event in events if event != "[DONE]" for choice in event["choices"]
                for token in choice.get("token_ids", [])]
    assert streamed == whole["token_ids"]
    assert whole["finish_reason"] == "length" and len(streamed) == 24


def test_without_it_no_choice_has_the_field(default_server):
    response = default_server.post("/v1/completions", body())
    assert "token_ids" not in response.json()["choices"][0]


def test_it_must_be_a_boolean(default_server):
    assert_error(default_server.post("/v1/completions", body(return_token_ids="yes")), 400, param="return_token_ids")


def test_return_tokens_as_token_ids_names_logprobs_by_id(default_server):
    plain = default_server.post("/v1/completions", body(logprobs=3, return_token_ids=True)).json()["choices"][0]
    named = default_server.post("/v1/completions",
                                body(logprobs=3, return_token_ids=True, return_tokens_as_token_ids=True)).json()
    choice = named["choices"][0]
    assert choice["logprobs"]["tokens"] == [f"token_id:{token}" for token in choice["token_ids"]]
    assert choice["logprobs"]["token_logprobs"] == plain["logprobs"]["token_logprobs"]
    assert choice["logprobs"]["text_offset"] == plain["logprobs"]["text_offset"]  # offsets stay in the text
    for by_id, by_text in zip(choice["logprobs"]["top_logprobs"], plain["logprobs"]["top_logprobs"]):
        assert len(by_id) == 3 and all(name.startswith("token_id:") for name in by_id)
        spelled = {default_server.post("/detokenize", {"tokens": [int(name[9:])]}).json()["prompt"]: value
                   for name, value in by_id.items()}
        assert spelled == by_text
    assert_error(default_server.post("/v1/completions", body(return_tokens_as_token_ids=1)), 400,
                 param="return_tokens_as_token_ids")
