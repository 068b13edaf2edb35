// The approval card (PROTOCOL.md §3a): a tool with side effects waits for the person, and
// this card shows exactly what will run, with Approve and Reject. Once decided (here, in
// another tab, by expiry or by moving on) the card becomes the record of that decision.
// Everything shown comes from the model, so all of it goes through textContent.
//
// A connector's card module may lay out its own tools' requests (card-registry.js,
// ``approvals``: docs/connectors.md, "The UI card"); any other tool shows its description
// and every argument (fields.js).
import { kit } from "./card-kit.js";
import { approvalFor } from "./card-registry.js";
import { asText, clear, h, isObject } from "./dom.js";
import { argumentList, effectFields } from "./fields.js";
import { formatDate, fromNow } from "./format.js";
import { icon } from "./icons.js";

const REASON_MAX = 500;
// A card that appears while the person is about to click something else (the page
// scrolls as it grows) must not take that click as an approval: its buttons take pointer
// clicks only shortly after it appears, as browsers do for their own permission prompts.
// Keys are not held back: a button has the focus only if the person put it there.
const ARM_MS = 400;
// setTimeout's longest delay; an expiry further away is not watched from the page.
const MAX_TIMER_MS = 2 ** 31 - 1;
// How long a decision sent on the socket may go unanswered before it can be sent again.
const ANSWER_MS = 15_000;

let cards = 0;

/** Words for an approval: "send an email to bob@example.com" (announcements, sidebar). */
export function describeApproval(approval) {
  // What the connector resolved before asking is the most exact account of the action.
  const resolved = asText(approval?.effect?.summary);
  if (resolved) return resolved;
  const args = isObject(approval?.arguments) ? approval.arguments : {};
  const summary = fromSpec(approvalFor(approval?.name), "summary", args);
  if (typeof summary === "string" && summary) return summary;
  const what = asText(approval?.description) || asText(approval?.name) || "run a tool";
  return what.charAt(0).toLowerCase() + what.slice(1);
}

/** A module's answer, or undefined when it has none or fails (with a console warning). */
function fromSpec(spec, part, ...args) {
  if (typeof spec?.[part] !== "function") return undefined;
  try {
    return spec[part](...args);
  } catch (error) {
    console.warn(`the approval ${part} of a card module failed; the generic one is shown`, error);
    return undefined;
  }
}

export class ApprovalCard {
  /**
   * ``event``: the approval_required event. ``ctx``: {agentName(agent) -> friendly name,
   * accountOf(toolName, agent) -> Promise<string> (the "From"), decide(decision, reason)
   * -> Promise<"sent" | "recorded"> (throws with the server's message when refused),
   * onEscape(), live}
   */
  constructor(event, ctx) {
    this.event = event;
    this.ctx = ctx;
    this.approvalId = asText(event.approval_id);
    this.callId = asText(event.call_id);
    this.spec = approvalFor(event.name) || {};
    this.kind = asText(this.spec.kind).replace(/[^a-z0-9-]/g, "") || "tool";
    // A tool that sends something (an email) says "sent"; any other "run".
    this.sends = this.spec.sends === true;
    this.args = isObject(event.arguments) ? event.arguments : {};
    // What the call will do, resolved by its connector before asking (null: the arguments say it).
    this.effect = isObject(event.effect) ? event.effect : null;
    this.state = "pending"; // pending | deciding | approved | rejected | expired | superseded
    this.sentDecision = null; // what this page asked for, to tell a decision made elsewhere
    this.summary = describeApproval(event);
    // Who asks: the service as the person knows it when the module names it, else the agent.
    this.agent = asText(this.spec.actor)
      || ctx.agentName?.(asText(event.current_agent)) || asText(event.current_agent) || "The assistant";
    const id = `approval-${(cards += 1)}`;
    this.ids = { title: `${id}-title`, note: `${id}-note`, reason: `${id}-reason` };
    this.build();
    this.watchExpiry();
    if (ctx.live) {
      this.el.classList.add("arming");
      this.armTimer = setTimeout(() => this.el.classList.remove("arming"), ARM_MS);
    }
  }

  get pending() {
    return this.state === "pending" || this.state === "deciding";
  }

  /** What a screen reader hears when the card appears. */
  get announcement() {
    return `Approval needed: ${this.summary}`;
  }

