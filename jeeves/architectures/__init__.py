"""Architectures built from the kernel: critic loops and coordinators over any architecture."""

from jeeves.architectures.supervisor import Delegation, Supervisor, SupervisorOutput

__all__ = ["Delegation", "Supervisor", "SupervisorOutput"]
