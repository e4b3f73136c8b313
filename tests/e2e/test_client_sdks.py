"""The client SDKs people use, end to end through every surface of SPEC §12: ``anthropic``
(Messages), ``openai`` (Responses and ``/v1/models``), ``google-genai`` (Gemini, under ``/v1beta``
and its default ``/v1``) and ``ollama``. Each SDK parses the gateway's answers with its own models
(the Anthropic client strictly), so a shape it rejects fails here. Per surface: text, a tool round
trip, streamed tool calls, failover before the stream starts, and a mid-stream cut the SDK reports
as an error, never as a finished answer.
"""

from __future__ import annotations

import json
import threading

import anthropic
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from support.answers import Call, answer, cut, server_error

MODEL = "fake-model"
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city"],
}
PARIS = {"city": "Paris", "unit": "c"}
TOKYO = {"city": "Tokyo"}
# Variables that would point an SDK elsewhere or hand it a real credential.
CLIENT_ENV = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "OLLAMA_HOST",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in CLIENT_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def provider(add_provider):
    return add_provider(name="fake", models=[MODEL])


@pytest.fixture
def two_providers(add_provider):
    """A (tried first for ``auto``) and B, each with its own model, so a test can fail A's."""
    return add_provider(name="A", priority=1, models=["a-model"]), add_provider(
        name="B", priority=2, models=["b-model"]
    )


def chat_requests(upstream) -> list[dict]:
    return [r.json for r in upstream.requests]


def tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m.get("role") == "tool"]


# --- anthropic (SPEC §12.2) ------------------------------------------------------------------------


@pytest.fixture
def claude(gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=gateway.url,
        auth_token=gateway.api_token,
        max_retries=0,
        timeout=30,
        _strict_response_validation=True,
    )


ANTHROPIC_WEATHER = {"name": "get_weather", "description": "Weather of a city", "input_schema": WEATHER_SCHEMA}


def test_anthropic_text(claude, provider, upstream):
    upstream.queue(answer(MODEL, stream=False, text="Bonjour", usage=(12, 3)))

    message = claude.messages.create(
        model=MODEL, max_tokens=64, system="Answer in French.", messages=[{"role": "user", "content": "Hello"}]
    )

    assert [(b.type, b.text) for b in message.content] == [("text", "Bonjour")]
    assert (message.role, message.model, message.stop_reason) == ("assistant", MODEL, "end_turn")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (12, 3)
    [sent] = chat_requests(upstream)
    assert sent["messages"] == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hello"},
    ]
    assert sent["max_tokens"] == 64


CACHING = [
    pytest.param((1200, 7, 1024), id="cached-prompt"),
    pytest.param((12, 3), id="no-cache-reported"),
]


@pytest.mark.parametrize("stream", [False, True], ids=["answer", "stream"])
@pytest.mark.parametrize("usage", CACHING)
def test_anthropic_usage_counts_cached_prompt_tokens_apart(claude, provider, upstream, stream, usage):
    """As Anthropic counts: input_tokens without the cached part, cache_read_input_tokens with it."""
    upstream.queue(answer(MODEL, stream=stream, text="Bonjour", usage=usage))
    request = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Hello"}]}

    if stream:
        with claude.messages.stream(**request) as events:
            message = events.get_final_message()
    else:
        message = claude.messages.create(**request)

    prompt, completion, cached = (*usage, 0)[:3]
    counted = message.usage
    assert (
        counted.input_tokens,
        counted.cache_read_input_tokens,
        counted.cache_creation_input_tokens,
        counted.output_tokens,
    ) == (prompt - cached, cached, 0, completion)


