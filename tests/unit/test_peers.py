"""Peers before main: which names a replica waits for, the bounded wait, and `dihera wait-peers` (fake DNS)."""

from __future__ import annotations

import socket

import pytest

from dihera.cli import main
from dihera.cli.peers import EXIT_BAD_INPUT, EXIT_TIMED_OUT
from dihera.peers import Peer, parse_nodes, parse_timeout, peers_to_wait_for, wait_for_names

NODES = [
    "j-learner-0.di-j.ns.svc.cluster.local",
    "127.0.0.1",
    "j-collector-1.di-j.ns.svc.cluster.local",
    "j-collector-2.di-j.ns.svc.cluster.local",
    "j-evaluator-0.di-j.ns.svc.cluster.local",
]


class FakeDNS:
    """Names resolve once the fake clock reaches their time (None: never); records every lookup."""

    def __init__(self, ready_at: dict[str, float | None]) -> None:
        self.ready_at = ready_at
        self.now = 0.0
        self.lookups: list[str] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds

    def resolve(self, host: str) -> None:
        self.lookups.append(host)
        at = self.ready_at.get(host)
        if at is None or self.now < at:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def test_a_replica_waits_for_its_own_and_every_lower_ranks_name_but_not_higher_ones() -> None:
    assert peers_to_wait_for(3, NODES) == [Peer(0, NODES[0]), Peer(2, NODES[2]), Peer(3, NODES[3])]
    assert peers_to_wait_for(0, NODES) == [Peer(0, NODES[0])]


def test_ip_literals_and_empty_entries_need_no_dns() -> None:
    """A vacant rank's 127.0.0.1 (VACANT_RANK_ADDRESS), any IP literal and an empty entry are skipped."""
    nodes = ["10.0.0.7", "", "127.0.0.1", "::1", "a.example"]
    assert peers_to_wait_for(3, nodes) == []
    assert peers_to_wait_for(4, nodes) == [Peer(4, "a.example")]


@pytest.mark.parametrize(
    ("rank", "nodes", "message"),
    [
        (3, ["a", "b"], "rank 3 is not a position of DI_NODES (2 entries; valid ranks: 0..1)"),
        (0, [], "rank 0 is not a position of DI_NODES (0 entries; valid ranks: none: DI_NODES is empty)"),
    ],
)
def test_a_rank_outside_di_nodes_is_an_error_naming_both(rank: int, nodes: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        peers_to_wait_for(rank, nodes)


def test_parse_nodes_and_timeout() -> None:
    assert parse_nodes(" a, b ,127.0.0.1") == ["a", "b", "127.0.0.1"]
    assert parse_nodes("  ") == []
    assert parse_timeout(" 30 ") == 30 and parse_timeout("0") == 0
    for bad in ("-1", "5s", "1.5", ""):
        with pytest.raises(ValueError, match="is not a whole number of seconds >= 0 \\(0 turns the wait off\\)"):
            parse_timeout(bad)


def test_names_that_already_resolve_return_at_once_after_one_lookup_each() -> None:
    dns = FakeDNS({n: 0.0 for n in NODES})
    peers = peers_to_wait_for(4, NODES)
    outcome = wait_for_names(peers, dns.resolve, 300, clock=dns.clock, sleep=dns.sleep)
    assert outcome.ok and outcome.waited == 0.0
    assert dns.lookups == [p.host for p in peers]  # no sleep, no second round


def test_the_wait_ends_when_the_last_name_appears_and_only_failing_names_are_retried() -> None:
    dns = FakeDNS({NODES[0]: 7.0, NODES[2]: 0.0, NODES[3]: 2.0})
    rounds = []
    outcome = wait_for_names(
        peers_to_wait_for(3, NODES),
        dns.resolve,
        300,
        interval=0.5,
        clock=dns.clock,
        sleep=dns.sleep,
        on_round=rounds.append,
    )
    assert outcome.ok and outcome.waited == 7.0
    assert dns.lookups.count(NODES[2]) == 1  # resolved in the first round, never asked again
    assert dns.lookups.count(NODES[0]) == 15  # 0, 0.5, ... 7.0
    assert [p.rank for p, _ in rounds[0].unresolved] == [0, 3]
    assert [p.rank for p, _ in rounds[-1].unresolved] == [0]


def test_the_wait_is_bounded_and_names_every_host_that_did_not_resolve() -> None:
    dns = FakeDNS({NODES[0]: None, NODES[2]: 1.0, NODES[3]: None})
    outcome = wait_for_names(
        peers_to_wait_for(3, NODES), dns.resolve, 4, interval=1.5, clock=dns.clock, sleep=dns.sleep
    )
    assert not outcome.ok and outcome.waited == 4.0  # the last sleep is cut to the bound
    assert outcome.describe_unresolved() == (
        f"rank 0 {NODES[0]} (Name or service not known), rank 3 {NODES[3]} (Name or service not known)"
    )


def test_cli_exits_0_when_the_names_resolve(capsys: pytest.CaptureFixture[str]) -> None:
    """localhost resolves from /etc/hosts: no DNS server is asked."""
    assert main(["wait-peers", "--rank", "2", "--nodes", "localhost,127.0.0.1,localhost,unknown.invalid"]) == 0
    assert capsys.readouterr().out == "dihera wait-peers: rank 2: its own and every lower rank's name resolve (0.0 s)\n"


def test_cli_reads_di_rank_and_di_nodes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DI_RANK", "1")
    monkeypatch.setenv("DI_NODES", "127.0.0.1,localhost")
    assert main(["wait-peers"]) == 0
    assert "rank 1: its own and every lower rank's name resolve" in capsys.readouterr().out


def test_cli_timeout_exits_1_naming_the_hosts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dns = FakeDNS({"localhost": 0.0})
    monkeypatch.setattr("dihera.peers.resolve_with_dns", dns.resolve)
    monkeypatch.setattr("time.monotonic", dns.clock)
    monkeypatch.setattr("time.sleep", dns.sleep)
    code = main(["wait-peers", "--timeout", "25", "--rank", "1", "--nodes", "late.di-j.ns.svc,localhost"])
    out = capsys.readouterr()
    assert code == EXIT_TIMED_OUT
    assert out.err == (
        "dihera wait-peers: rank 1: after 25 s, 1 name(s) still do not resolve: rank 0 late.di-j.ns.svc (Name or "
        "service not known). The replica's containers were not started: are those replicas' pods scheduled and "
        "given an address? (The DIJob annotation diengine/peer-wait-timeout sets this bound; 0 turns the wait off.)\n"
    )
    progress = out.out.splitlines()  # one line at once, then one every 10 s
    assert [line.split(" so far")[0] for line in progress] == [
        f"dihera wait-peers: rank 1 waits (up to 25 s, {s} s" for s in (0, 10, 20)
    ]
    assert progress[0].endswith("for 1 of 2 names: rank 0 late.di-j.ns.svc (Name or service not known)")


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--nodes", "a"], {}, "DI_RANK (--rank) '' is not a rank: a whole number >= 0"),
        (["--rank", "x", "--nodes", "a"], {}, "DI_RANK (--rank) 'x' is not a rank"),
        ([], {"DI_RANK": "0"}, "DI_NODES (--nodes) is empty: expected the job's FQDNs, comma-joined in rank order"),
        (["--rank", "2", "--nodes", "a,b"], {}, "rank 2 is not a position of DI_NODES (2 entries; valid ranks: 0..1)"),
    ],
)
def test_cli_bad_input_exits_2_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    monkeypatch.delenv("DI_RANK", raising=False)
    monkeypatch.delenv("DI_NODES", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["wait-peers", *argv]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err
