// An AG-UI run that stops at an approval interrupt, then resumes it, with the real @ag-ui/client.
// Usage: node interrupt.mjs URL TASK RUN_ID [TOKEN]
// Prints {"kind": "interrupt"} with the first run's events and the agent's pendingInterrupts,
// then answers every interrupt (approve, with the arguments hash its responseSchema fixes)
// through the client's own buildResumeArray, runs again, and prints {"kind": "result"} with
// the second run's events, the result and the messages; {"kind": "error"} and exit 1 otherwise.
import { HttpAgent, buildResumeArray, isInterruptExpired } from "@ag-ui/client";

const [url, task, runId, token] = process.argv.slice(2);
const out = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const agent = new HttpAgent({
  url,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
  threadId: "thread-node-gate",
  initialMessages: [{ id: "user-1", role: "user", content: task }],
});

async function run(params) {
  const events = [];
  const { result } = await agent.runAgent(params, { onEvent: ({ event }) => events.push(event) });
  return { events, result };
}

try {
  const first = await run({ runId });
  const pending = agent.pendingInterrupts;
  out({
    kind: "interrupt",
    events: first.events,
    pendingInterrupts: pending,
    expired: pending.some((i) => isInterruptExpired(i)),
  });
  const answers = Object.fromEntries(
    pending.map((i) => [
      i.id,
      {
        status: "resolved",
        payload: {
          decision: "approve",
          arguments_hash: i.responseSchema.properties.arguments_hash.const,
          by: "node",
        },
      },
    ]),
  );
  const second = await run({ runId: `${runId}-resumed`, resume: buildResumeArray(pending, answers) });
  out({
    kind: "result",
    events: second.events,
    result: second.result,
    messages: agent.messages,
    pendingInterrupts: agent.pendingInterrupts,
  });
} catch (error) {
  out({ kind: "error", message: String(error?.message ?? error) });
  process.exitCode = 1;
}