def test_anthropic_tool_round_trip(claude, provider, upstream):
    upstream.queue(
        answer(MODEL, stream=False, calls=[Call("get_weather", PARIS)]),
        answer(MODEL, stream=False, text="It is 18 degrees in Paris."),
    )
    question = {"role": "user", "content": "Weather in Paris?"}

    first = claude.messages.create(model=MODEL, max_tokens=64, tools=[ANTHROPIC_WEATHER], messages=[question])
    [call] = first.content
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "18 C, sunny"}
    second = claude.messages.create(
        model=MODEL,
        max_tokens=64,
        tools=[ANTHROPIC_WEATHER],
        messages=[question, {"role": "assistant", "content": first.content}, {"role": "user", "content": [result]}],
    )

    assert first.stop_reason == "tool_use"
    assert (call.type, call.name, call.input) == ("tool_use", "get_weather", PARIS)
    assert second.content[0].text == "It is 18 degrees in Paris."
    before, after = chat_requests(upstream)
    assert before["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather of a city", "parameters": WEATHER_SCHEMA},
        }
    ]
    [assistant] = [m for m in after["messages"] if m["role"] == "assistant"]
    [sent_call] = assistant["tool_calls"]
    assert (sent_call["id"], sent_call["function"]["name"]) == (call.id, "get_weather")
    assert json.loads(sent_call["function"]["arguments"]) == PARIS
    [tool] = tool_messages(after)
    assert tool["tool_call_id"] == call.id and "18 C, sunny" in json.dumps(tool["content"])


def test_anthropic_stream_with_parallel_tool_calls(claude, provider, upstream):
    calls = [Call("get_weather", PARIS), Call("get_weather", TOKYO)]
    upstream.queue(answer(MODEL, stream=True, text="Checking both.", calls=calls, pieces=4))

    with claude.messages.stream(
        model=MODEL, max_tokens=64, tools=[ANTHROPIC_WEATHER], messages=[{"role": "user", "content": "Paris, Tokyo?"}]
    ) as stream:
        events = list(stream)
        final = stream.get_final_message()

    types = [e.type for e in events]
    assert types[0] == "message_start" and types[-1] == "message_stop"
    starts = [e.index for e in events if e.type == "content_block_start"]
    assert starts == [0, 1, 2]
    assert [b.type for b in final.content] == ["text", "tool_use", "tool_use"]
    assert final.content[0].text == "Checking both."
    assert [b.input for b in final.content[1:]] == [PARIS, TOKYO]
    assert len({b.id for b in final.content[1:]}) == 2
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens == 7


def test_anthropic_stream_puts_reasoning_in_a_thinking_block(claude, provider, upstream):
    upstream.queue(answer(MODEL, stream=True, reasoning="The user greets me.", text="Hello!"))

    with claude.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
        final = stream.get_final_message()

    assert [b.type for b in final.content] == ["thinking", "text"]
    assert final.content[0].thinking == "The user greets me."
    assert final.content[1].text == "Hello!"


def test_anthropic_count_tokens_needs_no_upstream(claude, provider, upstream):
    counted = claude.messages.count_tokens(
        model=MODEL,
        system="Be brief.",
        tools=[ANTHROPIC_WEATHER],
        messages=[{"role": "user", "content": "How is the weather in Paris today?"}],
    )

    assert counted.input_tokens > 0
    assert upstream.requests == []


def test_anthropic_stream_announces_the_input_estimate_at_once(claude, provider, upstream):
    """message_start's input_tokens is count_tokens' estimate (SPEC §12.2); the upstream's own
    count, with cached tokens apart, ends the stream."""
    upstream.queue(answer(MODEL, stream=True, text="Sunny.", usage=(900, 3, 800)))
    request = {
        "model": MODEL,
        "system": "Be brief.",
        "tools": [ANTHROPIC_WEATHER],
        "messages": [{"role": "user", "content": "How is the weather in Paris today? " * 20}],
    }

    counted = claude.messages.count_tokens(**request)
    with claude.messages.stream(max_tokens=64, **request) as stream:
        events = list(stream)
        final = stream.get_final_message()

    assert events[0].type == "message_start"
    assert events[0].message.usage.input_tokens == counted.input_tokens > 100
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens, final.usage.output_tokens) == (100, 800, 3)


def test_anthropic_stream_fails_over_before_it_starts(claude, two_providers, upstream):
    upstream.answer_always(server_error(503), model="a-model")
    upstream.queue(answer("b-model", stream=True, text="served by B"), model="b-model")

    with claude.messages.stream(model="auto", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
        headers = stream.response.headers

    assert text == "served by B"
    assert final.model == "b-model" and final.stop_reason == "end_turn"
    assert headers["x-routed-via"] == "B/b-model"
    assert headers["x-fallback-attempts"] == "1"


def test_anthropic_mid_stream_cut_is_an_error(claude, provider, upstream):
    got_text = threading.Event()
    upstream.queue(cut(MODEL, held=got_text))
    received = []

    with pytest.raises(anthropic.APIStatusError) as raised:  # noqa: PT012, SIM117 - the error comes while iterating
        with claude.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as s:
            for text in s.text_stream:
                received.append(text)
                got_text.set()

    assert "".join(received).startswith("Hell")
    assert raised.value.body["type"] == "error"
    assert raised.value.body["error"]["type"] == "api_error"


def test_anthropic_errors_have_the_anthropic_shape(gateway, provider):
    client = anthropic.Anthropic(
        base_url=gateway.url, auth_token="wrong-token", max_retries=0, _strict_response_validation=True
    )

    with pytest.raises(anthropic.AuthenticationError) as raised:
        client.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])

    assert raised.value.body["type"] == "error"
    assert raised.value.body["error"]["type"] == "authentication_error"


