"""The jeeves server: start runs over HTTP and stream them as SSE, as AG-UI, and to a live page.

```python
from jeeves.server import create_app

app = create_app({"review": make_reviewer}, router=router, token="s3cret")
# uvicorn module:app --host 127.0.0.1   or   jeeves serve
```

See docs/streaming.md for the endpoints, the SSE format and the AG-UI mapping.
"""

from __future__ import annotations

from jeeves.server.agui import AguiMapper
from jeeves.server.app import create_app
from jeeves.server.catalog import Catalog
from jeeves.server.runs import RunRecord, RunRegistry
from jeeves.server.serve import serve

__all__ = ["AguiMapper", "Catalog", "RunRecord", "RunRegistry", "create_app", "serve"]
