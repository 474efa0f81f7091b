"""Testing helpers: models that answer from scripts or functions, never from the network."""

from jeeves.models.testing import FunctionModel, Reply, ScriptedModel, Step, call

__all__ = ["FunctionModel", "Reply", "ScriptedModel", "Step", "call"]
