"""Declarative specs: architectures as TOML files, and architectures back to TOML.

```python
from jeeves.spec import build, dumps, load_spec

spec = load_spec("architectures/codegen.toml")   # validated; errors name the key path
arch, router = build(spec)                        # ordinary Agent / ActorCritic / ... objects
result = await jeeves.run(arch, "Write slugify(text).", router=router)
print(dumps(arch))                                # an architecture built in code, as a spec
```

See docs/specs.md for every key.
"""

from jeeves.spec.build import build, scripted_model
from jeeves.spec.dump import dump, dumps, spec_dict, spec_of
from jeeves.spec.load import load_spec, parse_spec
from jeeves.spec.models import DemoSpec, Spec
from jeeves.spec.source import load_spec_source, spec_source  # registers the "spec" replay source
from jeeves.spec.toml import to_toml

__all__ = [
    "DemoSpec",
    "Spec",
    "build",
    "dump",
    "dumps",
    "load_spec",
    "load_spec_source",
    "parse_spec",
    "scripted_model",
    "spec_dict",
    "spec_of",
    "spec_source",
    "to_toml",
]
