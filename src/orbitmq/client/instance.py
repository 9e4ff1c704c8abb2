"""ClientInstance: what the producers and consumers of one client id share: one pooled connection
client and MQClientAPI; the route cache (refreshed periodically and on demand; kept while no nameserver
answers); heartbeats to every broker; the consumers' rebalance and offset persistence; the requests
brokers send to clients (broker_requests.py). It knows nothing of how a producer picks queues or how a
consumer pulls."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from orbitmq.client.api import MQClientAPI, NamesrvUnreachableError
from orbitmq.client.broker_requests import BrokerRequests
from orbitmq.client.config import ClientConfig
from orbitmq.client.request_reply import ReplyTable
from orbitmq.client.roles import ConsumerInner, ProducerInner
from orbitmq.client.routing import subscribe_queues
from orbitmq.client.subscription import EXPRESSION_TAG
from orbitmq.common.errors import BrokerError, ClientError, OrbitError
from orbitmq.protocol.bodies_core import MASTER_ID
from orbitmq.protocol.codes import RequestCode
from orbitmq.transport.client import RemotingClient
from orbitmq.transport.signing import request_signer

log = logging.getLogger("orbitmq.client")

CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"


class ClientInstance:
    def __init__(self, config: ClientConfig, *, remoting: RemotingClient | None = None) -> None:
        self.config = config
        self.client_id = config.client_id
        self.remoting = remoting or RemotingClient(
            name=f"client {self.client_id}",
            rpc_hook=request_signer(config.access_key, config.secret_key, config.security_token),
            ssl_context=config.tls_context(),
            busy_poll_us=config.busy_poll_us,
        )
        self.api = MQClientAPI(self.remoting, config.namesrv_addrs, timeout=config.api_timeout)
        self.producers: dict[str, ProducerInner] = {}
        self.consumers: dict[str, ConsumerInner] = {}
        self.topic_routes: dict[str, Any] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.broker_versions: dict[str, int] = {}
        self._rebalance_now = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._jobs: set[asyncio.Task[Any]] = set()
        self._route_lock = asyncio.Lock()
        # Route fetches in flight, by (topic, template, queue count): callers that need the same route at
        # the same time share one nameserver query (else a window of sends to a new topic would queue
        # one query per send behind the route lock).
        self._route_fetches: dict[tuple[str, str | None, int], asyncio.Task[bool]] = {}
        self._heartbeat_lock = asyncio.Lock()
        self.started = False
        self._stopping = False
        self.namesrv_error: NamesrvUnreachableError | None = None  # set while no nameserver answers
        self.replies = ReplyTable()  # request-reply: futures of this client's pending requests
        self.remoting.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self.replies.on_push)
        BrokerRequests(
            self.client_id, config, self.producers, self.consumers, self.rebalance_immediately
        ).register(self.remoting)

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if self.started:
            return
        self.started = True
        cfg = self.config
        self._tasks = [
            self._spawn(self._every(cfg.poll_namesrv_interval, self.update_all_routes, first=0.01), "routes"),
            self._spawn(
                self._every(cfg.heartbeat_interval, self.send_heartbeat_to_all, first=1.0), "heartbeat"
            ),
            self._spawn(
                self._every(
                    cfg.persist_offset_interval, self.persist_all_offsets, first=cfg.persist_offset_interval
                ),
                "offsets",
            ),
            self._spawn(self._rebalance_service(), "rebalance"),
        ]

    def _spawn(self, coro: Awaitable[None], name: str) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(coro, name=f"{self.client_id} {name}")  # type: ignore[arg-type]

    async def _every(self, interval: float, job: Callable[[], Awaitable[object]], *, first: float) -> None:
        await asyncio.sleep(first)
        while True:
            try:
                await job()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: periodic task failed", self.client_id)
            await asyncio.sleep(interval)

    async def shutdown(self) -> None:
        """Stop the loops and close connections."""
        self._stopping = True
        self._rebalance_now.set()
        tasks = [*self._tasks, *self._jobs]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        await self.remoting.close()
        self.started = False

    # ---- registration -----------------------------------------------------------------------

    def register_producer(self, producer: ProducerInner) -> None:
        if producer.group in self.producers:
            raise OrbitError(f"the producer group {producer.group} is already registered in {self.client_id}")
        self.producers[producer.group] = producer

    def register_consumer(self, consumer: ConsumerInner) -> None:
        if consumer.group in self.consumers:
            raise OrbitError(f"the consumer group {consumer.group} is already registered in {self.client_id}")
        self.consumers[consumer.group] = consumer

    async def unregister_producer(self, group: str) -> None:
        self.producers.pop(group, None)
        await self._unregister_client(producer_group=group)

    async def unregister_consumer(self, group: str) -> None:
        self.consumers.pop(group, None)
        await self._unregister_client(consumer_group=group)

    async def _unregister_client(
        self, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        for addrs in list(self.broker_addrs.values()):
            for addr in addrs.values():
                try:
                    await self.api.unregister_client(
                        addr, self.client_id, producer_group=producer_group, consumer_group=consumer_group
                    )
                except Exception as exc:
                    log.debug("unregister from %s failed: %s", addr, exc)

    # ---- routes -----------------------------------------------------------------------------

    async def update_topic_route(
        self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> bool:
        """Fetch the topic's route and update the cache and every producer/consumer that uses it.

        With `default_topic` (the producer's auto-create template, TBW102) the template's route is used
        when the topic has none, its queue counts clamped to `default_queue_nums` (fact sheet 4.2).
        Returns False when there is no route (the cache is kept as it was). Concurrent calls for the same
        route share one query (the answer of a query already on its way)."""
        key = (topic, default_topic, default_queue_nums)
        fetch = self._route_fetches.get(key)
        if fetch is None:
            fetch = asyncio.get_running_loop().create_task(
                self._update_topic_route(topic, default_topic, default_queue_nums)
            )
            self._route_fetches[key] = fetch
            self._jobs.add(fetch)  # cancelled by shutdown()
            fetch.add_done_callback(functools.partial(self._route_fetch_done, key))
        # shielded: a caller that gives up (cancelled) does not cancel the query the others wait for
        return await asyncio.shield(fetch)

    def _route_fetch_done(self, key: tuple[str, str | None, int], fetch: asyncio.Task[bool]) -> None:
        if self._route_fetches.get(key) is fetch:
            del self._route_fetches[key]
        self._jobs.discard(fetch)
        if not fetch.cancelled():
            fetch.exception()  # retrieved: its waiters got it (or all of them had given up)

    async def _update_topic_route(
        self, topic: str, default_topic: str | None, default_queue_nums: int
    ) -> bool:
        async with self._route_lock:
            try:
                route = await self.api.get_topic_route(topic)
                if route is None and default_topic is not None:
                    route = await self.api.get_topic_route(default_topic)
                    if route is not None:
                        for qd in route.queue_datas:
                            n = min(default_queue_nums, qd.read_queue_nums)
                            qd.read_queue_nums = qd.write_queue_nums = n
            except NamesrvUnreachableError as exc:
                self._namesrv_unreachable(exc)
                return False
            except Exception as exc:
                log.debug("route of %s not updated: %s", topic, exc)
                return False
            self._namesrv_reachable()
            if route is None:
                return False
            self.topic_routes[topic] = route
            for bd in route.broker_datas:
                self.broker_addrs[bd.broker_name] = {int(k): v for k, v in bd.broker_addrs.items()}
            for producer in list(self.producers.values()):
                if topic in producer.publish_topics():
                    producer.update_topic_publish_info(topic, route)
            mqs = subscribe_queues(topic, route)
            for consumer in list(self.consumers.values()):
                if any(s.topic == topic for s in consumer.subscriptions()):
                    consumer.update_topic_subscribe_info(topic, mqs)
            return True

    def _namesrv_unreachable(self, exc: NamesrvUnreachableError) -> None:
        """Say so once per outage (at WARNING, which Python prints even without logging set up): which
        addresses failed and what the client does next; producers raise `namesrv_error` instead of
        "No route info" while it lasts."""
        if self.namesrv_error is None or str(self.namesrv_error) != str(exc):
            log.warning("%s; %s", exc, self._next_route_lookup())
        self.namesrv_error = exc

    def _next_route_lookup(self) -> str:
        """When routes are asked for again: the periodic refresh covers the consumers' topics and the
        producers' topics that have a route; a send to a topic without one asks at once."""
        polled = {s.topic for c in self.consumers.values() for s in c.subscriptions()}
        polled |= {t for p in self.producers.values() for t in p.publish_topics() if t in self.topic_routes}
        if not polled:
            return "the next send asks again"
        topics = sorted(t for t in polled if not t.startswith("%")) or sorted(polled)  # (not %RETRY%...)
        names = ", ".join(topics[:3]) + (", ..." if len(topics) > 3 else "")
        return f"asking again every {self.config.poll_namesrv_interval:.0f} s for the routes of {names}"

    def _namesrv_reachable(self) -> None:
        if self.namesrv_error is not None:
            log.info("a nameserver answers again (%s)", ", ".join(self.config.namesrv_addrs))
            self.namesrv_error = None

    async def update_all_routes(self) -> None:
        topics: set[str] = set()
        for producer in self.producers.values():
            topics |= producer.publish_topics()
        for consumer in self.consumers.values():
            topics |= {s.topic for s in consumer.subscriptions()}
        for topic in sorted(topics):
            await self.update_topic_route(topic)

    def master_address(self, broker_name: str) -> str | None:
        return self.broker_addrs.get(broker_name, {}).get(MASTER_ID)

    def broker_address_for_subscribe(
        self, broker_name: str, broker_id: int = MASTER_ID
    ) -> tuple[str, bool] | None:
        """The address to pull from: the suggested broker id if known, else master, else any slave.
        The flag says whether it is a slave."""
        addrs = self.broker_addrs.get(broker_name)
        if not addrs:
            return None
        if broker_id in addrs:
            return addrs[broker_id], broker_id != MASTER_ID
        if MASTER_ID in addrs:
            return addrs[MASTER_ID], False
        some_id = min(addrs)
        return addrs[some_id], some_id != MASTER_ID

    async def find_master_address(self, broker_name: str, topic: str | None = None) -> str | None:
        addr = self.master_address(broker_name)
        if addr is None and topic is not None:
            await self.update_topic_route(topic)
            addr = self.master_address(broker_name)
        return addr

    async def find_consumer_ids(self, topic: str, group: str) -> list[str]:
        """The group's client ids from one broker of the topic (a master preferred)."""
        route = self.topic_routes.get(topic)
        names = (
            [bd.broker_name for bd in route.broker_datas] if route is not None else list(self.broker_addrs)
        )
        random.shuffle(names)
        for name in names:
            found = self.broker_address_for_subscribe(name)
            if found is None:
                continue
            try:
                return await self.api.get_consumer_id_list(found[0], group)
            except Exception as exc:
                log.debug("consumer list of %s from %s failed: %s", group, found[0], exc)
        return []

    async def refresh_subscriptions(self, consumer: ConsumerInner) -> None:
        """After a consumer (re)subscribes: routes, a heartbeat, then routes again for topics the
        heartbeat made the broker create (%RETRY%<group>), and a rebalance."""
        topics = [s.topic for s in consumer.subscriptions()]
        for topic in topics:
            await self.update_topic_route(topic)
        await self.check_client_in_broker(consumer)
        await self.send_heartbeat_to_all()
        missing = [topic for topic in topics if not await self._has_route(topic)]
        if missing:
            self.spawn(self._routes_once_registered(missing), "routes of new topics")
        self.rebalance_immediately()

    async def _has_route(self, topic: str) -> bool:
        return topic in self.topic_routes or await self.update_topic_route(topic)

    async def _routes_once_registered(self, topics: list[str], attempts: int = 20) -> None:
        """The heartbeat makes the broker create %RETRY%<group>, which reaches the name server when the
        broker re-registers, a moment later. Ask again for a few seconds rather than leave the retry
        queue unassigned until the next route poll (30 s): that wait delayed the first redelivery of a
        RECONSUME_LATER message well past its delay level (issue 12, C.4)."""
        for _ in range(attempts):
            await asyncio.sleep(0.25)
            topics = [topic for topic in topics if not await self._has_route(topic)]
            if not topics:
                self.rebalance_immediately()
                return

    async def check_client_in_broker(self, consumer: ConsumerInner) -> None:
        """Ask each master of a SQL92-subscribed topic whether it can filter by the expression
        (CHECK_CLIENT_CONFIG, as RocketMQ's consumer does at start); raise ClientError when one refuses."""
        for sub in consumer.subscriptions():
            if sub.expression_type == EXPRESSION_TAG:
                continue
            route = self.topic_routes.get(sub.topic)
            for bd in route.broker_datas if route is not None else []:
                addr = self.master_address(bd.broker_name)
                if addr is None:
                    continue
                try:
                    await self.api.check_client_config(
                        addr, self.client_id, consumer.group, sub.to_json_dict()
                    )
                except BrokerError as exc:
                    raise ClientError(
                        f"the broker {bd.broker_name} ({addr}) refused the {sub.expression_type} "
                        f"subscription {sub.sub_string!r} of topic {sub.topic}: {exc.remark}"
                    ) from exc

    def spawn(self, coro: Awaitable[None], name: str) -> None:
        """Run a one-off background job owned by this instance (cancelled on shutdown)."""
        task = self._spawn(coro, name)
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    # ---- heartbeats -------------------------------------------------------------------------

    def heartbeat_json(self) -> bytes:
        producers = [{"groupName": CLIENT_INNER_PRODUCER_GROUP}]
        producers += [{"groupName": g} for g in sorted(self.producers)]
        consumers = [
            {
                "consumeFromWhere": c.consume_from_where.value,
                "consumeType": c.consume_type.value,
                "groupName": c.group,
                "messageModel": c.message_model.value,
                "subscriptionDataSet": [s.to_json_dict() for s in c.subscriptions()],
                "unitMode": False,
            }
            for c in self.consumers.values()
        ]
        return orjson.dumps(
            {"clientID": self.client_id, "consumerDataSet": consumers, "producerDataSet": producers}
        )

    async def send_heartbeat_to_all(self) -> None:
        """Every broker hears of our groups; a producer-only client talks to masters only."""
        if not self.producers and not self.consumers:
            return
        async with self._heartbeat_lock:
            body = self.heartbeat_json()
            only_masters = not self.consumers
            sends = []
            for addrs in list(self.broker_addrs.values()):
                for broker_id, addr in addrs.items():
                    if only_masters and broker_id != MASTER_ID:
                        continue
                    sends.append(self._heartbeat_one(addr, body))
            await asyncio.gather(*sends)

    async def _heartbeat_one(self, addr: str, body: bytes) -> None:
        try:
            self.broker_versions[addr] = await self.api.heartbeat(addr, body)
        except Exception as exc:
            log.debug("heartbeat to %s failed: %s", addr, exc)

    # ---- rebalance and offsets --------------------------------------------------------------

    def rebalance_immediately(self) -> None:
        self._rebalance_now.set()

    async def _rebalance_service(self) -> None:
        # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancel that races with the event.
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.rebalance_interval):
                    await self._rebalance_now.wait()
            self._rebalance_now.clear()
            if not self._stopping:
                await self.do_rebalance()

    async def do_rebalance(self) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.do_rebalance()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: rebalance of %s failed", self.client_id, consumer.group)

    async def persist_all_offsets(self) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.persist_consumer_offset()
            except Exception as exc:
                log.debug("persisting offsets of %s failed: %s", consumer.group, exc)
