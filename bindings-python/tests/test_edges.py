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
