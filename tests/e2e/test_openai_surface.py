"""The rest of the OpenAI surface, and embeddings elsewhere (SPEC §12.6), end to end through the
real SDKs a user would call them with: openai (embeddings, completions, transcriptions, speech,
images), ollama (``embed``) and google-genai (``embed_content``). Model kinds route each endpoint
to its own models; embeddings never mix two models; uploads arrive upstream byte for byte.
"""

from __future__ import annotations

import base64
import io
import json
import math
import struct
import wave

import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from support.answers import server_error
from support.endpoints import fake_vector, image_bytes, speech_bytes
from support.upstream import Json, PerKey, Sse

EMBED = "text-embedding-3-small"
OTHER_EMBED = "nomic-embed-text"
WHISPER = "whisper-large-v3"
CHAT = "chat-model"
KEY_A = "sk-provider-a-0123456789"


@pytest.fixture
def oai(gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.api_token, max_retries=0, timeout=30)


def wav_file(seconds: float = 0.25, rate: int = 8000) -> bytes:
    """A real WAV file: a 440 Hz tone, 16-bit mono."""
    frames = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(int(seconds * rate))
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(frames)
    return out.getvalue()


def close(vector: list[float], expected: list[float]) -> bool:
    return len(vector) == len(expected) and all(abs(a - b) < 1e-6 for a, b in zip(vector, expected, strict=True))


# --- embeddings ------------------------------------------------------------------------------------


def test_openai_embeddings_through_the_sdk(oai, add_provider, upstream):
    add_provider(models=[CHAT, EMBED])

    raw = oai.embeddings.with_raw_response.create(model=EMBED, input=["first text", "second"])
    result = raw.parse()

    # The SDK asks for base64 and decodes it: the vectors arrive as the upstream computed them.
    assert [
        close(d.embedding, fake_vector(EMBED, t)) for d, t in zip(result.data, ["first text", "second"], strict=True)
    ] == [True, True]
    assert raw.headers["x-routed-via"] == f"fake/{EMBED}"
    assert [r.path for r in upstream.requests] == ["/v1/embeddings"]
    assert upstream.requests[0].json["encoding_format"] == "base64"


def test_auto_embeddings_pick_the_first_embedding_model(oai, add_provider, upstream):
    add_provider(models=[CHAT, OTHER_EMBED, EMBED])

    result = oai.embeddings.create(model="auto", input="hello", encoding_format="float")

    assert close(result.data[0].embedding, fake_vector(OTHER_EMBED, "hello"))
    assert [r.model for r in upstream.requests] == [OTHER_EMBED]


def test_embeddings_fail_over_across_providers_of_the_same_model(oai, add_provider, upstream):
    add_provider(name="A", priority=1, models=[EMBED], api_key=KEY_A)
    add_provider(name="B", priority=2, models=[OTHER_EMBED, EMBED])
    upstream.answer_always(PerKey({KEY_A: server_error()}), model=EMBED)

    raw = oai.embeddings.with_raw_response.create(model=EMBED, input="hello", encoding_format="float")

    assert close(raw.parse().data[0].embedding, fake_vector(EMBED, "hello"))
    assert raw.headers["x-routed-via"] == f"B/{EMBED}"
    assert "x-fallback-from" not in raw.headers
    assert [(r.model, r.key == KEY_A) for r in upstream.requests][-1] == (EMBED, False)
    assert {r.model for r in upstream.requests} == {EMBED}


def test_embeddings_never_degrade_to_another_model(oai, add_provider, upstream):
    add_provider(name="A", priority=1, models=[EMBED])
    add_provider(name="B", priority=2, models=[OTHER_EMBED, CHAT])
    upstream.answer_always(server_error(), model=EMBED)

    with pytest.raises(openai.APIStatusError) as raised:
        oai.embeddings.create(model=EMBED, input="hello")

    assert raised.value.status_code >= 500
    assert {r.model for r in upstream.requests} == {EMBED}


def test_auto_embeddings_keep_their_model_for_the_whole_request(oai, add_provider, upstream):
    add_provider(name="A", priority=1, models=[EMBED])
    add_provider(name="B", priority=2, models=[OTHER_EMBED])
    upstream.answer_always(server_error(), model=EMBED)

    with pytest.raises(openai.APIStatusError):
        oai.embeddings.create(model="auto", input="hello")

    assert OTHER_EMBED not in [r.model for r in upstream.requests]


def test_embeddings_of_a_chat_model_are_refused(api, add_provider, upstream):
    add_provider(models=[CHAT, EMBED])

    response = api.post("/embeddings", json={"model": CHAT, "input": "hello"})

    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert upstream.requests == []


