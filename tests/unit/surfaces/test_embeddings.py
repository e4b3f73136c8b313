"""Embeddings in Gemini's and Ollama's shapes (SPEC §12.6), to and from OpenAI's."""

from __future__ import annotations

import base64
import struct

import pytest

from gateway.errors import InvalidRequestError
from gateway.surfaces.embeddings import (
    Vectors,
    gemini_batch_answer,
    gemini_batch_request,
    gemini_embed_answer,
    gemini_embed_request,
    ollama_embed_answer,
    ollama_embed_request,
    ollama_embeddings_answer,
    ollama_embeddings_request,
    read_vectors,
)


def test_gemini_batch_request_as_google_genai_sends_it():
    body = {
        "requests": [
            {
                "model": "models/e",
                "content": {"parts": [{"text": "a"}]},
                "taskType": "RETRIEVAL_DOCUMENT",
                "outputDimensionality": 8,
            },
            {"model": "models/e", "content": {"parts": [{"text": "b"}, {"text": "c"}]}, "output_dimensionality": 8},
        ]
    }

    assert gemini_batch_request(body, "models/e") == {"model": "e", "input": ["a", "b\nc"], "dimensions": 8}


def test_gemini_embed_request():
    assert gemini_embed_request({"content": {"parts": [{"text": "hi"}]}, "title": "t"}, "e") == {
        "model": "e",
        "input": "hi",
    }


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "content"),
        ({"content": {"parts": []}}, "content.parts"),
        ({"content": {"parts": [{"inlineData": {"data": "x"}}]}}, "content.parts[0]"),
        ({"content": {"parts": [{"text": "x"}]}, "outputDimensionality": 0}, "outputDimensionality"),
    ],
)
def test_gemini_embed_request_refusals_name_the_field(body, param):
    with pytest.raises(InvalidRequestError) as raised:
        gemini_embed_request(body, "e")

    assert raised.value.param == param


def test_gemini_batch_needs_requests():
    with pytest.raises(InvalidRequestError) as raised:
        gemini_batch_request({"requests": []}, "e")

    assert raised.value.param == "requests"


def test_ollama_requests():
    assert ollama_embed_request({"model": "nomic-embed-text:latest", "input": ["a", "b"], "truncate": True}) == {
        "model": "nomic-embed-text",
        "input": ["a", "b"],
    }
    assert ollama_embed_request({"model": "m", "input": "a", "dimensions": 4}) == {
        "model": "m",
        "input": "a",
        "dimensions": 4,
    }
    assert ollama_embeddings_request({"model": "m", "prompt": "p"}) == {"model": "m", "input": "p"}


@pytest.mark.parametrize(
    "body", [{"input": "a"}, {"model": "m"}, {"model": "m", "input": [1]}, {"model": "m", "input": []}]
)
def test_ollama_refusals(body):
    with pytest.raises(InvalidRequestError):
        ollama_embed_request(body)


def test_vectors_are_read_in_index_order_and_from_base64():
    packed = base64.b64encode(struct.pack("<2f", 0.5, -1.0)).decode()
    answer = {
        "data": [{"index": 1, "embedding": packed}, {"index": 0, "embedding": [1.0, 2.0]}],
        "usage": {"prompt_tokens": 7},
    }

    assert read_vectors(answer) == Vectors([[1.0, 2.0], [0.5, -1.0]], 7)


@pytest.mark.parametrize("answer", [{}, {"data": "x"}, {"data": [{"embedding": 5}]}, []])
def test_an_answer_without_vectors_is_refused(answer):
    with pytest.raises(ValueError, match=r"embeddings answer|embedding"):
        read_vectors(answer)


def test_answers_in_each_shape():
    vectors = Vectors([[1.0, 2.0]], 3)

    assert gemini_embed_answer(vectors) == {"embedding": {"values": [1.0, 2.0]}}
    assert gemini_batch_answer(vectors) == {"embeddings": [{"values": [1.0, 2.0]}]}
    assert ollama_embeddings_answer(vectors) == {"embedding": [1.0, 2.0]}
    assert ollama_embed_answer(vectors, "m") == {
        "model": "m",
        "embeddings": [[1.0, 2.0]],
        "total_duration": 0,
        "load_duration": 0,
        "prompt_eval_count": 3,
    }
