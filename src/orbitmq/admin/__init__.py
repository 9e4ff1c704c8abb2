"""orbitmq.admin: cluster administration as mqadmin does it.

- `AdminClient` (asyncio) and `BlockingAdminClient`: topics, groups, brokers, offsets, messages.
- `orbitmq admin SUBCOMMAND ...` (`orbitmq.admin.cli.main`): mqadmin's subcommand names and flags.
"""

from orbitmq.admin.api import AdminClient, AdminError
from orbitmq.admin.blocking import BlockingAdminClient

__all__ = ["AdminClient", "AdminError", "BlockingAdminClient"]