# --- openai: Responses (SPEC §12.3) and /v1/models (SPEC §12.1) ------------------------------------


@pytest.fixture
def oai(gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.api_token, max_retries=0, timeout=30)


RESPONSES_WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather of a city",
    "parameters": WEATHER_SCHEMA,
}


def test_responses_create_text(oai, provider, upstream):
    upstream.queue(answer(MODEL, stream=False, text="Bonjour", usage=(12, 3)))

    response = oai.responses.create(model=MODEL, instructions="Answer in French.", input="Hello")

    assert response.status == "completed"
    assert response.output_text == "Bonjour"
    assert response.model == MODEL
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (12, 3, 15)
    [sent] = chat_requests(upstream)
    assert sent["messages"] == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hello"},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["answer", "stream"])
@pytest.mark.parametrize("usage", CACHING)
def test_responses_usage_reports_cached_prompt_tokens(oai, provider, upstream, stream, usage):
    """As the Responses API counts: input_tokens with the cached part, and how many in its details."""
    upstream.queue(answer(MODEL, stream=stream, text="Bonjour", usage=usage))

    if stream:
        with oai.responses.stream(model=MODEL, input="Hello") as events:
            response = events.get_final_response()
    else:
        response = oai.responses.create(model=MODEL, input="Hello")

    prompt, completion, cached = (*usage, 0)[:3]
    counted = response.usage
    assert (
        counted.input_tokens,
        counted.input_tokens_details.cached_tokens,
        counted.output_tokens,
        counted.total_tokens,
    ) == (prompt, cached, completion, prompt + completion)


def test_responses_function_call_round_trip(oai, provider, upstream):
    upstream.queue(
        answer(MODEL, stream=False, calls=[Call("get_weather", PARIS)]),
        answer(MODEL, stream=False, text="It is 18 degrees in Paris."),
    )
    question = {"role": "user", "content": "Weather in Paris?"}

    first = oai.responses.create(model=MODEL, input=[question], tools=[RESPONSES_WEATHER])
    [call] = [item for item in first.output if item.type == "function_call"]
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "18 C, sunny"}
    second = oai.responses.create(
        model=MODEL,
        tools=[RESPONSES_WEATHER],
        input=[question, call.model_dump(exclude_none=True), output],
    )

    assert (call.name, json.loads(call.arguments)) == ("get_weather", PARIS)
    assert second.output_text == "It is 18 degrees in Paris."
    before, after = chat_requests(upstream)
    assert before["tools"][0]["function"]["name"] == "get_weather"
    assert before["tools"][0]["function"]["parameters"] == WEATHER_SCHEMA
    [tool] = tool_messages(after)
    assert tool["tool_call_id"] == call.call_id and "18 C, sunny" in json.dumps(tool["content"])


def test_responses_stream_with_function_calls(oai, provider, upstream):
    calls = [Call("get_weather", PARIS), Call("get_weather", TOKYO)]
    upstream.queue(answer(MODEL, stream=True, text="Checking both.", calls=calls, pieces=4))

    with oai.responses.stream(model=MODEL, input="Paris, Tokyo?", tools=[RESPONSES_WEATHER]) as stream:
        events = list(stream)
        final = stream.get_final_response()

    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    numbers = [e.sequence_number for e in events]
    assert numbers == sorted(set(numbers))
    assert "response.function_call_arguments.delta" in types
    assert final.status == "completed"
    assert final.output_text == "Checking both."
    function_calls = [item for item in final.output if item.type == "function_call"]
    assert [json.loads(c.arguments) for c in function_calls] == [PARIS, TOKYO]
    assert len({c.call_id for c in function_calls}) == 2


