"""Admission for one worker process: a bounded queue in front of one bounded executor.

Why: answering is CPU work serialised on the embedder (~15 ms a question), so a burst is
best absorbed by waiting a little rather than refused; and a portal that proxies many users
from one address must not be throttled at its fifth user. So:

- at most `slots` answers run at once, on one executor of as many threads (streams too:
  a stream holds its slot until its work has finished, not until its headers went out);
- up to `queue_size` more wait. Each client (token, or address) has its own line, and the
  lines are served by deficit round-robin: every turn a client's allowance grows by one,
  and a request costs its weight (1 for a question, up to 65 for 8 kB, whose embedding
  costs ~60 times more), so one client's long questions cannot starve another's short ones;
- long questions also take turns with each other: at most one whose weight is HEAVY or more
  runs at a time (the embedder is one lock per process, so four 8 kB questions at once
  would make a one-liner wait behind all four); short ones pass them in the queue;
- only when the queue is full is a request refused (429): the newest waiter of the client
  with the longest line is shed, so that is the heaviest client, not the one arriving;
- a request that would wait longer than `timeout` seconds (estimated from the recent rate
  of completions, and then enforced) gets 503. Both carry Retry-After;
- a client that disconnects while waiting leaves the queue.

Everything here runs on the event loop; only `release` is called from worker threads
(through call_soon_threadsafe).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Awaitable, Callable

MAX_COST = 65
HEAVY = 9  # ≥ 1 kB of question: ~0.2 s of embedding or more
POLL_S = 0.5  # how often a waiter checks that its client is still there


def request_cost(text: str) -> int:
    """A request's weight in the fairness: 1, plus one per 128 bytes of question (and log),
    up to MAX_COST. The embedder reads at most 512 tokens, and those cost ~1.1 s against
    ~18 ms for a one-line question (measured on one core)."""
    size = len(text.encode("utf-8", "replace"))
    return min(MAX_COST, 1 + size // 128)


class Shed(Exception):
    """Refused by admission: an HTTP status, a message and when to come back."""

    def __init__(self, status: int, reason: str, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.status, self.reason, self.message, self.retry_after = status, reason, message, retry_after


class ClientGone(Exception):
    """The client disconnected while its request waited."""


@dataclass(frozen=True)
class Grant:
    """A slot, handed back with `release`."""

    heavy: bool = False


LIGHT = Grant(False)


@dataclass(eq=False)
class _Waiter:
    client: str
    cost: int
    future: asyncio.Future
    since: float = field(default_factory=time.monotonic)

    @property
    def heavy(self) -> bool:
        return self.cost >= HEAVY


@dataclass
class Stats:
    """What /metrics shows: the admission's own counters."""

    shed: dict[str, int] = field(default_factory=lambda: {"full": 0, "deadline": 0, "disconnected": 0})
    admitted: int = 0


