// The conversation view. One renderer for live events (socket) and history (REST): both
// feed persisted events through apply(), so a chat reopened later looks exactly as it did
// live. Streaming text (llm_response_delta, not persisted) only ever becomes what the
// following llm_response says, which history renders directly.
import { ApprovalCard } from "./approval-card.js";
import { asList, asText, clear, h, isObject } from "./dom.js";
import { icon } from "./icons.js";
import { renderAnswer } from "./answer-view.js";
import { renderCard } from "./cards.js";
import { timeElement } from "./message-time.js";
import { answerFoot } from "./turn-foot.js";

const CUT_OFF_NOTES = {
  max_output_tokens: "Cut off: the answer reached the model's length limit.",
  content_filter: "Cut off by the model's content filter.",
  other: "Cut off before the model finished.",
};

const ERROR_TITLES = {
  model_error: "The model failed",
  model_unavailable: "The model is unavailable",
  rate_limited: "Rate limited",
  tool_error: "A tool failed",
  tool_timeout: "A tool timed out",
  account_needed: "An account is needed",
  server_error: "Server error",
};
// Links a tool opens by itself (open_tab) are opened only while they are fresh, never when
// an old chat is replayed.
const FRESH_MS = 15_000;

class TurnView {
  constructor(id) {
    this.id = id;
    this.prompt = "";
    this.calls = new Map(); // call_id -> progress row still waiting for its output
    this.chunks = new Map(); // citation id -> content chunk
    this.message = null; // the assistant message being streamed: {el, content, text}
    this.errorCards = 0; // error cards whose tool_error event has not come yet
    this.approvals = new Map(); // call_id -> ApprovalCard
    this.el = h("section", { class: "turn", dataset: { turnId: id } });
    this.user = h("div", { class: "message user" });
    this.body = h("div", { class: "turn-body" });
    this.foot = h("footer", { class: "turn-foot" });
    this.chips = h("div", { class: "chips", role: "group", "aria-label": "Suggested prompts" });
    this.el.append(this.user, this.body, this.foot, this.chips);
  }
}

export class Transcript {
  /**
   * hooks: {onChip(text), onRetry(text), connect(connector), displayName(connector),
   *         onRunning(turnId | null), changed(), answerFooter(turnId, footerEl),
   *         applied(event, live) -> handled,
   *         approvals: {accountOf(toolName, agent), decide(approvalId, decision, reason), onEscape(),
   *                     shown(card, event, live), resolved(card, event, live)}}
   */
  constructor(root, hooks = {}) {
    this.root = root;
    this.hooks = hooks;
    this.reset();
  }

  reset() {
    for (const card of this.approvals?.values() || []) card.dispose();
    clear(this.root);
    this.turns = new Map();
    this.lastSeq = 0;
    this.runningTurnId = null;
    this.replaceNextDelta = false;
    this.interrupted = new Map();
    this.pending = new Map();
    this.agentNames = new Map();
    this.approvals = new Map(); // approval_id -> ApprovalCard
    this.frame = 0;
  }

  /** The cards still waiting for a decision, oldest first. */
  get pendingApprovals() {
    return [...this.approvals.values()].filter((card) => card.pending);
  }

  /** The running turn is paused on an approval: a new prompt may supersede it. */
  get awaitingApproval() {
    const view = this.turns.get(this.runningTurnId);
    return Boolean(view) && [...view.approvals.values()].some((card) => card.pending);
  }

  /** A refusal (error event) of a decision this page sent; false if no card was waiting
   *  for an answer. The message names the approval when it can. */
  approvalRefused(message) {
    const waiting = [...this.approvals.values()].filter((card) => card.state === "deciding");
    const card = waiting.find((c) => message.includes(c.approvalId)) || waiting[0];
    if (!card) return false;
    card.refused(message);
    return true;
  }

  get isEmpty() {
    return this.turns.size === 0 && this.pending.size === 0;
  }

  /** Text of cancelled/failed turns (from GET /api/chats/{id}): their unfinished message. */
  setInterruptedTexts(map) {
    this.interrupted = map;
  }

  /** After a (re)connect the server may send the current message's text so far as one delta. */
  beginResume() {
    this.replaceNextDelta = true;
  }

