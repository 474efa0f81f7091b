"""Durable runs on DBOS: workers on many machines sharing one PostgreSQL database.

- `Worker(targets, database=..., concurrency=...)`: executes submitted runs from DBOS
  queues (`await worker.run()`, asyncio only), beats, and takes over the runs of workers
  that stopped beating (`jeeves worker`).
- `submit(target, task, session_id=...)`: queues a run from any process (`jeeves submit`);
  `wait(session_id)`: its outcome; `wake(session_id)`: resume a run waiting at a gate
  once its decision is recorded (`jeeves approve DATABASE SESSION` does both).

A run is a DBOS workflow whose id is the root session id; jeeves' journal (in the same
database) is the one store of its step results. See docs/scaling.md. Needs the extra:
`pip install "jeeves[dbos]"`; `import jeeves` does not import this package.
"""

from jeeves.durable.submit import submit, wait, wake
from jeeves.durable.targets import queue_name, target_name
from jeeves.durable.worker import DATABASE_ENV, Worker

__all__ = ["DATABASE_ENV", "Worker", "queue_name", "submit", "target_name", "wait", "wake"]