  // ---------------------------------------------------------------------- building

  build() {
    this.title = h("h3", { class: "approval-title", id: this.ids.title, text: this.titleText(false) });
    this.badge = h("span", { class: "approval-badge", text: "Needs your approval" });
    this.note = h("p", { class: "approval-note", id: this.ids.note,
      text: this.sends ? "Nothing is sent until you approve." : "Nothing runs until you approve." });
    this.what = h("div", { class: "approval-what" }, this.details());
    this.meta = h("p", { class: "approval-meta" }, icon("clock"), this.expiryText(),
      h("span", { class: "approval-moveon", text: " Sending a new message cancels this request." }));
    this.approveButton = h("button", { type: "button", class: "button primary", "data-action": "approve",
      "aria-describedby": this.ids.title }, icon("check"),
    h("span", { text: asText(this.spec.approveLabel) || "Approve" }));
    this.rejectButton = h("button", { type: "button", class: "button", "data-action": "reject",
      "aria-describedby": this.ids.title, "aria-expanded": "false" }, icon("close"), h("span", { text: "Reject" }));
    this.actions = h("div", { class: "actions approval-actions" }, this.approveButton, this.rejectButton);
    this.reason = h("input", { type: "text", id: this.ids.reason, maxlength: REASON_MAX,
      autocomplete: "off", placeholder: "e.g. wrong address", "aria-describedby": `${this.ids.reason}-hint` });
    this.confirmButton = h("button", { type: "submit", class: "button danger" }, h("span", { text: "Confirm reject" }));
    this.backButton = h("button", { type: "button", class: "button" }, h("span", { text: "Back" }));
    this.rejectForm = h("form", { class: "approval-reject", hidden: true },
      h("label", { for: this.ids.reason, text: "Reason (optional)" }),
      h("p", { class: "muted small", id: `${this.ids.reason}-hint`,
        text: `Up to ${REASON_MAX} characters; the assistant is told why. Enter rejects, Escape goes back.` }),
      this.reason,
      h("div", { class: "actions" }, this.confirmButton, this.backButton));
    this.status = h("p", { class: "approval-status" });
    this.el = h("section", {
      class: `approval approval-${this.kind}`, tabindex: "-1",
      "aria-labelledby": this.ids.title, "aria-describedby": this.ids.note,
      dataset: { approvalId: this.approvalId, callId: this.callId, tool: asText(this.event.name), state: this.state },
    },
    h("header", { class: "approval-head" }, icon("shield"), this.title, this.badge),
    h("div", { class: "approval-main" }, this.note, this.what, this.meta, this.actions, this.rejectForm, this.status));
    this.bind();
  }

  titleText(decided) {
    const action = asText(this.spec.action) || "run a tool";
    return `${this.agent} ${decided ? "asked" : "wants"} to ${action}`;
  }

  /** What will run: the module's layout for this tool, else the generic one. */
  details() {
    const own = fromSpec(this.spec, "details", this.args, this.detailsKit());
    if (own !== undefined && own !== null && !(Array.isArray(own) && !own.length)) return own;
    return this.toolDetails();
  }

  /** The kit, plus what a module's approval layout needs of this card. */
  detailsKit() {
    return Object.freeze({
      ...kit,
      actor: this.agent,
      tool: asText(this.event.name),
      effect: this.effect,
      // The account the tool acts as ("From"); null when unknown.
      account: () => Promise.resolve(this.ctx.accountOf?.(asText(this.event.name), asText(this.event.current_agent)))
        .then((account) => account || null, () => null),
    });
  }

  toolDetails() {
    const description = asText(this.event.description);
    const keys = Object.keys(this.args);
    const summary = fromSpec(this.spec, "summary", this.args);
    return [
      h("p", { class: "approval-tool" },
        description ? h("strong", { text: description }) : null,
        description ? " " : null,
        h("code", { text: asText(this.event.name) })),
      typeof summary === "string" && summary
        ? h("p", { class: "approval-summary", text: summary.charAt(0).toUpperCase() + summary.slice(1) }) : null,
      effectFields(this.effect),
      keys.length ? argumentList(this.args, keys) : h("p", { class: "muted small", text: "No arguments." }),
    ];
  }

