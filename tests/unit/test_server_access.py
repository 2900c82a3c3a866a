"""Who is calling and may they (dihera.server.access): the di-server's memory of TokenReview and
SubjectAccessReview answers, TTLs, keys, bounds (clock injected), and the reviews behind it."""

from __future__ import annotations

import asyncio

import pytest

from dihera.kube.auth import Identity
from dihera.server.access import Access, AuthCache, ReviewBudget, TTLCache, decision_key, token_key
from tests.unit.fake_backend import ADMIN, VIEWER, FakeBackend

ALICE = Identity("alice", uid="u1", groups=("team-a",))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_an_accepted_token_is_remembered_for_the_ttl(clock: Clock) -> None:
    cache = AuthCache(ttl=10, denied_ttl=1, clock=clock)
    assert cache.identity("tok") == (False, None)
    cache.remember_identity("tok", ALICE)
    clock.now += 9.9
    assert cache.identity("tok") == (True, ALICE)
    clock.now += 0.1
    assert cache.identity("tok") == (False, None)


def test_a_rejected_token_is_remembered_only_for_the_denied_ttl(clock: Clock) -> None:
    cache = AuthCache(ttl=10, denied_ttl=1, clock=clock)
    cache.remember_identity("forged", None)
    clock.now += 0.5
    assert cache.identity("forged") == (True, None)
    clock.now += 0.5
    assert cache.identity("forged") == (False, None)


def test_allowed_and_denied_decisions_have_their_own_ttls(clock: Clock) -> None:
    cache = AuthCache(ttl=10, denied_ttl=1, clock=clock)
    cache.remember_decision(ALICE, "get", "team-a", "dqn", True)
    cache.remember_decision(ALICE, "patch", "team-a", "dqn", False)
    clock.now += 2
    assert cache.decision(ALICE, "get", "team-a", "dqn") is True
    assert cache.decision(ALICE, "patch", "team-a", "dqn") is None
    clock.now += 8
    assert cache.decision(ALICE, "get", "team-a", "dqn") is None


def test_denied_answers_are_never_kept_longer_than_allowed_ones(clock: Clock) -> None:
    cache = AuthCache(ttl=2, denied_ttl=30, clock=clock)
    assert cache.denied_ttl == 2
    cache.remember_decision(ALICE, "patch", "team-a", "dqn", False)
    clock.now += 2
    assert cache.decision(ALICE, "patch", "team-a", "dqn") is None


@pytest.mark.parametrize(
    "other",
    [
        pytest.param((ALICE, "patch", "team-a", "dqn"), id="verb"),
        pytest.param((ALICE, "get", "team-a", "dqn", "profilings"), id="subresource"),
        pytest.param((ALICE, "get", "team-b", "dqn"), id="namespace"),
        pytest.param((ALICE, "get", "team-a", "dqn2"), id="name"),
        pytest.param((Identity("bob", uid="u1", groups=("team-a",)), "get", "team-a", "dqn"), id="user"),
        pytest.param((Identity("alice", uid="u2", groups=("team-a",)), "get", "team-a", "dqn"), id="uid"),
        pytest.param((Identity("alice", uid="u1", groups=("admins",)), "get", "team-a", "dqn"), id="groups"),
        pytest.param(
            (Identity("alice", uid="u1", groups=("team-a",), extra={"scopes": ("x",)}), "get", "team-a", "dqn"),
            id="extra",
        ),
    ],
)
def test_a_decision_answers_only_the_request_it_was_made_for(
    clock: Clock, other: tuple[Identity, str, str, str] | tuple[Identity, str, str, str, str]
) -> None:
    cache = AuthCache(ttl=10, denied_ttl=1, clock=clock)
    cache.remember_decision(ALICE, "get", "team-a", "dqn", True)
    assert decision_key(*other) != decision_key(ALICE, "get", "team-a", "dqn")
    assert cache.decision(*other) is None
    assert cache.decision(ALICE, "get", "team-a", "dqn") is True


def test_tokens_are_kept_by_hash_and_never_mixed_up(clock: Clock) -> None:
    cache = AuthCache(ttl=10, denied_ttl=1, clock=clock)
    cache.remember_identity("token-a", ALICE)
    assert cache.identity("token-b") == (False, None)
    assert token_key("token-a") != token_key("token-b") and "token-a" not in token_key("token-a")
    assert all("token-a" not in str(key) for key in cache._identities._data)


