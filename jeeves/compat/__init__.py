"""Compatibility layers: other frameworks' constructors, building jeeves architectures.

Each submodule is imported on its own (`from jeeves.compat.jeevesagent import ActorCritic`);
`import jeeves` imports none of them. A layer translates names, defaults and prompt
templates; what runs is the jeeves architecture, with its events, ids, replay and routing.
"""

__all__: list[str] = []