class Admission:
    def __init__(self, slots: int, queue_size: int, timeout: float,
                 observe_wait: Callable[[float], None] | None = None, on_shed: Callable[[str], None] | None = None) -> None:
        self.slots = max(1, int(slots))
        self.queue_size = max(0, int(queue_size))
        self.timeout = float(timeout)
        self.running = 0
        self.heavy_running = 0
        self.stats = Stats()
        self._lines: dict[str, deque[_Waiter]] = {}
        self._order: deque[str] = deque()  # clients with waiters, in round-robin order
        self._allowance: dict[str, float] = {}
        self._waiting = 0
        self._queued_cost = 0
        self._per_cost_s: float | None = None  # seconds of throughput per unit of cost, when saturated
        self._last_done: float | None = None
        self._observe_wait = observe_wait or (lambda _s: None)
        self._on_shed = on_shed or (lambda _r: None)

    # ------------------------------------------------------------ what /metrics reads

    @property
    def depth(self) -> int:
        return self._waiting

    def estimated_wait(self, extra_cost: int = 0) -> float | None:
        """Seconds the queue would take to drain ahead of a new request, or None before the
        rate is known."""
        if self._per_cost_s is None:
            return None
        return (self._queued_cost + extra_cost) * self._per_cost_s

    # ------------------------------------------------------------ taking a slot

    async def acquire(self, client: str, cost: int = 1, disconnected: Callable[[], Awaitable[bool]] | None = None) -> Grant:
        """Return once the request may run (the caller must `release` the grant when its
        work ends); raise Shed or ClientGone otherwise."""
        cost = max(1, min(MAX_COST, int(cost)))
        heavy = cost >= HEAVY
        if self.running < self.slots and not self._waiting and not (heavy and self.heavy_running):
            return self._start(heavy, 0.0)
        self._admit_or_shed(client, cost)
        waiter = _Waiter(client, cost, asyncio.get_running_loop().create_future())
        self._lines.setdefault(client, deque()).append(waiter)
        if client not in self._allowance:
            self._order.append(client)
            self._allowance[client] = 0.0
        self._waiting += 1
        self._queued_cost += cost
        self._dispatch()
        return await self._wait(waiter, disconnected)

    def _start(self, heavy: bool, waited: float) -> Grant:
        self.running += 1
        self.heavy_running += heavy
        self.stats.admitted += 1
        self._observe_wait(waited)
        return Grant(heavy)

    def _admit_or_shed(self, client: str, cost: int) -> None:
        """Refuse up front when the queue is full (making room by shedding the heaviest
        client's newest waiter, when that is someone else) or the wait would pass the deadline."""
        if self._waiting >= self.queue_size:
            heaviest = max(self._lines, key=lambda c: len(self._lines[c]), default=None)
            mine = len(self._lines.get(client, ()))
            if heaviest is None or heaviest == client or len(self._lines[heaviest]) <= mine + 1:
                self._shed_count("full")
                raise Shed(429, "full", "the server is busy: its queue is full", self._retry_after())
            victim = self._lines[heaviest][-1]
            self._remove(victim)
            self._shed_count("full")
            victim.future.set_exception(Shed(429, "full", "the server is busy: its queue is full", self._retry_after()))
        estimate = self.estimated_wait(cost)
        if estimate is not None and estimate > self.timeout:
            self._shed_count("deadline")
            raise Shed(503, "deadline", f"the server is busy: the wait would be about {estimate:.0f} s, over its "
                       f"{self.timeout:g} s limit", self._retry_after())

    async def _wait(self, waiter: _Waiter, disconnected) -> Grant:
        deadline = waiter.since + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            done, _ = await asyncio.wait({waiter.future}, timeout=min(POLL_S, remaining))
            if done:
                return waiter.future.result()  # raises Shed when this waiter was shed to make room
            if disconnected is not None and await disconnected():
                self._give_up(waiter, "disconnected")
                raise ClientGone()
        self._give_up(waiter, "deadline")
        raise Shed(503, "deadline", f"the server is busy: no turn came within {self.timeout:g} s", self._retry_after())

    def _give_up(self, waiter: _Waiter, reason: str) -> None:
        if not waiter.future.done():
            self._remove(waiter)
        elif waiter.future.exception() is None:
            self.release(waiter.future.result())  # the slot came at the last moment: hand it on
        self._shed_count(reason)

    # ------------------------------------------------------------ handing slots out

    def release(self, grant: Grant = LIGHT) -> None:
        """A request's work ended: its slot goes to the next waiter in round-robin order."""
        now = time.monotonic()
        if self._waiting and self._last_done is not None:
            # Saturated: the time between completions is the throughput a waiter will see.
            sample = now - self._last_done
            self._per_cost_s = sample if self._per_cost_s is None else 0.8 * self._per_cost_s + 0.2 * sample
        self._last_done = now if self._waiting else None
        self.running -= 1
        self.heavy_running -= grant.heavy
        self._dispatch()

    def _dispatch(self) -> None:
        blocked = 0  # clients passed over in a row because their next request is heavy
        while self.running < self.slots and self._waiting and blocked < len(self._order):
            client = self._order[0]
            line = self._lines[client]
            if line[0].heavy and self.heavy_running:
                self._order.rotate(-1)  # one long question at a time; short ones go on
                blocked += 1
                continue
            blocked = 0
            self._allowance[client] += 1.0
            if self._allowance[client] + 1e-9 < line[0].cost:
                self._order.rotate(-1)  # not enough allowance yet: the next client's turn
                continue
            waiter = line[0]
            self._allowance[client] -= waiter.cost
            self._remove(waiter)
            if client in self._allowance:
                self._order.rotate(-1)
            waiter.future.set_result(self._start(waiter.heavy, time.monotonic() - waiter.since))

    def _remove(self, waiter: _Waiter) -> None:
        line = self._lines.get(waiter.client)
        if not line or waiter not in line:
            return
        line.remove(waiter)
        self._waiting -= 1
        self._queued_cost -= waiter.cost
        if not line:  # an empty line forfeits its allowance (deficit round-robin)
            del self._lines[waiter.client]
            del self._allowance[waiter.client]
            self._order.remove(waiter.client)

    def _retry_after(self) -> int:
        estimate = self.estimated_wait() or 1.0
        return max(1, min(60, math.ceil(estimate)))

    def _shed_count(self, reason: str) -> None:
        self.stats.shed[reason] = self.stats.shed.get(reason, 0) + 1
        self._on_shed(reason)
