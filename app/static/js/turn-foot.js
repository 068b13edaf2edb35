// Under an answer: when it finished, a button that copies it (its Markdown source), and a
// small "Details" disclosure with what end users rarely need on sight: tokens in and out,
// model requests, how long it took, the model when the server names it.
import { copyButton } from "./copy.js";
import { h, isObject } from "./dom.js";
import { count } from "./format.js";
import { timeElement } from "./message-time.js";

/** "4.2 s", "1 min 05 s": from two event timestamps; "" when either is missing. */
export function duration(startTs, endTs) {
  const ms = Date.parse(endTs) - Date.parse(startTs);
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
}

/**
 * The foot's parts for a turn's end_of_stream ``event``: [time, copy, details], each null
 * when there is nothing to show. ``answer()``: the turn's answer text ("" for none);
 * ``startTs``: its user_prompt's ts.
 */
export function answerFoot(event, { answer, startTs }) {
  const usage = isObject(event.usage) ? event.usage : {};
  const rows = [
    ["Model", typeof event.model === "string" ? event.model : ""],
    ["Tokens in", usage.input_tokens ? count(usage.input_tokens) : ""],
    ["Tokens out", usage.output_tokens ? count(usage.output_tokens) : ""],
    ["Total tokens", usage.total_tokens ? count(usage.total_tokens) : ""],
    ["Model requests", usage.requests ? count(usage.requests) : ""],
    ["Took", startTs ? duration(startTs, event.ts) : ""],
  ].filter(([, value]) => value);
  const details = rows.length ? h("details", { class: "turn-details" },
    h("summary", { text: "Details" }),
    h("dl", {}, rows.map(([term, value]) => [h("dt", { text: term }), h("dd", { text: value })]))) : null;
  const copy = answer() ? copyButton({ label: "Copy", what: "the answer", text: answer,
    className: "copy-answer" }) : null;
  return [timeElement(event.ts, "answer-time"), copy, details];
}