def test_a_zero_ttl_remembers_nothing(clock: Clock) -> None:
    cache = AuthCache(ttl=0, denied_ttl=1, clock=clock)
    cache.remember_identity("tok", ALICE)
    cache.remember_decision(ALICE, "get", "team-a", "dqn", True)
    assert cache.identity("tok") == (False, None)
    assert cache.decision(ALICE, "get", "team-a", "dqn") is None


def test_a_full_cache_drops_its_oldest_entries(clock: Clock) -> None:
    cache: TTLCache[int] = TTLCache(clock, size=3)
    for i in range(5):
        cache.put(i, i, ttl=10)
    assert len(cache) == 3
    assert [cache.get(i) for i in range(5)] == [(False, None), (False, None), (True, 2), (True, 3), (True, 4)]


class CountingBackend(FakeBackend):
    def __init__(self) -> None:
        super().__init__()
        self.token_reviews = self.access_reviews = 0

    def authenticate(self, token: str) -> Identity | None:
        self.token_reviews += 1
        return super().authenticate(token)

    def allowed(self, identity: Identity, verb: str, namespace: str, name: str, subresource: str = "") -> bool:
        self.access_reviews += 1
        return super().allowed(identity, verb, namespace, name, subresource)


def test_access_asks_the_backend_once_per_ttl(clock: Clock) -> None:
    backend = CountingBackend()
    access = Access(backend, AuthCache(ttl=10, denied_ttl=1, clock=clock))

    async def ask(token: str, verb: str) -> bool:
        identity = await access.identity(token)
        return identity is not None and await access.allowed(identity, verb, "team-a", "dqn")

    async def scenario() -> list[bool]:
        answers = [await ask(ADMIN, "patch") for _ in range(3)]
        answers += [await ask(VIEWER, "patch") for _ in range(3)]
        answers += [await ask("forged", "get") for _ in range(3)]
        return answers

    assert asyncio.run(scenario()) == [True] * 3 + [False] * 6
    assert (backend.token_reviews, backend.access_reviews) == (3, 2)  # admin, viewer, forged; admin and viewer
    clock.now += 1  # denied answers expire first
    assert asyncio.run(ask(VIEWER, "patch")) is False
    assert asyncio.run(ask("forged", "get")) is False
    assert asyncio.run(ask(ADMIN, "patch")) is True
    assert (backend.token_reviews, backend.access_reviews) == (4, 3)
    clock.now += 9  # then the rest
    assert asyncio.run(ask(ADMIN, "patch")) is True
    assert (backend.token_reviews, backend.access_reviews) == (5, 4)


def test_the_server_reviews_a_busy_caller_once() -> None:
    from fastapi.testclient import TestClient

    from dihera.server import ServerSettings, create_app
    from tests.builders import job, task

    backend = CountingBackend()
    backend.add(job(task("learner"), task("collector", replicas=2), name="dqn"))
    http = TestClient(create_app(ServerSettings(), backend), headers={"Authorization": f"Bearer {ADMIN}"})
    assert [http.get("/v2alpha1/job/team-a.dqn/replicas").status_code for _ in range(5)] == [200] * 5
    assert (backend.token_reviews, backend.access_reviews) == (1, 1)
    off = CountingBackend()
    off.add(job(task("learner"), name="dqn"))
    app = create_app(ServerSettings(auth_cache_seconds=0), off)
    http = TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"})
    assert [http.get("/v1/namespaces/team-a/dijobs/dqn").status_code for _ in range(3)] == [200] * 3
    assert (off.token_reviews, off.access_reviews) == (3, 3)


def test_the_review_budget_allows_a_burst_then_the_rate_and_says_when_to_come_back() -> None:
    now = [0.0]
    budget = ReviewBudget(2, clock=lambda: now[0])
    assert [budget.take() for _ in range(5)] == [0, 0, 0, 0, 1]  # a burst of twice the rate, then wait 1 s
    now[0] = 0.5  # one review's worth
    assert budget.take() == 0 and budget.take() == 1
    now[0] = 100.0  # refilled to the burst, not beyond
    assert [budget.take() for _ in range(5)] == [0, 0, 0, 0, 1]
    assert all(ReviewBudget(0).take() == 0 for _ in range(1000))  # 0: no limit
