"""Architectures that compose others: ActorCritic and SelfRefine (critic loops)."""

from jeeves.architectures._loop import ActorCriticOutput, Round
from jeeves.architectures.actor_critic import ActorCritic
from jeeves.architectures.self_refine import SelfRefine, SelfRefineOutput

__all__ = ["ActorCritic", "ActorCriticOutput", "Round", "SelfRefine", "SelfRefineOutput"]
