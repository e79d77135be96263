"""What the knowledge-graph tools return: the reference memory server's shapes, field for field."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class EntityView(BaseModel):
    name: str = Field(description="The name of the entity")
    entityType: str = Field(description="The type of the entity")
    observations: list[str] = Field(description="An array of observation contents associated with the entity")


class RelationView(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    source: str = Field(alias="from", description="The name of the entity where the relation starts")
    to: str = Field(description="The name of the entity where the relation ends")
    relationType: str = Field(description="The type of the relation")


class ObservationAddition(BaseModel):
    entityName: str = Field(description="The name of the entity to add the observations to")
    contents: list[str] = Field(description="An array of observation contents to add")


class ObservationDeletion(BaseModel):
    entityName: str = Field(description="The name of the entity containing the observations")
    observations: list[str] = Field(description="An array of observations to delete")


class AddedObservations(BaseModel):
    entityName: str
    addedObservations: list[str]


class EntitiesResult(BaseModel):
    entities: list[EntityView]


class RelationsResult(BaseModel):
    relations: list[RelationView]


class ObservationsResult(BaseModel):
    results: list[AddedObservations]


class DeletionResult(BaseModel):
    success: bool
    message: str


# A graph or part of it. nextCursor appears only when the caller paged (limit, cursor, max_tokens) and more
# remains: without those the result is exactly the reference server's. (No docstring: it would become the
# output schema's description, which the reference's lacks.)
class GraphResult(BaseModel):
    entities: list[EntityView]
    relations: list[RelationView]
    nextCursor: str | None = Field(
        default=None, description="Pass as cursor to read the next page; absent on the last page."
    )


class ObservationDetail(BaseModel):
    content: str
    created_at: datetime
    memory_id: str
    author: str | None = None


class EntityDetail(BaseModel):
    """Our own view of an entity: each observation with when it was made (and by whom, in a space)."""

    name: str
    entityType: str
    created_at: datetime
    space: str | None = None
    observations: list[ObservationDetail]
    relations: list[RelationView]
    linked_memories: list[str] = Field(
        default_factory=list, description="Ids of the turns and facts that mention the entity."
    )
