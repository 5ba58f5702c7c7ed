"""The admission queue on its own (assistant/interfaces/admission.py): fairness, shedding, deadlines.
Plain asyncio, no server: each test holds the slots with requests it releases by hand."""

import asyncio
import time

import pytest

from assistant.interfaces.admission import MAX_COST, Admission, ClientGone, Shed, request_cost


def run(coro):
    return asyncio.run(coro)


async def _start(adm: Admission, client: str, order: list, cost: int = 1, **kw) -> asyncio.Task:
    async def go():
        await adm.acquire(client, cost, **kw)
        order.append(client)
    task = asyncio.create_task(go())
    await asyncio.sleep(0)
    return task


def test_a_burst_from_one_client_waits_its_turn_instead_of_being_refused():
    async def main():
        adm = Admission(slots=1, queue_size=100, timeout=10)
        order: list = []
        tasks = [await _start(adm, "portal", order) for _ in range(50)]
        for _ in range(50):
            await asyncio.sleep(0)
            adm.release()
        await asyncio.gather(*tasks)
        return order, adm
    order, adm = run(main())
    assert len(order) == 50 and adm.stats.shed == {"full": 0, "deadline": 0, "disconnected": 0}


def test_clients_are_served_round_robin():
    async def main():
        adm = Admission(slots=1, queue_size=100, timeout=10)
        order: list = []
        await adm.acquire("hold")
        tasks = [await _start(adm, "a", order) for _ in range(4)] + [await _start(adm, "b", order) for _ in range(2)]
        for _ in range(7):
            adm.release()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return order
    order = run(main())
    assert order[:4] == ["a", "b", "a", "b"] and order[4:] == ["a", "a"]


def test_long_questions_weigh_more_in_the_fairness():
    assert request_cost("vLLM CUDA out of memory") == 1
    assert request_cost("x" * 8192) == MAX_COST and 1 < request_cost("x" * 1000) < MAX_COST

    async def main():
        adm = Admission(slots=1, queue_size=100, timeout=10)
        order: list = []
        await adm.acquire("hold")
        heavy = [await _start(adm, "heavy", order, cost=4) for _ in range(2)]
        light = [await _start(adm, "light", order) for _ in range(8)]
        for _ in range(11):
            adm.release()
            for _ in range(3):
                await asyncio.sleep(0)
        await asyncio.gather(*heavy, *light)
        return order
    order = run(main())
    # a cost-4 request gets a turn for every ~4 of the light client's
    assert order.index("heavy") >= 3 and order.count("light") == 8
    first_heavy, second_heavy = [i for i, c in enumerate(order) if c == "heavy"]
    assert second_heavy - first_heavy >= 4


def test_a_full_queue_sheds_the_heaviest_client_not_the_newcomer():
    async def main():
        adm = Admission(slots=1, queue_size=4, timeout=10)
        order: list = []
        await adm.acquire("hold")
        hog = [await _start(adm, "hog", order) for _ in range(4)]
        newcomer = await _start(adm, "newcomer", order)
        await asyncio.sleep(0.01)
        shed = [t for t in hog if t.done()]
        with pytest.raises(Shed) as refused:  # the hog's next one is refused outright
            await adm.acquire("hog")
        for _ in range(5):
            adm.release()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        await newcomer
        await asyncio.gather(*hog, return_exceptions=True)
        return shed, refused.value, order, adm
    shed, refused, order, adm = run(main())
    assert len(shed) == 1 and isinstance(shed[0].exception(), Shed) and shed[0].exception().status == 429
    assert refused.status == 429 and refused.retry_after >= 1
    assert "newcomer" in order and adm.stats.shed["full"] == 2


def test_a_wait_past_the_deadline_is_a_503_and_leaves_the_queue():
    async def main():
        adm = Admission(slots=1, queue_size=10, timeout=0.3)
        await adm.acquire("hold")
        started = time.monotonic()
        with pytest.raises(Shed) as late:
            await adm.acquire("b")
        return late.value, time.monotonic() - started, adm
    late, waited, adm = run(main())
    assert late.status == 503 and 0.25 < waited < 1.5 and adm.depth == 0 and adm.stats.shed["deadline"] == 1


def test_a_wait_that_would_pass_the_deadline_is_refused_at_once():
    async def main():
        adm = Admission(slots=1, queue_size=100, timeout=1.0)
        await adm.acquire("hold")
        waiters = [asyncio.create_task(adm.acquire(f"c{i}")) for i in range(5)]
        await asyncio.sleep(0)
        for _ in range(3):  # completions 0.1 s apart while saturated: ~0.1 s per request
            await asyncio.sleep(0.1)
            adm.release()
            await asyncio.sleep(0)
        estimate = adm.estimated_wait()
        more = [asyncio.create_task(adm.acquire(f"d{i}")) for i in range(12)]
        await asyncio.sleep(0)
        refused = [t for t in more if t.done() and isinstance(t.exception(), Shed)]
        for t in waiters + more:
            t.cancel()
        return estimate, refused
    estimate, refused = run(main())
    assert estimate is not None and 0.05 < estimate < 0.5
    assert refused and all(t.exception().status == 503 for t in refused)


def test_a_client_that_disconnects_while_waiting_leaves_the_queue():
    async def main():
        adm = Admission(slots=1, queue_size=10, timeout=10)
        await adm.acquire("hold")
        gone = False

        async def disconnected():
            return gone

        task = asyncio.create_task(adm.acquire("b", disconnected=disconnected))
        await asyncio.sleep(0.05)
        depth = adm.depth
        gone = True
        with pytest.raises(ClientGone):
            await task
        return depth, adm
    depth, adm = run(main())
    assert depth == 1 and adm.depth == 0 and adm.stats.shed["disconnected"] == 1 and adm.running == 1


def test_long_questions_run_one_at_a_time_while_short_ones_pass():
    async def main():
        adm = Admission(slots=4, queue_size=10, timeout=10)
        first = await adm.acquire("a", cost=MAX_COST)
        second = asyncio.create_task(adm.acquire("a", cost=MAX_COST))
        await asyncio.sleep(0.01)
        short = await asyncio.wait_for(adm.acquire("b"), 1)  # slots are free: the short one runs now
        waiting = not second.done()
        adm.release(first)
        grant = await asyncio.wait_for(second, 1)
        adm.release(grant)
        adm.release(short)
        return first, waiting, grant, adm
    first, waiting, grant, adm = run(main())
    assert first.heavy and grant.heavy and waiting and adm.running == 0 and adm.heavy_running == 0


def test_a_slot_cannot_be_taken_from_the_event_loop_thread(tmp_path):
    """ServerState.slot blocks its thread until the loop grants a slot: called on the loop
    itself it would wait forever, so it refuses at once."""
    import asyncio
    from dataclasses import replace

    from assistant.config import Settings
    from assistant.interfaces.http.server import ServerState

    state = ServerState(replace(Settings(), cache_dir=tmp_path, feedback_db=str(tmp_path / "f.sqlite3")))

    async def on_loop():
        state.loop = asyncio.get_running_loop()
        with pytest.raises(RuntimeError, match="worker thread"):
            with state.slot("c", 1):
                pass

        def from_thread():
            with state.slot("c", 1):
                return state.admission.running

        return await asyncio.to_thread(from_thread)

    assert asyncio.run(on_loop()) == 1
    state.executor.shutdown(wait=False)
    state.store.close()