def test_chat_never_routes_to_an_embedding_model(api, add_provider, upstream):
    add_provider(models=[EMBED, CHAT])

    auto = api.post("/chat/completions", json={"model": "auto", "messages": [{"role": "user", "content": "hi"}]})
    named = api.post("/chat/completions", json={"model": EMBED, "messages": [{"role": "user", "content": "hi"}]})

    assert auto.status_code == 200 and auto.headers["x-routed-via"] == f"fake/{CHAT}"
    assert named.status_code == 200 and named.headers["x-routed-via"] == f"fake/{CHAT}"
    assert named.headers["x-fallback-from"] == EMBED
    assert [r.model for r in upstream.requests] == [CHAT, CHAT]


def test_a_kind_set_in_the_admin_api_routes_the_model(oai, admin, add_provider, upstream):
    provider = add_provider(models=[CHAT, {"id": "house-vectors", "kind": "embedding"}])

    result = oai.embeddings.create(model="auto", input="hello", encoding_format="float")
    listed = {m.id: m.model_extra.get("x_kind") for m in oai.models.list().data}

    assert provider["models"] == [CHAT, {"id": "house-vectors", "kind": "embedding"}]
    assert provider["kinds"] == {CHAT: "chat", "house-vectors": "embedding"}
    assert close(result.data[0].embedding, fake_vector("house-vectors", "hello"))
    assert listed == {"auto": None, CHAT: "chat", "house-vectors": "embedding"}
    # An edit that keeps the entries keeps the kind.
    admin.put(f"/providers/{provider['id']}", json={"models": provider["models"]}).raise_for_status()
    assert admin.get("/providers").json()["providers"][0]["kinds"]["house-vectors"] == "embedding"


def test_a_wrong_kind_is_refused_by_the_admin_api(admin, upstream):
    body = {"name": "x", "base_url": upstream.base_url, "api_key": "sk-x", "models": [{"id": "m", "kind": "video"}]}

    response = admin.post("/providers", json=body)

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "models"
    assert "chat, embedding, transcription, speech, image" in response.json()["error"]["message"]


def test_empty_embeddings_input_is_refused(api, add_provider, upstream):
    add_provider(models=[EMBED])

    response = api.post("/embeddings", json={"model": EMBED, "input": []})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "input"
    assert upstream.requests == []


def test_ollama_embed(gateway, add_provider, upstream):
    add_provider(models=[CHAT, OTHER_EMBED])
    client = ollama.Client(host=gateway.url, headers={"Authorization": f"Bearer {gateway.api_token}"}, timeout=30)

    result = client.embed(model=f"{OTHER_EMBED}:latest", input=["one", "three"])
    older = client.embeddings(model=OTHER_EMBED, prompt="one")

    assert [
        close(v, fake_vector(OTHER_EMBED, t)) for v, t in zip(result.embeddings, ["one", "three"], strict=True)
    ] == [True, True]
    assert result.model == OTHER_EMBED
    assert result.prompt_eval_count == len("one") + len("three")
    assert close(list(older.embedding), fake_vector(OTHER_EMBED, "one"))


def test_ollama_embed_errors_in_ollamas_shape(gateway, add_provider, upstream):
    add_provider(models=[CHAT])
    client = ollama.Client(host=gateway.url, headers={"Authorization": f"Bearer {gateway.api_token}"}, timeout=30)

    with pytest.raises(ollama.ResponseError) as raised:
        client.embed(model=CHAT, input="one")

    assert raised.value.status_code == 404


@pytest.mark.parametrize("api_version", ["v1beta", "v1"])
def test_gemini_embed_content(gateway, add_provider, upstream, api_version):
    add_provider(models=[CHAT, EMBED])
    options = genai_types.HttpOptions(
        base_url=gateway.url,
        api_version=api_version,
        timeout=30_000,
        retry_options=genai_types.HttpRetryOptions(attempts=1),
    )
    client = genai.Client(api_key=gateway.api_token, http_options=options)

    result = client.models.embed_content(
        model=EMBED, contents=["alpha", "be"], config=genai_types.EmbedContentConfig(output_dimensionality=3)
    )

    assert [
        close(e.values, fake_vector(EMBED, t)) for e, t in zip(result.embeddings, ["alpha", "be"], strict=True)
    ] == [True, True]
    sent = upstream.requests[0]
    assert sent.path == "/v1/embeddings"
    assert sent.json == {"model": EMBED, "input": ["alpha", "be"], "dimensions": 3}


