"""The run kernel (private): what a run needs in flight.

Entry points (`runner`), the `Context` an architecture runs in (with `Architecture` and
`Output`), journaled steps, sessions, model calls, gates as steps, the run's shared state,
its lifecycle, replay planning and interventions. Users reach all of it through `jeeves`.
"""

__all__: list[str] = []
