"""Sticky conversations: naming a conversation, and what served its last turn (SPEC §19)."""

from __future__ import annotations

from gateway.core import rules
from gateway.core.sticky import Conversations, Target, continues, conversation_name
from support.factories import T0

FIRST = {"role": "user", "content": "Write a haiku about the sea."}
TURN_2 = [
    {"role": "system", "content": "Be brief."},
    FIRST,
    {"role": "assistant", "content": "Waves…"},
    {"role": "user", "content": "Another."},
]


def test_every_turn_of_a_conversation_has_its_name_and_another_client_another():
    first = conversation_name(None, 0, [FIRST])

    assert first is not None
    assert conversation_name(None, 0, TURN_2) == first
    assert conversation_name(None, 7, TURN_2) != first
    assert conversation_name(None, 0, [{"role": "user", "content": "Something else."}]) != first


def test_a_session_id_names_the_conversation_whatever_its_messages():
    assert conversation_name("s1", 0, [FIRST]) == conversation_name("s1", 0, [{"role": "user", "content": "x"}])
    assert conversation_name("s1", 0, [FIRST]) != conversation_name("s2", 0, [FIRST])
    assert conversation_name("s1", 0, [FIRST]) != conversation_name("s1", 3, [FIRST])


def test_a_first_message_in_parts_names_it_by_its_text():
    parts = {"role": "user", "content": [{"type": "text", "text": "Write a haiku about the sea."}]}

    assert conversation_name(None, 0, [parts]) == conversation_name(None, 0, [FIRST])
    assert conversation_name(None, 0, [{"role": "user", "content": []}]) is None
    assert conversation_name(None, 0, [{"role": "system", "content": "x"}]) is None


def test_only_a_conversation_with_an_assistant_turn_continues():
    assert continues(TURN_2)
    assert not continues([FIRST])


def test_a_target_lasts_thirty_minutes_after_the_turn_it_served():
    conversations = Conversations()
    target = Target(1, 101, "m")
    conversations.served("c", target, T0)

    assert conversations.target("c", T0 + rules.STICKY_TTL_MS) == target
    assert conversations.target("c", T0 + rules.STICKY_TTL_MS + 1) is None
    assert conversations.target("other", T0) is None


def test_the_next_turn_moves_the_target_and_a_provider_edit_forgets_it():
    conversations = Conversations()
    conversations.served("c", Target(1, 101, "m"), T0)
    conversations.served("c", Target(2, 201, "m"), T0 + 1)
    conversations.served("d", Target(1, 101, "m"), T0 + 2)

    assert conversations.target("c", T0 + 3) == Target(2, 201, "m")
    conversations.forget_provider(1)
    assert conversations.target("d", T0 + 3) is None
    assert conversations.target("c", T0 + 3) == Target(2, 201, "m")


def test_the_map_is_bounded_and_the_idlest_goes():
    conversations = Conversations()
    for n in range(rules.STICKY_KEPT + 1):
        conversations.served(f"c{n}", Target(1, 101, "m"), T0 + n)

    assert conversations.target("c0", T0 + rules.STICKY_KEPT) is None
    assert conversations.target("c1", T0 + rules.STICKY_KEPT) is not None


def test_a_name_is_the_same_size_whatever_the_session_id():
    assert len(conversation_name("x" * 100_000, 0, [FIRST])) == len(conversation_name("s1", 0, [FIRST]))
