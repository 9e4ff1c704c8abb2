"""END_TRANSACTION (37): a producer's commit / rollback / unknown for a half message (fact sheet 10.3).

A slave answers SLAVE_NOT_AVAILABLE; "unknown" (0) and unrecognised decisions get no answer (the request
is oneway anyway); everything else is decided by the TransactionalMessageService.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from orbitmq.broker.processors.base import Fields, guarded
from orbitmq.broker.transaction.service import TransactionalMessageService
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.transport.server import RemotingServer


class EndTransactionProcessor:
    def __init__(self, service: TransactionalMessageService, is_slave: Callable[[], bool]) -> None:
        self.service = service
        self._is_slave = is_slave

    async def process(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if self._is_slave():
            return RemotingCommand.response(
                ResponseCode.SLAVE_NOT_AVAILABLE,
                "Message store is slave mode, so end transaction is forbidden. ",
            )
        f = Fields(request.ext_fields)
        result = self.service.end_transaction(
            producer_group=f.req_str("producerGroup"),
            tran_state_table_offset=f.req_long("tranStateTableOffset"),
            commit_log_offset=f.req_long("commitLogOffset"),
            commit_or_rollback=f.req_int("commitOrRollback"),
            from_check=f.opt_bool("fromTransactionCheck", False),
        )
        if result is None:
            return None
        return RemotingCommand.response(result.code, result.remark)


def register(
    server: RemotingServer, service: TransactionalMessageService, *, is_slave: Callable[[], bool]
) -> EndTransactionProcessor:
    processor = EndTransactionProcessor(service, is_slave)
    server.register(RequestCode.END_TRANSACTION, guarded(processor.process))
    return processor
