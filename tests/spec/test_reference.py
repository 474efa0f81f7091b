"""docs/specs.md cannot drift from the spec models: its key tables are generated from them."""

from __future__ import annotations

from jeeves.spec import models
from jeeves.spec.reference import BEGIN, END, SECTIONS, reference_markdown
from tests.conftest import REPO

PAGE = REPO / "docs" / "specs.md"


def test_the_page_holds_the_generated_reference_as_it_is_now() -> None:
    text = PAGE.read_text(encoding="utf-8")
    generated = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert generated == reference_markdown(), "run: python -m jeeves.spec.reference docs/specs.md"


def test_every_spec_model_has_a_section_and_every_field_a_row_with_a_meaning() -> None:
    documented = {model for _, model in SECTIONS}
    spec_models = {
        *models.ARCHITECTURE_SPECS.values(),
        *models.CRITIC_SPECS.values(),
        models.RouteSpec,
        models.DecisionTable,
        models.StepBudgetTable,
        models.DemoSpec,
        models.ReplySpec,
        models.ToolCallSpec,
        models.Spec,
        models.WatchdogSpec,
        models.StopSpec,
        models.StopWhenSpec,
        models.MCPServerSpec,
    }
    assert spec_models == documented
    text = PAGE.read_text(encoding="utf-8")
    for model in spec_models:
        for name, info in model.model_fields.items():
            if model is models.Spec and name in ("architecture", "path"):
                continue  # the file's top level is the architecture; path is where it was read from
            assert f"| `{name}` |" in text, f"{model.__name__}.{name} is not in docs/specs.md"
            assert name == "type" or info.description, f"{model.__name__}.{name} has no docstring"