def test_responses_stream_puts_reasoning_in_a_reasoning_item(oai, provider, upstream):
    upstream.queue(answer(MODEL, stream=True, reasoning="The user greets me.", text="Hello!"))

    with oai.responses.stream(model=MODEL, input="hi") as stream:
        final = stream.get_final_response()

    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert "The user greets me." in final.output[0].model_dump_json()
    assert final.output_text == "Hello!"


def test_responses_stream_fails_over_before_it_starts(oai, two_providers, upstream):
    upstream.answer_always(server_error(500), model="a-model")
    upstream.queue(answer("b-model", stream=True, text="served by B"), model="b-model")

    with oai.responses.stream(model="auto", input="hi") as stream:
        final = stream.get_final_response()

    assert final.output_text == "served by B"
    assert final.model == "b-model"


def test_responses_mid_stream_cut_fails_the_response(oai, provider, upstream):
    got_text = threading.Event()
    upstream.queue(cut(MODEL, held=got_text))
    types = []

    with oai.responses.stream(model=MODEL, input="hi") as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "response.output_text.delta":
                got_text.set()
        with pytest.raises(RuntimeError, match=r"response\.completed"):
            stream.get_final_response()

    assert "response.output_text.delta" in types
    assert types[-1] == "response.failed"
    assert "response.completed" not in types


def test_models_list_through_the_openai_sdk(oai, add_provider):
    add_provider(name="one", priority=1, models=["m1", "shared"])
    add_provider(name="two", priority=2, models=["shared", "m2"])

    models = oai.models.list()
    one = oai.models.retrieve("m2")

    assert [m.id for m in models.data] == ["auto", "m1", "shared", "m2"]
    assert {m.id: m.owned_by for m in models.data}["shared"] == "one"
    assert (one.id, one.owned_by) == ("m2", "two")
    with pytest.raises(openai.NotFoundError):
        oai.models.retrieve("no-such-model")


# --- google-genai (SPEC §12.4) ---------------------------------------------------------------------


def gemini_client(gateway, api_version: str) -> genai.Client:
    """Keep the client in a variable while using it: once collected it closes its HTTP client."""
    options = genai_types.HttpOptions(
        base_url=gateway.url,
        api_version=api_version,
        timeout=30_000,
        retry_options=genai_types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key=gateway.api_token, http_options=options)


API_VERSIONS = pytest.mark.parametrize("api_version", ["v1beta", "v1"])
GEMINI_WEATHER = genai_types.Tool(
    function_declarations=[
        genai_types.FunctionDeclaration(
            name="get_weather", description="Weather of a city", parameters_json_schema=WEATHER_SCHEMA
        )
    ]
)


@API_VERSIONS
def test_gemini_generate_content(gateway, provider, upstream, api_version):
    upstream.queue(answer(MODEL, stream=False, text="Bonjour", usage=(12, 3)))
    client = gemini_client(gateway, api_version)

    response = client.models.generate_content(
        model=MODEL,
        contents="Hello",
        config=genai_types.GenerateContentConfig(system_instruction="Answer in French.", temperature=0.2),
    )

    assert response.text == "Bonjour"
    assert response.candidates[0].finish_reason == genai_types.FinishReason.STOP
    usage = response.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count) == (12, 3, 15)
    [recorded] = upstream.requests
    assert recorded.json["messages"] == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hello"},
    ]
    assert recorded.json["temperature"] == 0.2


@API_VERSIONS
def test_gemini_stream_with_function_calls(gateway, provider, upstream, api_version):
    calls = [Call("get_weather", PARIS), Call("get_weather", TOKYO)]
    upstream.queue(answer(MODEL, stream=True, text="Checking both.", calls=calls, pieces=4))
    client = gemini_client(gateway, api_version)

    chunks = list(
        client.models.generate_content_stream(
            model=MODEL,
            contents="Paris, Tokyo?",
            config=genai_types.GenerateContentConfig(tools=[GEMINI_WEATHER]),
        )
    )

    parts = [p for c in chunks if c.candidates for p in (c.candidates[0].content.parts or [])]
    assert "".join(p.text for p in parts if p.text) == "Checking both."
    function_calls = [p.function_call for p in parts if p.function_call]
    assert [(f.name, f.args) for f in function_calls] == [("get_weather", PARIS), ("get_weather", TOKYO)]
    assert [c.candidates[0].finish_reason for c in chunks if c.candidates and c.candidates[0].finish_reason] == [
        genai_types.FinishReason.STOP
    ]
    assert upstream.requests[0].json["tools"][0]["function"]["parameters"] == WEATHER_SCHEMA


