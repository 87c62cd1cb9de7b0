"""One edge case through every language (the review of edge cases across
languages and backends): the Python side of the cases where Python differed
from the other languages or from its own stubs. No timing."""

import sys

import pytest

import volt_sem

linux = sys.platform.startswith("linux")


@pytest.mark.skipif(not linux, reason="named semaphores are Linux only")
@pytest.mark.parametrize("name", ["", "a/b", "a\0b", "x" * (volt_sem.MAX_NAME_LEN + 1)])
def test_an_invalid_name_says_what_a_valid_one_is(name):
    # The message was "invalid semaphore name", with no rule to follow.
    with pytest.raises(volt_sem.InvalidNameError) as e:
        volt_sem.Semaphore.open(name, 1)
    assert f"1 to {volt_sem.MAX_NAME_LEN} bytes" in str(e.value)
    assert "'/' or NUL" in str(e.value)


# Nothing listens on port 1: a call that got as far as connecting would fail
# with RedisConnectionError, not InvalidNameError.
NO_REDIS = "redis://127.0.0.1:1"
NAME_CALLS = {
    "open": ("\udcff", 1),
    "unlink": ("\udcff",),
    "connect": (NO_REDIS, "\udcff", 1),
    "delete_redis": (NO_REDIS, "\udcff"),
}


@pytest.mark.parametrize("call", sorted(NAME_CALLS))
def test_a_name_with_a_lone_surrogate_is_an_invalid_name(call):
    # A lone surrogate has no UTF-8 form, so no semaphore can have the name:
    # InvalidNameError (code INVALID_NAME) as for every other invalid name,
    # as Node (ERR_VOLT_INVALID_NAME) and C (VOLT_INVALID_NAME for bytes that
    # are not UTF-8) say. It was UnicodeEncodeError, which is no
    # InvalidNameError and has no code.
    with pytest.raises(volt_sem.InvalidNameError) as e:
        getattr(volt_sem.Semaphore, call)(*NAME_CALLS[call])
    assert e.value.code == "INVALID_NAME"
    assert "surrogate" in str(e.value)


def test_a_name_of_another_type_is_a_type_error():
    with pytest.raises(TypeError):
        volt_sem.Semaphore.open(b"bytes", 1)
    with pytest.raises(TypeError):
        volt_sem.Semaphore.unlink(None)


def test_a_redis_name_or_prefix_with_nul_is_refused():
    # Accepted before (and then out of reach of C and the command line).
    with pytest.raises(volt_sem.InvalidNameError):
        volt_sem.Semaphore.connect(NO_REDIS, "a\0b", 1, connect_timeout=0.2)
    with pytest.raises(ValueError) as e:
        volt_sem.Semaphore.connect(NO_REDIS, "ab", 1, prefix="p\0q", connect_timeout=0.2)
    assert "invalid key prefix" in str(e.value) and "NUL" in str(e.value)


@pytest.mark.parametrize("call", ["open", "connect"])
def test_a_label_with_a_lone_surrogate_is_an_invalid_label(call):
    # Node refuses it as an invalid label (ERR_VOLT_INVALID_ARGUMENT), C a
    # label that is not UTF-8 (VOLT_INVALID_ARGUMENT); Python raised the
    # UnicodeEncodeError of the conversion, no InvalidLabelError.
    with pytest.raises(volt_sem.InvalidLabelError) as e:
        if call == "open":
            volt_sem.Semaphore.open("edges-label", 1, label="a\udcffb")
        else:
            volt_sem.Semaphore.connect(NO_REDIS, "ab", 1, label="a\udcffb", connect_timeout=0.2)
    assert e.value.code == "INVALID_LABEL"


@pytest.mark.parametrize("option", ["connect_timeout", "command_timeout"])
def test_a_positive_timeout_below_a_nanosecond_is_positive(option):
    # Rounded down to 0 ns, it was refused as "timeouts must be positive",
    # though it was; it is now the shortest timeout there is (1 ns), so the
    # connect runs and fails as any connect to nothing does.
    with pytest.raises(volt_sem.RedisConnectionError):
        volt_sem.Semaphore.connect(NO_REDIS, "ab", 1, **{option: 1e-10})