def test_gemini_single_embed_content(gateway, add_provider, upstream):
    add_provider(models=[EMBED])

    response = httpx.post(
        f"{gateway.url}/v1beta/models/{EMBED}:embedContent",
        headers={"x-goog-api-key": gateway.api_token},
        json={"content": {"parts": [{"text": "a"}, {"text": "b"}]}, "taskType": "RETRIEVAL_QUERY"},
    )

    assert response.status_code == 200
    assert close(response.json()["embedding"]["values"], fake_vector(EMBED, "a\nb"))


def test_gemini_lists_embedding_models_with_their_methods(gateway, add_provider):
    add_provider(models=[CHAT, EMBED])

    response = httpx.get(f"{gateway.url}/v1beta/models", headers={"x-goog-api-key": gateway.api_token})

    methods = {m["name"]: m["supportedGenerationMethods"] for m in response.json()["models"]}
    assert methods[f"models/{EMBED}"] == ["embedContent", "batchEmbedContents"]
    assert "generateContent" in methods[f"models/{CHAT}"]


# --- completions -----------------------------------------------------------------------------------


def test_legacy_completions(oai, add_provider, upstream):
    add_provider(models=[EMBED, CHAT])

    result = oai.completions.create(model="auto", prompt="Once", max_tokens=5)

    assert result.choices[0].text == "once upon a time"
    assert [(r.path, r.model) for r in upstream.requests] == [("/v1/completions", CHAT)]


def test_legacy_completions_stream(oai, add_provider, upstream):
    add_provider(models=[CHAT])
    events = [
        {
            "id": "c",
            "object": "text_completion",
            "created": 1,
            "model": CHAT,
            "choices": [{"text": t, "index": 0, "finish_reason": f}],
        }
        for t, f in (("once ", None), ("upon", None), ("", "stop"))
    ]
    upstream.queue(Sse(events))

    chunks = list(oai.completions.create(model=CHAT, prompt="Once", stream=True))

    assert "".join(c.choices[0].text for c in chunks) == "once upon"


# --- audio -------------------------------------------------------------------------------------------


def test_transcription_through_the_sdk(oai, add_provider, upstream):
    add_provider(models=[CHAT, WHISPER])
    audio = wav_file()

    result = oai.audio.transcriptions.create(model=WHISPER, file=("tone.wav", audio, "audio/wav"), language="en")

    assert result.text == f"{WHISPER} heard {len(audio)} bytes"
    sent = upstream.requests[0]
    assert sent.path == "/v1/audio/transcriptions"
    assert sent.form["file"] == ("tone.wav", audio)
    assert sent.form["language"] == (None, b"en")


def test_an_upload_arrives_byte_for_byte(api, add_provider, upstream):
    add_provider(models=[CHAT, WHISPER])
    audio = wav_file()
    boundary = "a-boundary-of-the-callers-own"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="tone.wav"\r\n'
            "Content-Type: audio/wav\r\n\r\n"
        ).encode()
        + audio
        + (
            f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n{WHISPER}\r\n--{boundary}--\r\n'
        ).encode()
    )
    content_type = f"multipart/form-data; boundary={boundary}"

    response = api.post("/audio/transcriptions", content=body, headers={"content-type": content_type})

    assert response.status_code == 200, response.text
    sent = upstream.requests[0]
    assert sent.body == body  # the caller's very bytes, boundary included
    assert sent.headers["content-type"] == content_type


def test_transcription_for_auto_names_the_model_and_keeps_the_file(oai, add_provider, upstream):
    add_provider(models=[CHAT, WHISPER])
    audio = wav_file()

    result = oai.audio.translations.create(model="auto", file=("tone.wav", audio, "audio/wav"))

    assert result.text == f"{WHISPER} heard {len(audio)} bytes"
    form = upstream.requests[0].form
    assert form["model"] == (None, WHISPER.encode())
    assert form["file"] == ("tone.wav", audio)


def test_transcription_degrades_within_its_kind(oai, add_provider, upstream):
    add_provider(name="A", priority=1, models=[WHISPER])
    add_provider(name="B", priority=2, models=[CHAT, "whisper-1"])
    upstream.answer_always(server_error(), model=WHISPER)
    audio = wav_file()

    raw = oai.audio.transcriptions.with_raw_response.create(model=WHISPER, file=("tone.wav", audio, "audio/wav"))

    assert raw.parse().text == f"whisper-1 heard {len(audio)} bytes"
    assert raw.headers["x-fallback-from"] == WHISPER
    assert [r.model for r in upstream.requests][-1] == "whisper-1"
    assert upstream.requests[-1].form["file"] == ("tone.wav", audio)