def test_gemini_function_response_round_trip(gateway, provider, upstream):
    upstream.queue(answer(MODEL, stream=False, text="It is 18 degrees in Paris."))
    client = gemini_client(gateway, "v1beta")
    contents = [
        genai_types.Content(role="user", parts=[genai_types.Part(text="Weather in Paris?")]),
        genai_types.Content(
            role="model",
            parts=[
                genai_types.Part(function_call=genai_types.FunctionCall(id="call-1", name="get_weather", args=PARIS))
            ],
        ),
        genai_types.Content(
            role="user",
            parts=[
                genai_types.Part(
                    function_response=genai_types.FunctionResponse(
                        id="call-1", name="get_weather", response={"output": "18 C, sunny"}
                    )
                )
            ],
        ),
    ]

    response = client.models.generate_content(
        model=MODEL, contents=contents, config=genai_types.GenerateContentConfig(tools=[GEMINI_WEATHER])
    )

    assert response.text == "It is 18 degrees in Paris."
    [sent] = chat_requests(upstream)
    [assistant] = [m for m in sent["messages"] if m["role"] == "assistant"]
    [sent_call] = assistant["tool_calls"]
    assert sent_call["function"]["name"] == "get_weather"
    assert json.loads(sent_call["function"]["arguments"]) == PARIS
    [tool] = tool_messages(sent)
    assert tool["tool_call_id"] == sent_call["id"] and "18 C, sunny" in json.dumps(tool["content"])


@API_VERSIONS
def test_gemini_count_tokens_needs_no_upstream(gateway, provider, upstream, api_version):
    client = gemini_client(gateway, api_version)

    counted = client.models.count_tokens(model=MODEL, contents="How is the weather in Paris today?")

    assert counted.total_tokens > 0
    assert upstream.requests == []


@API_VERSIONS
def test_gemini_models_list_and_get(gateway, add_provider, api_version):
    add_provider(name="one", models=["m1", "m2"])
    client = gemini_client(gateway, api_version)

    names = [m.name for m in client.models.list()]
    one = client.models.get(model="m2")

    assert {"models/m1", "models/m2"} <= set(names)
    assert one.name == "models/m2"


def test_gemini_keeps_reasoning_out_of_the_answer(gateway, provider, upstream):
    """Reasoning is dropped or sent as ``thought`` parts (Gemini's own place for it), never as answer text."""
    upstream.queue(answer(MODEL, stream=True, reasoning="The user greets me.", text="Hello!"))
    client = gemini_client(gateway, "v1beta")

    chunks = list(client.models.generate_content_stream(model=MODEL, contents="hi"))

    parts = [p for c in chunks if c.candidates for p in (c.candidates[0].content.parts or [])]
    assert "".join(p.text for p in parts if p.text and not p.thought) == "Hello!"
    assert "".join(p.text for p in parts if p.text and p.thought) in ("", "The user greets me.")


def test_gemini_stream_fails_over_before_it_starts(gateway, two_providers, upstream):
    upstream.answer_always(server_error(500), model="a-model")
    upstream.queue(answer("b-model", stream=True, text="served by B"), model="b-model")

    client = gemini_client(gateway, "v1beta")

    chunks = list(client.models.generate_content_stream(model="auto", contents="hi"))

    assert "".join(c.text or "" for c in chunks) == "served by B"
    assert chunks[-1].model_version == "b-model"


def test_gemini_mid_stream_cut_is_an_error(gateway, provider, upstream):
    got_text = threading.Event()
    upstream.queue(cut(MODEL, held=got_text))
    client = gemini_client(gateway, "v1beta")
    received = []

    with pytest.raises(genai_errors.APIError):  # noqa: PT012 - the error comes while iterating
        for c in client.models.generate_content_stream(model=MODEL, contents="hi"):
            received.append(c)
            if c.text:
                got_text.set()

    assert "".join(c.text or "" for c in received).startswith("Hell")
    assert not any(c.candidates and c.candidates[0].finish_reason for c in received)


# --- ollama (SPEC §12.5) ---------------------------------------------------------------------------


