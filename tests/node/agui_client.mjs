// The official AG-UI client (@ag-ui/client's HttpAgent) against a live Switchboard.
// Driven by tests/agui/test_agui_node.py: AGUI_URL is the endpoint, AGUI_TOKEN a token
// (token mode). Prints one JSON report on stdout for the Python test to check:
//
// - approve: a turn with a tool card that stops at an interrupt, answered "approved"
//   with buildResumeArray, and what the agent's messages hold at the end;
// - reject: the same turn answered "approved: false" with a reason;
// - refused: a second HttpAgent on the first thread, sending a message while that
//   thread's interrupt is open (the server answers RUN_ERROR).
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const url = process.env.AGUI_URL;
const headers = process.env.AGUI_TOKEN ? { Authorization: `Bearer ${process.env.AGUI_TOKEN}` } : {};
const PROMPT = "find sushi in Boston and email the list to bob@example.com";

function recorder() {
  const events = [];
  return { events, subscriber: { onEvent: ({ event }) => void events.push(event) } };
}

async function run(agent, parameters) {
  const { events, subscriber } = recorder();
  let error = null;
  try {
    await agent.runAgent(parameters, subscriber);
  } catch (caught) {
    error = String(caught?.message ?? caught);
  }
  return { types: events.map((e) => e.type), events, error };
}

function summary(agent) {
  return agent.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === "string" ? m.content : null,
    toolCalls: (m.toolCalls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
    toolCallId: m.toolCallId ?? null,
  }));
}

async function decide(threadId, payload) {
  const agent = new HttpAgent({ url, headers, threadId });
  agent.addMessage({ id: `m-${threadId}`, role: "user", content: PROMPT });
  const first = await run(agent);
  const interrupts = agent.pendingInterrupts;
  const responses = Object.fromEntries(interrupts.map((i) => [i.id, { status: "resolved", payload }]));
  const second = await run(agent, { resume: buildResumeArray(interrupts, responses) });
  return { first, interrupts, second, pendingAfter: agent.pendingInterrupts, messages: summary(agent) };
}

const approveThread = `node-approve-${process.pid}`;
const report = {
  approve: await decide(approveThread, { approved: true }),
  reject: await decide(`node-reject-${process.pid}`, { approved: false, reason: "not now" }),
};

// An interrupt left open on a third thread; a client that does not know of it sends a
// new message there.
const pausedThread = `node-paused-${process.pid}`;
const paused = new HttpAgent({ url, headers, threadId: pausedThread });
paused.addMessage({ id: "m-paused", role: "user", content: PROMPT });
await run(paused);
const stranger = new HttpAgent({ url, headers, threadId: pausedThread });
stranger.addMessage({ id: "m-stranger", role: "user", content: "find pizza in Boston" });
report.refused = { open: paused.pendingInterrupts, ...(await run(stranger)) };
report.threads = { approve: approveThread, paused: pausedThread };

process.stdout.write(JSON.stringify(report));