def test_uploads_may_be_larger_than_the_body_limit(api, admin, add_provider, upstream):
    admin.put("/settings", json={"max_body_bytes": 1000}).raise_for_status()
    add_provider(models=[WHISPER])
    audio = wav_file(seconds=2)  # 32 KB

    response = api.post("/audio/transcriptions", files={"file": ("a.wav", audio, "audio/wav")}, data={"model": WHISPER})

    assert response.status_code == 200, response.text
    assert upstream.requests[0].form["file"][1] == audio


def test_uploads_above_25_mib_are_refused(api, add_provider, upstream):
    add_provider(models=[WHISPER])

    response = api.post(
        "/audio/transcriptions",
        files={"file": ("a.wav", b"\0" * (25 * 1024 * 1024 + 1), "audio/wav")},
        data={"model": WHISPER},
    )

    assert response.status_code == 413
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("send", "param"),
    [
        ({"data": {"model": WHISPER}, "files": {"other": ("a.txt", b"x")}}, "file"),
        ({"json": {"model": WHISPER, "file": "x"}}, "body"),
    ],
)
def test_a_transcription_without_a_file_upload_is_refused(api, add_provider, upstream, send, param):
    add_provider(models=[WHISPER])

    response = api.post("/audio/transcriptions", **send)

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert upstream.requests == []


def test_speech_streams_the_audio_through(oai, add_provider, upstream):
    add_provider(models=[CHAT, "tts-1"])

    with oai.audio.speech.with_streaming_response.create(model="auto", voice="alloy", input="Hello there") as response:
        audio = response.read()
        content_type = response.headers["content-type"]

    assert audio == speech_bytes("tts-1", "Hello there")
    assert content_type == "audio/mpeg"


# --- images ------------------------------------------------------------------------------------------


def test_images_generate(oai, add_provider, upstream):
    add_provider(models=[CHAT, "dall-e-3"])

    result = oai.images.generate(model="auto", prompt="a red fox", response_format="b64_json")

    assert base64.b64decode(result.data[0].b64_json) == image_bytes("dall-e-3", "a red fox")
    assert [(r.path, r.model) for r in upstream.requests] == [("/v1/images/generations", "dall-e-3")]


def test_an_endpoint_with_no_model_of_its_kind_says_so(api, add_provider, upstream):
    add_provider(models=[CHAT])

    response = api.post("/images/generations", json={"prompt": "a fox"})

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"
    assert "kind image" in response.json()["error"]["message"]
    assert upstream.requests == []


def test_an_upstream_refusal_passes_through(oai, add_provider, upstream):
    add_provider(models=[EMBED])
    upstream.queue(Json({"error": {"message": "input too long for this model", "type": "invalid_request_error"}}, 400))

    with pytest.raises(openai.BadRequestError) as raised:
        oai.embeddings.create(model=EMBED, input="hello")

    assert "input too long" in json.dumps(raised.value.body)


def test_verify_probes_an_embedding_model_with_an_embeddings_request(api, admin, add_provider, upstream):
    add_provider(models=[EMBED])
    upstream.queue(server_error(503), server_error(503), model=EMBED)
    assert api.post("/embeddings", json={"model": EMBED, "input": "x"}).status_code >= 500
    assert admin.get("/status").json()["cooldowns"]

    results = admin.post("/cooldowns/verify").json()["results"]

    assert [r["ok"] for r in results] == [True]
    probe = upstream.requests[-1]
    assert (probe.path, probe.json) == ("/v1/embeddings", {"model": EMBED, "input": "ping"})


def test_a_clients_model_allow_list_holds_on_every_endpoint(gateway, admin, add_provider, upstream):
    add_provider(models=[CHAT, EMBED, WHISPER])
    made = admin.post("/clients", json={"name": "notes-app", "models": [CHAT]}).json()
    headers = {"authorization": f"Bearer {made['token']}"}

    named = httpx.post(f"{gateway.url}/v1/embeddings", headers=headers, json={"model": EMBED, "input": "x"})
    auto = httpx.post(f"{gateway.url}/v1/embeddings", headers=headers, json={"model": "auto", "input": "x"})
    upload = httpx.post(
        f"{gateway.url}/v1/audio/transcriptions",
        headers=headers,
        files={"file": ("a.wav", wav_file(), "audio/wav")},
        data={"model": "auto"},
    )

    assert named.status_code == 403 and named.json()["error"]["param"] == "model"
    for refused in (auto, upload):  # nothing of those kinds is allowed
        assert refused.status_code == 404
        assert "that this client may use" in refused.json()["error"]["message"]
    assert upstream.requests == []
