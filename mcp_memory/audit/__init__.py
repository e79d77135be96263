"""The audit trail: who changed or read which memories, when, hash-chained (docs/security.md).

records.py: a record, its hash, the chain and pseudonyms; context.py: who is acting and the record a
change is making; log.py: the AuditLog a backend keeps and the Auditor everything records through.
"""

from mcp_memory.audit.context import Actor, Draft, acting
from mcp_memory.audit.log import COMMAND_ACTOR, SERVICE_ACTOR, AuditLog, Auditor, AuditQuery
from mcp_memory.audit.records import AuditRecord, Verification

__all__ = [
    "COMMAND_ACTOR",
    "SERVICE_ACTOR",
    "Actor",
    "AuditLog",
    "AuditQuery",
    "AuditRecord",
    "Auditor",
    "Draft",
    "Verification",
    "acting",
]
