"""Architectures that compose others: critic loops (ActorCritic, SelfRefine) and a coordinator (Supervisor)."""

from jeeves.architectures._loop import ActorCriticOutput, Round
from jeeves.architectures.actor_critic import ActorCritic
from jeeves.architectures.plan_execute import PlanExecute, PlanExecuteOutput
from jeeves.architectures.self_refine import SelfRefine, SelfRefineOutput
from jeeves.architectures.supervisor import Delegation, Supervisor, SupervisorOutput

__all__ = [
    "ActorCritic",
    "ActorCriticOutput",
    "Delegation",
    "PlanExecute",
    "PlanExecuteOutput",
    "Round",
    "SelfRefine",
    "SelfRefineOutput",
    "Supervisor",
    "SupervisorOutput",
]
