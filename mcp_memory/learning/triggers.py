"""When background learning runs: every-N counters in the store (the hourly budget: budget.py).

Each counter increment is atomic in the store, so among any number of replicas (or a separate
worker process) exactly one sees the value that fires a trigger: that one runs the job.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mcp_memory.config import LearningSettings
from mcp_memory.storage.learning_base import TriggerCounters

log = logging.getLogger(__name__)


def turns_key(thread_id: str) -> str:
    # Ends with "/", which no thread id contains: forgetting thread "t1" by prefix spares "t10".
    return f"turns:{thread_id}/"


EXTRACTIONS_KEY = "extractions"


@dataclass
class Triggers:
    counters: TriggerCounters
    settings: LearningSettings

    async def turn_added(self, user_id: str, thread_id: str) -> bool:
        """Count a stored turn; True for exactly one caller every extract_every_turns turns."""
        every = self.settings.extract_every_turns
        if every == 0:
            return False
        return await self.counters.increment(user_id, turns_key(thread_id)) % every == 0

    async def extraction_done(self, user_id: str) -> bool:
        """Count an extraction that stored something; True every reconcile_every_extractions."""
        every = self.settings.reconcile_every_extractions
        if every == 0:
            return False
        return await self.counters.increment(user_id, EXTRACTIONS_KEY) % every == 0
