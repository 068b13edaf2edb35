// The Vercel AI SDK (`ai` with `@ai-sdk/openai`'s `.responses()` and with
// `@ai-sdk/open-responses`) against a live Switchboard's /v1/responses. Driven by
// tests/openresponses/test_open_responses_ai_sdk.py: SWITCHBOARD_URL is the server. Prints
// one JSON report on stdout for the Python test to check: for each provider, generateText
// and streamText on prompts that run Switchboard's tools and the client's own tool, with
// and without stopWhen, two turns each; every tool part the SDK produced (its name, and
// whether the provider ran it), every error it raised or streamed, and every call of the
// client's tool. `@ai-sdk/openai` is used as documented: with the header
// `Switchboard-Tool-Items: mcp`, so that Switchboard's calls come as `mcp_call` items its
// non-streamed parser reads ("openai"), and without it ("openai-default").
import { generateText, stepCountIs, streamText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenResponses } from "@ai-sdk/open-responses";
import { z } from "zod";

// Warnings are in the report (and would otherwise be printed on stdout, before it).
globalThis.AI_SDK_LOG_WARNINGS = false;
const base = process.env.SWITCHBOARD_URL;
const apiKey = process.env.SWITCHBOARD_TOKEN ?? "local";
// The input item types each provider sent, to show what the server had to read.
const sent = { openai: new Set(), "openai-default": new Set(), "open-responses": new Set() };
function recording(name) {
  return async (url, init) => {
    const body = JSON.parse(init?.body ?? "{}");
    for (const item of Array.isArray(body.input) ? body.input : []) sent[name].add(item.type ?? "message");
    return fetch(url, init);
  };
}
const openai = createOpenAI({
  baseURL: `${base}/v1`,
  apiKey,
  headers: { "Switchboard-Tool-Items": "mcp" },
  fetch: recording("openai"),
});
const openaiDefault = createOpenAI({ baseURL: `${base}/v1`, apiKey, fetch: recording("openai-default") });
const openResponses = createOpenResponses({
  url: `${base}/v1/responses`,
  name: "switchboard",
  apiKey,
  fetch: recording("open-responses"),
});
// Each provider with the options its calls take. `@ai-sdk/openai` stores responses by
// default and then sends its earlier output back as `item_reference` items; with
// `store: false` (the "Unstored" conversations) it sends its messages and its own calls
// themselves, and leaves out the results of calls the provider ran (it warns).
const providers = {
  openai: { model: () => openai.responses("switchboard"), options: {} },
  "openai-default": { model: () => openaiDefault.responses("switchboard"), options: {} },
  "open-responses": { model: () => openResponses("switchboard"), options: {} },
};
const UNSTORED = { openai: { store: false } };

// A Switchboard tool (Yelp) and the client's own tool in one prompt, then a second turn
// that runs another Switchboard tool (the bank's).
const FIRST = "find sushi in Boston and get the weather in Boston";
const SECOND = "what is my checking balance?";
// Only the client's tool.
const WEATHER_ONLY = "What's the weather like in Paris?";
// A tool that waits for the person's approval (sending an email): the response asks.
const NEEDS_APPROVAL = "find sushi in Boston and email the list to bob@example.com";

function clientTools(ran) {
  return {
    get_weather: tool({
      description: "Get the current weather for a location",
      inputSchema: z.object({ location: z.string() }),
      execute: async ({ location }) => {
        ran.push(location);
        return `18 C and sunny in ${location}`;
      },
    }),
  };
}

function describe(error) {
  return { name: error?.name ?? "Error", message: String(error?.message ?? error) };
}

// What one call gave: its steps' tool parts (by name; whether the provider ran it, and
// whether the SDK found it invalid, as it marks a call of a tool it does not have), text,
// finish reason, the conversation's new messages, any error (thrown or streamed), and
// the SDK's warnings.
function summary(steps, text, finishReason, messages, errors) {
  const toolParts = steps.flatMap((step) =>
    step.content
      .filter((part) => part.type.startsWith("tool-"))
      .map((part) => ({
        type: part.type,
        toolName: part.toolName,
        providerExecuted: part.providerExecuted === true,
        invalid: part.invalid === true,
      })),
  );
  const warnings = steps.flatMap((step) => (step.warnings ?? []).map((w) => w.message ?? w.type));
  return { steps: steps.length, toolParts, text, finishReason, messages, errors, warnings };
}

async function generate({ model, options }, messages, tools, loop) {
  try {
    const result = await generateText({ model: model(), providerOptions: options, messages, tools, ...(loop ? { stopWhen: stepCountIs(5) } : {}) });
    return summary(result.steps, result.text, result.finishReason, result.response.messages, []);
  } catch (error) {
    return summary([], "", null, [], [describe(error)]);
  }
}

async function stream({ model, options }, messages, tools, loop) {
  const errors = [];
  const parts = [];
  const result = streamText({
    model: model(),
    providerOptions: options,
    messages,
    tools,
    ...(loop ? { stopWhen: stepCountIs(5) } : {}),
    onError: ({ error }) => void errors.push(describe(error)),
  });
  for await (const part of result.fullStream) {
    parts.push(part.type);
    if (part.type === "error") errors.push(describe(part.error));
  }
  try {
    const summed = summary(await result.steps, await result.text, await result.finishReason, (await result.response).messages, errors);
    return { ...summed, parts };
  } catch (error) {
    return { ...summary([], "", null, [], [...errors, describe(error)]), parts };
  }
}

// Two turns: the first prompt, then the second with the first's messages as history, as
// an AI SDK chat keeps it.
async function conversation(call, provider, loop) {
  const ran = [];
  const tools = clientTools(ran);
  const opening = [{ role: "user", content: FIRST }];
  const first = await call(provider, opening, tools, loop);
  const second = await call(provider, [...opening, ...first.messages, { role: "user", content: SECOND }], tools, loop);
  return { first, second, ran };
}

// What each provider runs: every conversation, except that without the header
// `@ai-sdk/openai`'s generateText fails on the first response (once is enough to show it).
const RUNS = {
  openai: ["generate", "generateLoop", "stream", "streamLoop", "generateLoopUnstored", "streamLoopUnstored"],
  "openai-default": ["generate", "stream", "streamLoop", "streamLoopUnstored"],
  "open-responses": ["generate", "generateLoop", "stream", "streamLoop"],
};

const report = {};
for (const [name, provider] of Object.entries(providers)) {
  report[name] = {};
  for (const run of RUNS[name]) {
    const call = run.startsWith("generate") ? generate : stream;
    const options = run.endsWith("Unstored") ? { ...provider, options: UNSTORED } : provider;
    report[name][run] = await conversation(call, options, run.includes("Loop"));
  }
  const ran = [];
  report[name].generateClientToolOnly = {
    ...(await generate(provider, [{ role: "user", content: WEATHER_ONLY }], clientTools(ran), true)),
    ran,
  };
}
// A response that asks for approval, to `@ai-sdk/openai` with the header: approval
// requests stay switchboard:approval_request items (documented).
const asking = [{ role: "user", content: NEEDS_APPROVAL }];
report.openai.approvalGenerate = await generate(providers.openai, asking, clientTools([]), false);
report.openai.approvalStream = await stream(providers.openai, asking, clientTools([]), false);
for (const [name, types] of Object.entries(sent)) report[name].sentTypes = [...types].sort();
process.stdout.write(JSON.stringify(report));