  /** A prompt sent (or queued) but not yet confirmed by its user_prompt event. */
  addPending(clientMessageId, text, attachments = []) {
    const el = h("div", { class: "message user pending", dataset: { clientMessageId } },
      h("p", { class: "pre-wrap", text }));
    this.hooks.attachments?.(el, attachments);
    el.append(h("p", { class: "pending-note", role: "status", text: "Sending…" }));
    this.pending.set(clientMessageId, el);
    this.root.append(el);
    this.changed();
  }

  notePending(clientMessageId, note) {
    const el = this.pending.get(clientMessageId);
    if (el) el.querySelector(".pending-note").textContent = note;
  }

  dropPending(clientMessageId) {
    this.pending.get(clientMessageId)?.remove();
    this.pending.delete(clientMessageId);
    this.changed();
  }

  /**
   * Apply one server event. Persisted events (seq set) are applied once, in seq order;
   * a replayed duplicate is ignored. ``live`` is false when rendering history.
   */
  apply(event, { live = true } = {}) {
    if (!isObject(event) || typeof event.type !== "string") return false;
    if (event.seq !== null && event.seq !== undefined) {
      if (event.seq <= this.lastSeq) return false;
      this.lastSeq = event.seq;
    } else if (event.type !== "llm_response_delta") {
      return false; // pong and connection-level errors are the app's business
    }
    const handler = this[`on_${event.type}`];
    handler?.call(this, event, live);
    // Modules drawing on top of the turns (turn-actions.js) see every event applied.
    const taken = this.hooks.applied?.(event, live);
    if (!handler && !taken) return false;
    this.changed();
    return true;
  }

  changed() {
    this.hooks.changed?.();
  }

  turn(event) {
    const id = asText(event.turn_id) || "unknown";
    let view = this.turns.get(id);
    if (!view) {
      view = new TurnView(id);
      this.turns.set(id, view);
      this.root.append(view.el);
    }
    return view;
  }

  setRunning(turnId) {
    this.runningTurnId = turnId;
    this.hooks.onRunning?.(turnId);
  }

  // ------------------------------------------------------------------------ events

  on_user_prompt(event) {
    const view = this.turn(event);
    view.prompt = asText(event.text);
    view.promptTs = asText(event.ts);
    clear(view.user).append(h("p", { class: "pre-wrap", text: view.prompt }));
    view.userTime?.remove(); // when it was sent: under the bubble, not part of its text
    view.userTime = timeElement(event.ts, "user-time");
    if (view.userTime) view.user.after(view.userTime);
    this.hooks.attachments?.(view.user, event.attachments);
    if (event.client_message_id) this.dropPending(event.client_message_id);
    // A new turn: whatever streamed before belongs to an earlier message.
    view.message = null;
    this.setRunning(view.id);
  }

  on_handoff() {
    // agent_updated, which follows every hand-off, is what the page shows.
  }

  on_agent_updated(event) {
    const view = this.turn(event);
    const name = asText(event.name) || asText(event.new_agent);
    this.agentNames.set(asText(event.new_agent), name);
    this.closeMessage(view);
    view.body.append(h("div", { class: "agent-badge", dataset: { agent: asText(event.new_agent) } },
      icon("agent"), h("span", { text: name })));
  }

  on_tool_call(event) {
    const view = this.turn(event);
    this.closeMessage(view);
    const label = asText(event.description) || asText(event.name);
    const row = h("div", { class: "tool-row running", role: "status",
      dataset: { callId: asText(event.call_id), tool: asText(event.name) } },
    h("span", { class: "spinner", "aria-hidden": "true" }),
    h("span", { class: "tool-label", text: `${label}…` }));
    view.calls.set(asText(event.call_id), row);
    view.body.append(row);
  }

