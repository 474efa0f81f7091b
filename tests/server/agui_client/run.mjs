// One AG-UI run against a jeeves server, with the real @ag-ui/client (HttpAgent).
// Usage: node run.mjs URL TASK RUN_ID [TOKEN]
// Prints one JSON line per event the client accepted ({"kind": "event"}), then the
// outcome: {"kind": "result"} with the agent's messages, or {"kind": "error"} and exit 1.
// The client verifies the stream as it goes (event order, open messages, subagents),
// so a malformed stream ends in the error branch.
import { HttpAgent } from "@ag-ui/client";

const [url, task, runId, token] = process.argv.slice(2);
const out = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const agent = new HttpAgent({
  url,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
  threadId: "thread-node",
  initialMessages: [{ id: "user-1", role: "user", content: task }],
});

try {
  const { result } = await agent.runAgent(
    { runId },
    { onEvent: ({ event }) => out({ kind: "event", event }) },
  );
  out({ kind: "result", result, messages: agent.messages });
} catch (error) {
  out({ kind: "error", message: String(error?.message ?? error) });
  process.exitCode = 1;
}
