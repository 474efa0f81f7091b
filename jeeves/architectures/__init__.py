"""Architectures that compose others: critic loops (ActorCritic, SelfRefine), a coordinator
(Supervisor), selection among candidates (BestOfN), and a goal run watched by a watchdog and ended by a success critic (Goal).

Also the few kernel helpers an architecture of your own may need: `next_index(ctx)` (allocate
a step index ahead, for steps started at once), `report_plan(ctx, ...)` (where the run is in a
plan it executes) and `model_callers` / `join_callers` / `Caller` (which sessions of a tree
call models, for `jeeves.describe` and checked route keys).
"""

from jeeves._run.context import Caller, join_callers, model_callers
from jeeves._run.steps import next_index, report_plan
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
    "Caller",
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
    "join_callers",
    "model_callers",
    "next_index",
    "report_plan",
]