  on_tool_output(event, live) {
    const view = this.turn(event);
    const output = isObject(event.output) ? event.output : {};
    for (const chunk of asList(output.content_chunks)) {
      if (isObject(chunk) && chunk.id !== undefined) view.chunks.set(asText(chunk.id), chunk);
    }
    const fresh = live && Date.now() - Date.parse(event.ts) < FRESH_MS;
    const card = renderCard(output, {
      live: fresh,
      connect: this.hooks.connect,
      displayName: this.hooks.displayName,
      retry: this.hooks.onRetry && view.prompt ? () => this.hooks.onRetry(view.prompt) : null,
    });
    card.dataset.callId = asText(event.call_id);
    if (output.response_type === "error") view.errorCards += 1;
    const row = view.calls.get(asText(event.call_id));
    view.calls.delete(asText(event.call_id));
    const approval = view.approvals.get(asText(event.call_id));
    if (row) row.replaceWith(card);
    else if (approval) approval.el.after(card); // the output follows the approval it ran on
    else view.body.append(card);
    if (approval) {
      const wasPending = approval.pending;
      approval.finished();
      if (wasPending) this.hooks.approvals?.resolved?.(approval, event, live);
    }
  }

  on_approval_required(event, live) {
    const view = this.turn(event);
    this.closeMessage(view);
    const callId = asText(event.call_id);
    const hooks = this.hooks.approvals || {};
    const card = new ApprovalCard(event, {
      live,
      agentName: (agent) => this.agentNames.get(agent) || agent,
      accountOf: (toolName, agent) => Promise.resolve(hooks.accountOf?.(toolName, agent)),
      decide: (decision, reason) => hooks.decide(asText(event.approval_id), decision, reason),
      onEscape: () => hooks.onEscape?.(),
    });
    // The call's progress row says it waits; the card right after it says for what.
    const row = view.calls.get(callId);
    if (row) {
      row.classList.replace("running", "waiting");
      row.removeAttribute("role"); // the card's own announcement says it, once
      row.querySelector(".spinner")?.replaceWith(icon("shield"));
      const label = row.querySelector(".tool-label");
      label.textContent = `${label.textContent.replace(/…$/, "")} — waiting for your approval`;
    }
    view.approvals.set(callId, card);
    this.approvals.set(card.approvalId, card);
    view.body.append(card.el);
    if (this.runningTurnId === view.id) this.hooks.onRunning?.(view.id);
    hooks.shown?.(card, event, live);
  }

  on_approval_resolved(event, live) {
    const view = this.turn(event);
    const card = this.approvals.get(asText(event.approval_id))
      || view.approvals.get(asText(event.call_id));
    // Decided: the record that follows stands for the call; its waiting row goes.
    const row = view.calls.get(asText(event.call_id));
    if (row) {
      row.remove();
      view.calls.delete(asText(event.call_id));
    }
    if (!card) return;
    card.resolve(event, { live });
    if (this.runningTurnId === view.id) this.hooks.onRunning?.(view.id);
    this.hooks.approvals?.resolved?.(card, event, live);
  }

  on_llm_response_delta(event) {
    const view = this.turn(event);
    const delta = asText(event.delta);
    const message = view.message || this.openMessage(view);
    if (this.replaceNextDelta) {
      message.text = delta;
      this.replaceNextDelta = false;
    } else {
      message.text += delta;
    }
    this.scheduleRender(view, message);
  }

  on_llm_response(event) {
    const view = this.turn(event);
    const message = view.message || this.openMessage(view);
    message.text = asText(event.text);
    this.finishMessage(view, message);
    // Project fields (docs/protocol.md, "Refusals and cut-off answers"): the model
    // declined, or its answer was cut off at a limit. The text is shown either way.
    const note = event.refusal === true
      ? { kind: "refusal", text: "The model declined to answer this." }
      : event.incomplete_reason
        ? { kind: "cut-off", text: CUT_OFF_NOTES[event.incomplete_reason] || CUT_OFF_NOTES.other }
        : null;
    if (note) {
      message.el.classList.add(note.kind);
      message.el.append(h("p", { class: `message-note ${note.kind}`, role: "note", text: note.text }));
    }
  }

