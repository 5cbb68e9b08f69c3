"""Agent frameworks from the package index against `tempered serve` on Qwen2.5-Coder-0.5B-Instruct, and one request
sent three ways (chat completions, Responses, Messages).

- openai-agents: an agent with two function tools runs to completion through /v1/responses and through chat
  completions; every call it made is declared and its arguments valid. The 0.5B model calls its tool again after
  every tool result, whatever the API (its rendered prompt carries the result), so the agent stops at the first
  tool (tool_use_behavior "stop_on_first_tool"); with the default loop it runs into max_turns.
- pydantic-ai: an agent with two function tools, each usable once (prepare hides a used one), and a structured
  output (its final_result tool) completes through chat completions and through Responses.
- langchain-openai: bind_tools gives a declared, valid call and with_structured_output a parsed object, through
  chat completions and through Responses (use_responses_api).
- The same request as chat, Responses and Messages: the same sampling report, the same answer (one seed), and
  the per-parameter source counters move by one request each.
"""
import asyncio
import json

import pytest

from helpers import REQUEST_TIMEOUT_S, running_server
from test_qwen2 import QWEN2_NAME, qwen2_args

jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")


@pytest.fixture(scope="module")
def qwen():
    with running_server(qwen2_args(), name="agent-clients") as server:
        yield server


def weather(city: str) -> str:
    return f"sunny, 21 C in {city}"


def local_time(city: str) -> str:
    return f"14:05 in {city}"


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_openai_agents_run_to_completion(qwen, api):
    agents = pytest.importorskip("agents")
    openai = pytest.importorskip("openai")
    agents.set_tracing_disabled(True)
    calls = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        calls.append(("get_weather", {"city": city}))
        return weather(city)

    @agents.function_tool
    def get_time(city: str) -> str:
        """Get the local time in a city."""
        calls.append(("get_time", {"city": city}))
        return local_time(city)

    client = openai.AsyncOpenAI(base_url=qwen.base_url + "/v1", api_key="x", max_retries=0,
                                timeout=REQUEST_TIMEOUT_S)
    model_class = agents.OpenAIResponsesModel if api == "responses" else agents.OpenAIChatCompletionsModel
    agent = agents.Agent(name="assistant", instructions="Use the tools to look up what the user asks.",
                         tools=[get_weather, get_time], tool_use_behavior="stop_on_first_tool",
                         model=model_class(model=QWEN2_NAME, openai_client=client),
                         model_settings=agents.ModelSettings(temperature=0, max_tokens=96))
    result = agents.Runner.run_sync(agent, "What is the weather in Paris?", max_turns=3)
    assert calls, "the agent made no tool call"
    tools = {tool.name: tool.params_json_schema for tool in (get_weather, get_time)}
    for name, arguments in calls:
        jsonschema.validate(arguments, tools[name])
    assert result.final_output in (weather(calls[0][1]["city"]), local_time(calls[0][1]["city"]))


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_pydantic_ai_completes_a_tool_task(qwen, api):
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    class Weather(pydantic.BaseModel):
        city: str
        summary: str

    calls = []

    async def once(ctx, tool_def):
        return None if tool_def.name in calls else tool_def

    model_class = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = model_class(QWEN2_NAME, provider=OpenAIProvider(base_url=qwen.base_url + "/v1", api_key="x"))
    agent = pydantic_ai.Agent(model, output_type=Weather,
                              system_prompt="Look up the weather, then give the final result.",
                              model_settings={"temperature": 0, "max_tokens": 96})

    @agent.tool_plain(prepare=once)
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        calls.append("get_weather")
        return weather(city)

    @agent.tool_plain(prepare=once)
    def get_time(city: str) -> str:
        """Get the local time in a city."""
        calls.append("get_time")
        return local_time(city)

    result = agent.run_sync("What is the weather in Paris?", usage_limits=pydantic_ai.UsageLimits(request_limit=5))
    assert calls and set(calls) <= {"get_weather", "get_time"}
    assert isinstance(result.output, Weather) and result.output.city


@pytest.mark.parametrize("use_responses_api", [False, True], ids=["chat", "responses"])
def test_langchain_bind_tools_and_structured_output(qwen, use_responses_api):
    pytest.importorskip("langchain_openai")
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return weather(city)

    @tool
    def get_time(city: str) -> str:
        """Get the local time in a city."""
        return local_time(city)

    class Person(pydantic.BaseModel):
        name: str
        age: int

    llm = ChatOpenAI(model=QWEN2_NAME, base_url=qwen.base_url + "/v1", api_key="x", temperature=0, max_tokens=96,
                     use_responses_api=use_responses_api, max_retries=0, timeout=REQUEST_TIMEOUT_S)
    message = llm.bind_tools([get_weather, get_time], tool_choice="any").invoke("What is the weather in Paris?")
    assert message.tool_calls
    schemas = {t.name: t.args_schema.model_json_schema() for t in (get_weather, get_time)}
    for call in message.tool_calls:
        jsonschema.validate(call["args"], schemas[call["name"]])
        assert (get_weather if call["name"] == "get_weather" else get_time).invoke(call["args"])
    person = llm.with_structured_output(Person).invoke("Invent a person.")
    assert isinstance(person, Person) and person.name


def source_counts(server):
    metrics = server.metrics()
    return {param: metrics.value("tempered:sampling_param_source_total", param=param, source=source, client="")
            for param, source in (("temperature", "request"), ("top_p", "request"), ("seed", "request"))}


def test_one_request_three_ways(qwen):
    sampling = {"temperature": 0.7, "top_p": 0.9, "seed": 5}
    question = "Name a fruit."
    before = source_counts(qwen)
    chat = qwen.post("/v1/chat/completions", {"model": QWEN2_NAME, "max_tokens": 16, **sampling,
                                              "messages": [{"role": "user", "content": question}]}).json()
    responses = qwen.post("/v1/responses", {"model": QWEN2_NAME, "max_output_tokens": 16, **sampling,
                                            "input": question}).json()
    messages = qwen.post("/v1/messages", {"model": QWEN2_NAME, "max_tokens": 16, **sampling,
                                          "messages": [{"role": "user", "content": question}]}).json()
    assert chat["sampling"] == responses["sampling"] == messages["sampling"]
    assert chat["sampling"]["temperature"] == {"value": 0.7, "source": "request"}
    text = chat["choices"][0]["message"]["content"]
    assert responses["output"][0]["content"][0]["text"] == text
    assert messages["content"][0]["text"] == text
    after = source_counts(qwen)
    assert all(after[param] - before[param] == 3 for param in after), (before, after)
