"""``labkit._same.Carried`` — what lets a middleware look only at what is new in a call — says a
message is carried over exactly when it is the very object of the last list at the same place, with
its ``content``, ``additional_kwargs`` and ``tool_calls`` what they were: checked against the plain
rule on lists edited every way an application edits them."""

from __future__ import annotations

import random

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from labkit._same import Carried


def _fields(m) -> tuple:
    return m.content, m.additional_kwargs, m.__dict__.get("tool_calls")


def _plain(messages, last, snapshot) -> int:
    """The rule, one message at a time: same object at the same place, equal fields."""
    k = 0
    for m, was, fields in zip(messages, last, snapshot):
        if m is not was or _fields(m) != fields:
            break
        k += 1
    return k


def _message(i: int):
    kind = i % 3
    if kind == 0:
        return HumanMessage(f"question {i}", id=f"h{i}")
    if kind == 1:
        call = {"name": "grep", "args": {"q": str(i)}, "id": f"c{i}"}
        return AIMessage(f"answer {i}", id=f"a{i}", tool_calls=[call])
    return ToolMessage(f"result {i}", tool_call_id=f"c{i - 1}", id=f"t{i}")


def _edit(rng: random.Random, messages: list, made: list) -> str:
    """One edit an application or a middleware makes, in place or by a new list."""
    i = rng.randrange(len(messages)) if messages else 0
    what = rng.choice(["grow", "grow", "content", "equal content", "extra", "tool calls", "replace",
                       "remove", "truncate", "same"])
    if what == "grow" or not messages:
        made[0] += 1
        messages.append(_message(made[0]))
    elif what == "content":
        messages[i].content = messages[i].content + " (edited)"
    elif what == "equal content":
        messages[i].content = "".join(list(messages[i].content))  # another str object, equal
    elif what == "extra":
        messages[i].additional_kwargs = {**messages[i].additional_kwargs, "k": rng.random()}
    elif what == "tool calls":
        ai = [m for m in messages if isinstance(m, AIMessage)]
        if ai:
            rng.choice(ai).tool_calls = [{"name": "read_file", "args": {"p": rng.random()}, "id": "x",
                                          "type": "tool_call"}]
    elif what == "replace":
        messages[i] = messages[i].model_copy()
    elif what == "remove":
        del messages[i]
    elif what == "truncate":
        del messages[i:]
    return what


def test_carried_over_is_the_plain_rule_under_every_edit():
    rng = random.Random(7)
    for _ in range(30):
        carried, made = Carried(), [0]
        messages = [_message(i) for i in range(rng.randrange(0, 12))]
        made[0] = len(messages)
        last, snapshot = [], []
        for _ in range(60):
            for _ in range(rng.choice((1, 1, 2, 3))):  # one edit between two calls, or several
                _edit(rng, messages, made)
            current = list(messages) if rng.random() < 0.5 else messages  # a new list, or the same
            assert carried.advance(current) == _plain(current, last, snapshot)
            last, snapshot = list(current), [_fields(m) for m in current]


def test_an_edit_in_place_makes_that_message_new_and_an_equal_value_does_not():
    messages = [_message(i) for i in range(9)]
    carried = Carried()
    assert carried.advance(messages) == 0
    assert carried.advance(messages) == 9
    messages[4].tool_calls = []  # an AI message's tool calls, replaced in place
    assert carried.advance(messages) == 4
    messages[6].content = str(messages[6].content)  # the same value: carried over
    assert carried.advance(messages) == 9
    messages[2].additional_kwargs = {"x": 1}
    assert carried.advance(messages) == 2
    assert carried.advance(messages[:5] + [_message(99)]) == 5
    messages = messages[:5] + [carried.items[5]]
    messages[4].additional_kwargs = {"y": 2}  # two edits before the next call: the first one counts
    messages[1].content = "edited"
    assert carried.advance(messages) == 1


class _Unsure:
    """A value that cannot say whether it equals another (as a numpy array cannot)."""

    def __eq__(self, other):
        raise ValueError("the truth value is ambiguous")

    __ne__ = __eq__
    __hash__ = object.__hash__


def test_a_value_that_cannot_compare_counts_as_an_edit_and_raises_nothing():
    messages = [_message(i) for i in range(6)]
    messages[1].additional_kwargs = {"raw": _Unsure()}
    carried = Carried()
    carried.advance(messages)
    assert carried.advance(messages) == 6  # the same dict, the same value: no comparison asked
    messages[1].additional_kwargs = {"raw": _Unsure()}  # another dict, a value that cannot say
    assert carried.advance(messages) == 1
