"""The queue: one Celery configuration, and tasks sent *by name*.

The API and the sweeper publish with :func:`publish`; only ``workers/`` defines the
tasks. Messages carry a submission id and nothing else: the database says what to do.

Queues, consumed in this order by a grading worker (kombu's ``priority`` strategy: a
worker takes from ``interactive`` whenever it has work, before ``batch``):

``interactive``  single submissions from students and LMS integrations
``batch``        a class's batch, problem rejudges, builds of uploaded packages
``webhooks``     report deliveries: webhooks and LTI scores (a separate worker, so a
                 slow receiver or LMS never holds a grading slot)
"""

from __future__ import annotations

from typing import Any

import redis
from celery import Celery
from kombu import Queue
from kombu.transport import redis as kombu_redis

from service.settings import ServiceSettings

INTERACTIVE = "interactive"
BATCH = "batch"
WEBHOOKS = "webhooks"
GRADING_QUEUES = (INTERACTIVE, BATCH)

GRADE_TASK = "jaxjudge.grade"
BUILD_TASK = "jaxjudge.build"  # build and verify an uploaded package version
DELIVER_TASK = "jaxjudge.deliver"  # one try of an outbox delivery, of any kind
WEBHOOK_TASK = "jaxjudge.deliver_webhook"  # its name before LTI scores (queued messages)


class _Channel(kombu_redis.Channel):
    """kombu's Redis channel, mended for one crash (celery 5.7.0 / kombu 5.7.0).

    When the broker goes away, the worker first *collects* its connection (which drops
    the transport's client) and then closes it. If the consumer channel still holds an
    unacknowledged message at that point (a task waiting for its countdown, such as a
    webhook retry), closing it tries to put the message back, builds connection
    parameters from the dropped client, and raises ``AttributeError``, which Celery
    treats as unrecoverable: the worker exits for good. Raising a connection error
    instead is what the close expects; the message stays in Redis's unacked set and
    kombu redelivers it after the visibility timeout. (Webhook tries are scheduled in
    the database too, so the sweeper resends a lost one long before that.)
    """

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection was closed")
        params: dict[str, Any] = super()._connparams(asynchronous)
        return params


class Transport(kombu_redis.Transport):
    Channel = _Channel


def make_celery(settings: ServiceSettings) -> Celery:
    app = Celery("jaxjudge", broker=settings.redis_url, set_as_current=False)
    app.conf.update(
        broker_transport=Transport,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        result_backend=None,
        # Late acknowledgement, requeue when the worker is lost, one task at a time.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=settings.worker_concurrency,  # unless --concurrency says otherwise
        task_soft_time_limit=settings.soft_time_limit_seconds,
        task_time_limit=settings.time_limit_seconds,
        task_queues=[Queue(INTERACTIVE), Queue(BATCH), Queue(WEBHOOKS)],
        task_default_queue=INTERACTIVE,
        task_routes={DELIVER_TASK: {"queue": WEBHOOKS}, WEBHOOK_TASK: {"queue": WEBHOOKS}},
        broker_transport_options={
            "visibility_timeout": settings.visibility_timeout_seconds,
            "queue_order_strategy": "priority",
            "socket_timeout": 10,
            "socket_connect_timeout": 5,
        },
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        worker_send_task_events=False,
        task_send_sent_event=False,
        worker_enable_remote_control=True,
    )
    return app


def publish(app: Celery, name: str, args: list[Any], *, queue: str, timeout: float,
            countdown: float | None = None) -> None:
    """Send task ``name``; raises (kombu's OperationalError or an OSError) when the broker
    cannot be reached within about ``timeout`` seconds."""
    app.send_task(
        name, args=args, queue=queue, countdown=countdown,
        retry=True,
        retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": timeout / 4,
                      "interval_max": timeout / 2},
    )


def send_delivery(app: Celery, delivery_id: str, try_no: int, *, timeout: float) -> None:
    """Queue try ``try_no`` (from 0) of outbox delivery ``delivery_id``, a webhook or an
    LTI score (:mod:`service.deliveries`)."""
    publish(app, DELIVER_TASK, [delivery_id, try_no], queue=WEBHOOKS, timeout=timeout)