  expiryText() {
    const expires = asText(this.event.expires_at);
    if (!expires) return h("span", { text: "Waiting for your decision." });
    return h("span", {}, "Waits until ",
      h("time", { datetime: expires, text: formatDate(expires) }),
      ` (${fromNow(expires)}), then expires.`);
  }

  // ---------------------------------------------------------------------- keyboard

  bind() {
    this.approveButton.addEventListener("click", () => this.decide("approve"));
    this.rejectButton.addEventListener("click", () => this.openReject());
    this.backButton.addEventListener("click", () => this.closeReject());
    this.rejectForm.addEventListener("submit", (event) => {
      event.preventDefault();
      this.decide("reject", this.reason.value.trim());
    });
    this.el.addEventListener("keydown", (event) => {
      if (event.key !== "Escape" || event.defaultPrevented) return;
      event.preventDefault();
      // Escape backs out of the reason first; from anywhere else in the card it returns
      // to the message box, leaving the request waiting.
      if (!this.rejectForm.hidden && this.rejectForm.contains(event.target)) this.closeReject();
      else this.ctx.onEscape?.();
    });
  }

  openReject() {
    if (this.state !== "pending") return;
    this.actions.hidden = true;
    this.rejectForm.hidden = false;
    this.rejectButton.setAttribute("aria-expanded", "true");
    this.reason.focus({ preventScroll: true });
    this.rejectForm.scrollIntoView({ block: "nearest" }); // the confirm button too, not just the field
  }

  closeReject() {
    this.rejectForm.hidden = true;
    this.actions.hidden = false;
    this.rejectButton.setAttribute("aria-expanded", "false");
    if (this.state === "pending") this.rejectButton.focus();
    else this.el.focus();
  }

  setButtonsDisabled(disabled) {
    for (const button of [this.approveButton, this.rejectButton, this.confirmButton]) button.disabled = disabled;
    this.reason.disabled = disabled;
  }

  // ---------------------------------------------------------------------- deciding

  async decide(decision, reason = "") {
    if (this.state !== "pending") return;
    this.sentDecision = decision;
    // A disabled button loses the focus to the page; keep it on the card instead.
    if (this.el.contains(document.activeElement)) this.el.focus({ preventScroll: true });
    this.setState("deciding");
    this.setButtonsDisabled(true);
    this.setStatus(decision === "approve" ? "Approving…" : "Rejecting…", "busy");
    let how;
    try {
      how = await this.ctx.decide(decision, reason ? reason.slice(0, REASON_MAX) : null);
    } catch (error) {
      if (error?.retryable) this.undecided(error.message);
      else this.refused(error?.message || "The decision could not be sent.");
      return;
    }
    if (how === "recorded") {
      // Taken over REST while the socket is down: the outcome shows once it is back.
      if (this.state === "deciding") this.setStatus("Decision recorded — waiting for the connection…", "busy");
      return;
    }
    // The answer is the approval_resolved event. A frame lost with a dying connection
    // gets none: then the person may decide again (a repeat is refused harmlessly).
    this.answerTimer = setTimeout(() => {
      if (this.state === "deciding" && !this.status.classList.contains("refused")) {
        this.undecided("No answer from the server yet. Check the connection and try again.");
      }
    }, ANSWER_MS);
  }

  /** The decision did not reach the server: the person can decide again. */
  undecided(message) {
    if (this.state !== "deciding") return;
    this.sentDecision = null;
    this.setState("pending");
    this.setButtonsDisabled(false);
    this.setStatus(message, "refused");
    this.status.setAttribute("role", "alert");
  }

  /** The server refused this page's decision (already decided, expired, unknown). Nothing
   *  is re-enabled: the event that says how it was decided follows, or already came. */
  refused(message) {
    if (!this.pending) return;
    this.setStatus(message, "refused");
    this.status.setAttribute("role", "alert");
  }

