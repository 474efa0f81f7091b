"""Architectures that compose others: critic loops (ActorCritic, SelfRefine), a coordinator
(Supervisor), selection among candidates (BestOfN), and a goal run watched by a watchdog and ended by a success critic (Goal)."""

from jeeves.architectures.actor_critic import ActorCritic
from jeeves.architectures.best_of_n import BestOfN, BestOfNOutput, Candidate
from jeeves.architectures.critic_loop import ActorCriticOutput, Round
from jeeves.architectures.goal import Goal, GoalOutput
from jeeves.architectures.plan_execute import AttemptRecord, PlanExecute, PlanExecuteOutput
from jeeves.architectures.self_refine import SelfRefine, SelfRefineOutput
from jeeves.architectures.supervisor import Delegation, Supervisor, SupervisorOutput

__all__ = [
    "ActorCritic",
    "ActorCriticOutput",
    "AttemptRecord",
    "BestOfN",
    "BestOfNOutput",
    "Candidate",
    "Delegation",
    "Goal",
    "GoalOutput",
    "PlanExecute",
    "PlanExecuteOutput",
    "Round",
    "SelfRefine",
    "SelfRefineOutput",
    "Supervisor",
    "SupervisorOutput",
]
