"""The chat request model validates only what routing needs (SPEC §2.2)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.wire.chat import ChatRequest
from gateway.wire.validation import describe

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("data", "param"),
    [
        pytest.param({"messages": []}, "messages", id="empty"),
        pytest.param({}, "messages", id="missing"),
        pytest.param({"messages": MESSAGES, "stream": "yes"}, "stream", id="stream-string"),
        pytest.param({"messages": MESSAGES, "stream": 1}, "stream", id="stream-int"),
        pytest.param({"messages": MESSAGES, "model": 7}, "model", id="model-int"),
        pytest.param({"messages": MESSAGES, "model": ""}, "model", id="model-empty"),
        pytest.param({"messages": "hi"}, "messages", id="messages-string"),
    ],
)
def test_invalid_requests_name_the_field(data, param):
    with pytest.raises(ValidationError) as caught:
        ChatRequest.model_validate(data)

    assert describe(caught.value)[0] == param


@pytest.mark.parametrize(
    ("data", "auto", "streaming"),
    [
        ({"messages": MESSAGES}, True, False),
        ({"messages": MESSAGES, "model": "AUTO"}, True, False),
        ({"messages": MESSAGES, "model": "llama", "stream": True}, False, True),
        ({"messages": MESSAGES, "stream": None, "top_k": 5, "tools": []}, True, False),
    ],
)
def test_valid_requests(data, auto, streaming):
    chat = ChatRequest.model_validate(data)

    assert (chat.is_auto, chat.streaming) == (auto, streaming)


def test_messages_of_the_wrong_shape_are_rejected_per_index():
    with pytest.raises(ValidationError) as caught:
        ChatRequest.model_validate({"messages": [{"role": "user"}, "oops"]})

    assert describe(caught.value)[0] == "messages.1"


def test_described_errors_never_echo_the_input():
    with pytest.raises(ValidationError) as caught:
        ChatRequest.model_validate({"messages": MESSAGES, "model": ["sk-secret-value"]})

    assert "sk-secret-value" not in describe(caught.value)[1]
