"""The identity cache behind the span conversion's resources and scopes, the own-traffic scopes and the record fields."""

from __future__ import annotations

from otel_eval._runtime.identity_cache import IdentityCache


class Source:
    def __eq__(self, other: object) -> bool:  # every Source equals every other: only identity may tell them apart
        return isinstance(other, Source)

    __hash__ = object.__hash__


def test_a_value_is_found_for_its_own_object_only() -> None:
    cache: IdentityCache[str] = IdentityCache(4)
    first, second = Source(), Source()
    assert cache.put(first, "first") == "first"
    assert cache.get(first) == "first"
    assert cache.get(second) is None  # equal, not the same object


def test_a_full_cache_is_emptied_before_the_next_entry() -> None:
    cache: IdentityCache[int] = IdentityCache(2)
    sources = [Source() for _ in range(3)]
    for index, source in enumerate(sources):
        cache.put(source, index)
    assert [cache.get(source) for source in sources] == [None, None, 2]


def test_an_entry_holds_its_object_so_its_id_is_not_taken_by_another() -> None:
    cache: IdentityCache[str] = IdentityCache(8)
    cache.put(Source(), "gone")  # no other reference: the cache keeps it alive
    later = [Source() for _ in range(100)]
    assert all(cache.get(source) is None for source in later)