@pytest.fixture
def llama(gateway) -> ollama.Client:
    return ollama.Client(host=gateway.url, headers={"Authorization": f"Bearer {gateway.api_token}"}, timeout=30)


OLLAMA_WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Weather of a city", "parameters": WEATHER_SCHEMA},
}


def test_ollama_chat(llama, provider, upstream):
    upstream.queue(answer(MODEL, stream=False, text="Bonjour", usage=(12, 3)))

    response = llama.chat(
        model=f"{MODEL}:latest",
        stream=False,
        options={"temperature": 0.2, "num_predict": 50},
        messages=[{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Hello"}],
    )

    assert response.message.content == "Bonjour"
    assert (response.done, response.done_reason) == (True, "stop")
    assert (response.prompt_eval_count, response.eval_count) == (12, 3)
    [sent] = chat_requests(upstream)
    assert sent["model"] == MODEL
    assert (sent["temperature"], sent["max_tokens"]) == (0.2, 50)


def test_ollama_chat_streams_by_default(llama, provider, upstream):
    upstream.queue(answer(MODEL, stream=True, text="Hello there, friend", pieces=3))

    parts = list(llama.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True))

    assert "".join(p.message.content or "" for p in parts) == "Hello there, friend"
    assert [p.done for p in parts][-1] is True and not any(p.done for p in parts[:-1])
    assert parts[-1].done_reason == "stop"
    assert upstream.requests[0].json["stream"] is True


def test_ollama_chat_tool_call(llama, provider, upstream):
    upstream.queue(
        answer(MODEL, stream=False, calls=[Call("get_weather", PARIS)]),
        answer(MODEL, stream=False, text="It is 18 degrees in Paris."),
    )
    question = {"role": "user", "content": "Weather in Paris?"}

    first = llama.chat(model=MODEL, messages=[question], tools=[OLLAMA_WEATHER], stream=False)
    [call] = first.message.tool_calls
    second = llama.chat(
        model=MODEL,
        stream=False,
        tools=[OLLAMA_WEATHER],
        messages=[question, first.message, {"role": "tool", "content": "18 C, sunny", "tool_name": "get_weather"}],
    )

    assert (call.function.name, dict(call.function.arguments)) == ("get_weather", PARIS)
    assert second.message.content == "It is 18 degrees in Paris."
    [tool] = tool_messages(chat_requests(upstream)[1])
    assert "18 C, sunny" in json.dumps(tool["content"])


def test_ollama_generate(llama, provider, upstream):
    upstream.queue(answer(MODEL, stream=False, text="Paris."))

    response = llama.generate(model=MODEL, prompt="Capital of France?", system="Be brief.", stream=False)

    assert response.response == "Paris."
    assert response.done is True
    [sent] = chat_requests(upstream)
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
    ]


def test_ollama_list_show_and_version(gateway, llama, add_provider):
    add_provider(name="one", models=["m1", "m2"])

    listed = llama.list()
    shown = llama.show("m2")
    version = httpx.get(f"{gateway.url}/api/version", headers={"Authorization": f"Bearer {gateway.api_token}"})

    assert {m.model for m in listed.models} >= {"m1", "m2"}
    assert shown.details is not None
    assert version.status_code == 200 and version.json()["version"]


def test_ollama_stream_fails_over_before_it_starts(llama, two_providers, upstream):
    upstream.answer_always(server_error(502), model="a-model")
    upstream.queue(answer("b-model", stream=True, text="served by B"), model="b-model")

    parts = list(llama.chat(model="auto", messages=[{"role": "user", "content": "hi"}], stream=True))

    assert "".join(p.message.content or "" for p in parts) == "served by B"
    assert parts[-1].done is True


def test_ollama_mid_stream_cut_is_an_error(llama, provider, upstream):
    got_text = threading.Event()
    upstream.queue(cut(MODEL, held=got_text))
    received = []

    with pytest.raises(ollama.ResponseError):  # noqa: PT012 - the error comes while iterating
        for part in llama.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True):
            received.append(part)
            if part.message.content:
                got_text.set()

    assert "".join(p.message.content or "" for p in received).startswith("Hell")
    assert not any(p.done for p in received)


def test_ollama_needs_the_token(gateway, provider):
    client = ollama.Client(host=gateway.url, headers={"Authorization": "Bearer wrong"}, timeout=30)

    with pytest.raises(ollama.ResponseError) as raised:
        client.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=False)

    assert raised.value.status_code == 401
