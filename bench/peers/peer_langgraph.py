"""LangGraph: (a) a reflection graph (generate ⇄ reflect), (b) a supervisor graph with one worker.

The fake chat model is a langchain `BaseChatModel` with native async streaming (`_astream`:
it yields once, then streams `common.chunks(text)`; a tool call as one chunk; the last chunk
carries `common`'s usage as `usage_metadata`, as provider integrations do), one built per
role at import: langchain's `GenericFakeChatModel` only streams
synchronously, which langchain runs in a thread pool per call. Events are consumed through
`graph.astream(stream_mode=["messages", "updates"])`. Runs in its own venv; prints JSON.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

USAGE = UsageMetadata(
    input_tokens=common.INPUT_TOKENS,
    output_tokens=common.OUTPUT_TOKENS,
    total_tokens=common.INPUT_TOKENS + common.OUTPUT_TOKENS,
)


class FakeChat(BaseChatModel):
    """Zero-latency chat model; the reply depends on `role` and the request's text."""

    role: str

    @property
    def _llm_type(self) -> str:
        return "bench-fake"

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        prompt = str(messages[-1].content)
        if self.role == "actor":
            return AIMessage(content=common.actor_reply(prompt))
        if self.role == "critic":
            return AIMessage(content=common.critic_reply(prompt))
        if self.role == "worker":
            return AIMessage(content=common.worker_reply())
        reply = common.supervisor_reply(isinstance(messages[-1], ToolMessage))
        if isinstance(reply, str):
            return AIMessage(content=reply)
        return AIMessage(content="", tool_calls=[{"name": "delegate", "args": reply, "id": "call_1"}])

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        message = self._reply(messages)
        message.usage_metadata = USAGE
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        await common.provider_wait()
        return self._generate(messages)

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        message = self._reply(messages)
        await common.provider_wait()
        if message.tool_calls:
            call = message.tool_calls[0]
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {"name": call["name"], "args": json.dumps(call["args"]), "id": call["id"], "index": 0}
                    ],
                    usage_metadata=USAGE,
                )
            )
            return
        pieces = common.chunks(str(message.content))
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(content=piece, usage_metadata=USAGE if last else None)
            )
            if run_manager:
                await run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


# -- (a) reflection graph -------------------------------------------------------------------


class ReflectState(TypedDict):
    prompt: str
    draft: str
    verdict: dict[str, Any]
    best: str
    best_score: float
    rounds: int


actor_model = FakeChat(role="actor")
critic_model = FakeChat(role="critic")


async def generate(state: ReflectState) -> dict[str, Any]:
    reply = await actor_model.ainvoke([SystemMessage("You write code."), HumanMessage(state["prompt"])])
    return {"draft": str(reply.content), "rounds": state["rounds"] + 1}


async def reflect(state: ReflectState) -> dict[str, Any]:
    review = [
        SystemMessage("You review code."),
        HumanMessage(common.critique_prompt(common.TASK, state["draft"])),
    ]
    verdict = common.verdict_for(str((await critic_model.ainvoke(review)).content))
    update: dict[str, Any] = {"verdict": verdict}
    if verdict["score"] >= state["best_score"]:
        update |= {"best": state["draft"], "best_score": verdict["score"]}
    update["prompt"] = common.refine_prompt(common.TASK, state["draft"], verdict)
    return update


def next_step(state: ReflectState) -> str:
    if state["verdict"]["score"] >= common.APPROVE_AT or state["rounds"] >= 3:
        return END
    return "generate"


reflection = StateGraph(ReflectState)
reflection.add_node("generate", generate)
reflection.add_node("reflect", reflect)
reflection.add_edge(START, "generate")
reflection.add_edge("generate", "reflect")
reflection.add_conditional_edges("reflect", next_step)
REFLECTION = reflection.compile()


# -- (b) supervisor graph -------------------------------------------------------------------


class TeamState(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]


supervisor_model = FakeChat(role="supervisor")
worker_model = FakeChat(role="worker")


async def supervise(state: TeamState) -> dict[str, Any]:
    return {"messages": [await supervisor_model.ainvoke(state["messages"])]}


async def work(state: TeamState) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]  # type: ignore[attr-defined]
    reply = await worker_model.ainvoke(
        [SystemMessage("You write code."), HumanMessage(call["args"]["instructions"])]
    )
    return {"messages": [ToolMessage(content=str(reply.content), tool_call_id=call["id"])]}


def route(state: TeamState) -> str:
    last = state["messages"][-1]
    return "worker" if isinstance(last, AIMessage) and last.tool_calls else END


team = StateGraph(TeamState)
team.add_node("supervisor", supervise)
team.add_node("worker", work)
team.add_edge(START, "supervisor")
team.add_conditional_edges("supervisor", route)
team.add_edge("worker", "supervisor")
TEAM = team.compile()


async def actor_critic() -> int:
    count, final = 0, {}
    start = {"prompt": common.TASK, "draft": "", "verdict": {}, "best": "", "best_score": -1.0, "rounds": 0}
    async for mode, chunk in REFLECTION.astream(start, stream_mode=["messages", "updates"]):
        count += 1
        if mode == "updates" and "reflect" in chunk:
            final = chunk["reflect"]
    assert final.get("best") == common.DRAFTS[2], final
    return count


async def supervisor() -> int:
    count, last = 0, None
    start = {"messages": [SystemMessage("You coordinate."), HumanMessage(common.TASK)]}
    async for mode, chunk in TEAM.astream(start, stream_mode=["messages", "updates"]):
        count += 1
        if mode == "updates" and "supervisor" in chunk:
            last = chunk["supervisor"]["messages"][-1]
    assert last is not None and last.content == common.SUMMARY, last
    return count


if __name__ == "__main__":
    common.main(
        {"a": (actor_critic, common.CALLS_A), "b": (supervisor, common.CALLS_B)},
        {"langgraph": version("langgraph"), "langchain-core": version("langchain-core")},
        notes={"a": "reflection StateGraph", "b": "supervisor StateGraph with a worker node"},
    )