  /** approval_resolved: the card becomes the record of the decision. */
  resolve(event, { live = false } = {}) {
    const decision = asText(event.decision);
    const elsewhere = live && !this.sentDecision && (decision === "approved" || decision === "rejected");
    this.dispose();
    this.setState(["approved", "rejected", "expired", "superseded"].includes(decision) ? decision : "superseded");
    const nothing = this.sends ? "nothing was sent" : "nothing was run";
    const reason = asText(event.reason);
    let text;
    if (decision === "approved") text = this.sends ? "Approved — sending…" : "Approved — running…";
    else if (decision === "rejected") text = `Declined — ${nothing}`;
    else if (decision === "expired") text = `Expired — ${nothing}`;
    else if (event.decided_via === "cancel") text = `Cancelled — the answer was stopped, ${nothing}`;
    else if (event.decided_via === "changed") text = `Replaced — what it would do changed, ${nothing}; the new request follows`;
    else text = `Cancelled — you moved on, ${nothing}`;
    this.outcome = text;
    this.becomeRecord();
    this.setStatus(text, decision === "approved" ? "busy" : decision);
    if (decision === "rejected" && reason) {
      this.status.append(h("span", { class: "approval-reason", text: `Reason: “${reason}”` }));
    }
    if (elsewhere) {
      this.status.append(h("span", { class: "approval-elsewhere", text: "Decided in another tab or on another device." }));
    }
  }

  /** The approved tool has its output (or the turn ended without one being shown). */
  finished() {
    // An output means it ran: approved, even if the event saying so never reached us.
    if (this.pending) this.resolve({ decision: "approved" });
    if (this.state !== "approved" || !this.status.classList.contains("busy")) return;
    this.outcome = "Approved";
    this.setStatus("Approved", "approved");
  }

  /** end_of_stream of the card's turn: a request still open can no longer be decided.
   *  (The server always resolves an approval before its turn ends; this is the fallback
   *  for an event that never arrived, so it claims nothing about what ran.) */
  turnEnded() {
    if (this.state === "approved") this.finished();
    if (!this.pending) return;
    this.dispose();
    this.setState("superseded");
    this.outcome = "No longer waiting for a decision";
    this.becomeRecord();
    this.setStatus(this.outcome, "superseded");
  }

  becomeRecord() {
    // Focus on a button that is about to go stays in the card, not lost to the page.
    const hadFocus = this.el.contains(document.activeElement) && document.activeElement !== this.el;
    this.title.textContent = this.titleText(true);
    this.badge.remove();
    this.note.remove();
    this.meta.remove();
    this.actions.remove();
    this.rejectForm.remove();
    this.status.removeAttribute("role");
    this.el.removeAttribute("aria-describedby"); // the note it pointed at is gone
    // What was asked stays readable, folded away under the outcome.
    const details = h("details", { class: "approval-record" },
      h("summary", { text: this.state === "approved" ? "What was approved" : "What was asked" }));
    this.what.replaceWith(details);
    details.append(this.what);
    for (const more of this.el.querySelectorAll(".text-box-expand")) more.remove();
    for (const box of this.what.querySelectorAll(".text-box")) box.classList.add("expanded");
    this.el.querySelector(".approval-main").append(details);
    if (hadFocus) this.el.focus({ preventScroll: true });
  }

  /** The card leaves the page (another chat is opened): stop its timers. */
  dispose() {
    for (const timer of [this.armTimer, this.expiryTimer, this.answerTimer]) clearTimeout(timer);
  }

  setState(state) {
    this.state = state;
    this.el.dataset.state = state;
  }

  setStatus(text, kind) {
    clear(this.status);
    this.status.removeAttribute("role");
    this.status.className = `approval-status ${kind || ""}`.trim();
    const mark = kind === "busy" ? h("span", { class: "spinner", "aria-hidden": "true" })
      : kind === "approved" ? icon("check")
        : kind === "refused" ? icon("alert")
          : kind ? icon("stop") : null;
    this.status.append(...[mark, h("span", { class: "approval-outcome", text })].filter(Boolean));
  }

  /** Past its expiry the server refuses a decision; say so before the sweep reports it. */
  watchExpiry() {
    const due = Date.parse(asText(this.event.expires_at));
    if (!Number.isFinite(due)) return;
    const expire = () => {
      if (this.state !== "pending") return;
      this.setButtonsDisabled(true);
      this.setStatus(`This request has expired — ${this.sends ? "nothing will be sent" : "nothing will run"}.`, "expired");
    };
    const wait = due - Date.now();
    if (wait <= 0) expire();
    else if (wait < MAX_TIMER_MS) this.expiryTimer = setTimeout(expire, wait);
  }
}