  on_error(event) {
    const view = this.turn(event);
    this.closeMessage(view);
    // A failing tool is shown by its error card; the tool_error event the server sends
    // after it (not always right after, with parallel calls) repeats it.
    if (event.code === "tool_error" && view.errorCards > 0) {
      view.errorCards -= 1;
      return;
    }
    const retry = event.retryable && view.prompt && this.hooks.onRetry
      ? h("button", { type: "button", class: "button small" }, icon("retry"), h("span", { text: "Try again" }))
      : null;
    retry?.addEventListener("click", () => this.hooks.onRetry(view.prompt));
    view.body.append(h("div", { class: "error-row", role: "alert", dataset: { code: asText(event.code) } },
      icon("alert"),
      h("div", {},
        h("strong", { text: ERROR_TITLES[event.code] || "Something went wrong" }),
        h("p", { text: asText(event.message) })),
      retry));
  }

  on_end_of_stream(event, live) {
    const view = this.turn(event);
    const status = asText(event.status);
    const stopped = status !== "completed";
    if (view.message) {
      this.finishMessage(view, view.message, stopped);
    } else if (stopped) {
      // History of an interrupted turn: its unfinished message is not an event, but the
      // server keeps it with the turn.
      const partial = this.interrupted.get(view.id);
      const shown = [...view.body.querySelectorAll(".message.assistant")].at(-1)?.dataset.text;
      if (partial && partial !== shown) {
        const message = this.openMessage(view);
        message.text = partial;
        this.finishMessage(view, message, true);
      }
    }
    for (const row of view.calls.values()) {
      row.classList.remove("running");
      row.classList.add(stopped ? "stopped" : "done");
      row.querySelector(".spinner")?.replaceWith(icon(stopped ? "stop" : "check"));
      const label = row.querySelector(".tool-label");
      label.textContent = label.textContent.replace(/…$/, "");
    }
    view.calls.clear();
    for (const card of view.approvals.values()) {
      const wasPending = card.pending;
      card.turnEnded();
      if (wasPending) this.hooks.approvals?.resolved?.(card, event, live);
    }
    const answer = () => [...view.body.querySelectorAll(".message.assistant")]
      .map((el) => el.dataset.text || "").filter(Boolean).join("\n\n");
    const foot = [
      status === "cancelled" ? h("span", { class: "turn-status cancelled", text: "Stopped" }) : null,
      status === "failed" ? h("span", { class: "turn-status failed", text: "Did not finish" }) : null,
      ...answerFoot(event, { answer, startTs: view.promptTs }),
    ];
    clear(view.foot).append(...foot.filter(Boolean));
    this.hooks.answerFooter?.(view.id, view.foot); // e.g. feedback.js's thumbs
    view.el.classList.add(`status-${status.replace(/[^a-z]/g, "") || "unknown"}`);
    if (this.runningTurnId === view.id) this.setRunning(null);
  }

  on_suggested_prompts(event) {
    const view = this.turn(event);
    clear(view.chips);
    for (const prompt of asList(event.prompts).map(asText).filter(Boolean)) {
      const chip = h("button", { type: "button", class: "chip", text: prompt });
      chip.addEventListener("click", () => this.hooks.onChip?.(prompt));
      view.chips.append(chip);
    }
  }

  // ------------------------------------------------------------------------ messages

  openMessage(view) {
    const content = h("div", { class: "markdown" });
    const el = h("div", { class: "message assistant streaming", "aria-live": "polite",
      "aria-busy": "true" }, content);
    view.body.append(el);
    view.message = { el, content, text: "", frame: 0 };
    return view.message;
  }

  /** Tool calls and hand-offs end the message that was streaming before them. */
  closeMessage(view) {
    if (view.message) this.finishMessage(view, view.message);
  }

  finishMessage(view, message, stopped = false) {
    if (message.frame) cancelAnimationFrame(message.frame);
    message.frame = 0;
    this.renderMessage(view, message, false, stopped);
    message.el.classList.remove("streaming");
    if (stopped) message.el.classList.add("stopped");
    message.el.setAttribute("aria-busy", "false");
    message.el.dataset.text = message.text;
    if (view.message === message) view.message = null;
  }

  scheduleRender(view, message) {
    // Many deltas can arrive per frame: render the Markdown at most once a frame.
    if (message.frame) return;
    message.frame = requestAnimationFrame(() => {
      message.frame = 0;
      this.renderMessage(view, message, true);
      this.changed();
    });
  }

  renderMessage(view, message, streaming = false, cut = false) {
    renderAnswer(message.content, message.text, view.chunks, { streaming, cut });
  }
}
