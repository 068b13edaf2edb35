// Regenerate, edit and continue (docs/protocol.md, "Regenerate, edit and continue"): the
// buttons on the transcript's turns, the inline editor, and how a superseded turn and a
// continuation look. It watches every event the transcript applies (live and history
// alike, through the transcript's ``applied`` hook), so a reload shows the same state.
import { clear, h } from "./dom.js";
import { icon } from "./icons.js";
import { uuid } from "./ids.js";

const REPLACED = {
  regenerate: "Replaced by a newer answer",
  edit: "Replaced: the message was edited",
};
const WARNING = "This answer ran an action you approved (such as an email sent). "
  + "It stays done: replacing the answer does not undo it.";

export class TurnActions {
  /**
   * transcript: the Transcript; hooks: {send(frame) -> bool, toast(text)}.
   */
  constructor(transcript, hooks) {
    this.transcript = transcript;
    this.hooks = hooks;
    this.reset();
  }

  reset() {
    this.info = new Map(); // turn_id -> {superseded, action, cutOff, status, acted}
    this.order = []; // turn ids in the order their user_prompt came
    this.pending = new Map(); // client_message_id -> frame not yet answered
  }

  turnInfo(turnId) {
    let info = this.info.get(turnId);
    if (!info) {
      info = { superseded: null, action: null, cutOff: false, status: null, acted: false };
      this.info.set(turnId, info);
    }
    return info;
  }

  /** The transcript applied ``event`` (its ``applied`` hook). True: it was ours. */
  applied(event) {
    const type = event.type;
    if (type === "llm_response_delta") return false;
    const turnId = event.turn_id;
    if (!turnId) return false;
    const info = this.turnInfo(turnId);
    let ours = false;
    if (type === "user_prompt") {
      this.order.push(turnId);
      info.action = event.action || null;
      this.pending.delete(event.client_message_id);
      if (event.action === "continue") this.showContinuation(turnId);
    } else if (type === "turn_superseded") {
      info.superseded = { by: event.by_turn_id, action: event.action };
      this.collapse(turnId);
      ours = true;
    } else if (type === "llm_response") {
      info.cutOff = Boolean(event.incomplete_reason);
    } else if (type === "approval_resolved" && event.decision === "approved") {
      info.acted = true;
    } else if (type === "end_of_stream") {
      info.status = event.status;
    } else {
      return false;
    }
    this.render();
    return ours;
  }

  /** A refused frame of ours (``error`` with its ``client_message_id``): say why. */
  refused(event) {
    const id = event.client_message_id;
    if (!id || !this.pending.has(id)) return false;
    this.pending.delete(id);
    this.hooks.toast(event.message || "The server refused that.");
    this.render();
    return true;
  }

  /** After a (re)connect: frames the server has not answered go again (same id: safe). */
  flush() {
    for (const frame of this.pending.values()) this.hooks.send(frame);
  }

  send(frame) {
    const full = { ...frame, client_message_id: uuid() };
    if (!this.hooks.send(full)) {
      this.hooks.toast("Not connected: try again once the connection is back.");
      return false;
    }
    this.pending.set(full.client_message_id, full);
    this.render();
    return true;
  }

  // ------------------------------------------------------------------ what it shows

  view(turnId) {
    return this.transcript.turns.get(turnId);
  }

  /** The latest turn still standing, and whether anything keeps the buttons away. */
  get latest() {
    const standing = this.order.filter((id) => !this.info.get(id)?.superseded);
    return standing.at(-1) || null;
  }

  get busy() {
    return Boolean(this.transcript.runningTurnId) || this.pending.size > 0;
  }

  /** Whether this turn, or one after it, ran an approved action. */
  actedFrom(turnId) {
    const from = this.order.indexOf(turnId);
    return this.order.slice(from).some((id) => this.info.get(id)?.acted);
  }

  render() {
    const latest = this.latest;
    for (const turnId of this.order) {
      const view = this.view(turnId);
      const info = this.info.get(turnId);
      if (!view || !info) continue;
      let bar = view.el.querySelector(":scope > .turn-actions");
      if (!bar) {
        bar = h("div", { class: "turn-actions", role: "group", "aria-label": "Answer actions" });
        view.chips.before(bar);
      }
      clear(bar);
      this.renderEditButton(view, info);
      if (info.superseded || this.busy || turnId !== latest || !info.status) continue;
      if (info.status === "cancelled" || info.cutOff) {
        bar.append(this.button("continue", "Continue", "Continue this answer from where it stopped",
          () => this.send({ type: "continue", turn_id: turnId })));
      }
      bar.append(this.button("retry", "Regenerate", "Answer this message again",
        () => this.confirmThen(view, turnId, () => this.send({ type: "regenerate", turn_id: turnId }))));
    }
  }

  button(iconName, label, title, onClick) {
    const button = h("button", { type: "button", class: "button small", title,
      dataset: { action: label.toLowerCase() } }, icon(iconName), h("span", { text: label }));
    button.addEventListener("click", onClick);
    return button;
  }

  renderEditButton(view, info) {
    let edit = view.user.querySelector(".edit-prompt");
    const editable = !info.superseded && info.action !== "continue" && !this.busy
      && info.status && !view.user.classList.contains("editing");
    if (!editable) {
      edit?.remove();
      return;
    }
    if (!edit) {
      edit = h("button", { type: "button", class: "edit-prompt", title: "Edit this message",
        "aria-label": "Edit message" }, icon("edit"));
      edit.addEventListener("click", () => this.openEditor(view));
      view.user.append(edit);
    }
  }

  /** Regenerating or editing from a turn that ran an approved action: say it stays done,
   *  and go on only on a second click. */
  confirmThen(view, turnId, go) {
    if (!this.actedFrom(turnId) || view.el.querySelector(".action-warning")) {
      view.el.querySelector(".action-warning")?.remove();
      go();
      return;
    }
    const again = h("button", { type: "button", class: "button small" }, h("span", { text: "Regenerate anyway" }));
    const cancel = h("button", { type: "button", class: "button small" }, h("span", { text: "Keep it" }));
    const warning = h("div", { class: "action-warning", role: "alert" }, icon("shield"),
      h("p", { text: WARNING }), again, cancel);
    again.addEventListener("click", () => { warning.remove(); go(); });
    cancel.addEventListener("click", () => warning.remove());
    view.chips.before(warning);
    again.focus();
  }

  openEditor(view) {
    const original = view.prompt;
    const input = h("textarea", { class: "edit-input", rows: "3", "aria-label": "Edit your message" });
    input.value = original;
    const save = h("button", { type: "button", class: "button small primary" }, h("span", { text: "Send" }));
    const cancel = h("button", { type: "button", class: "button small" }, h("span", { text: "Cancel" }));
    const warning = this.actedFrom(view.id) ? h("p", { class: "edit-warning", text: WARNING }) : null;
    const shown = [...view.user.childNodes];
    const close = () => {
      view.user.classList.remove("editing");
      clear(view.user).append(...shown);
      this.render();
      view.user.querySelector(".edit-prompt")?.focus();
    };
    const submit = () => {
      const text = input.value.trim();
      if (!text) return;
      if (this.send({ type: "edit", turn_id: view.id, prompt: text })) {
        view.user.classList.remove("editing");
        clear(view.user).append(...shown);
      }
    };
    save.addEventListener("click", submit);
    cancel.addEventListener("click", close);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        submit();
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        close();
      }
    });
    view.user.classList.add("editing");
    const parts = [input, warning, h("div", { class: "edit-buttons" }, cancel, save)];
    clear(view.user).append(...parts.filter(Boolean));
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  }

  /** A superseded turn: dimmed and folded, with a way to show it again. */
  collapse(turnId) {
    const view = this.view(turnId);
    const info = this.info.get(turnId);
    if (!view || !info?.superseded || view.el.querySelector(":scope > .superseded-note")) return;
    view.el.classList.add("superseded", "folded");
    const toggle = h("button", { type: "button", class: "link-button", "aria-expanded": "false" },
      h("span", { text: "Show" }));
    toggle.addEventListener("click", () => {
      const folded = view.el.classList.toggle("folded");
      toggle.setAttribute("aria-expanded", String(!folded));
      toggle.firstChild.textContent = folded ? "Show" : "Hide";
    });
    const note = h("div", { class: "superseded-note" }, icon("retry"),
      h("span", { text: REPLACED[info.superseded.action] || REPLACED.regenerate }), toggle);
    view.el.prepend(note);
  }

  /** A continue turn: no message bubble (its prompt is the server's instruction) but a
   *  divider, so its answer reads on from the stopped one above it. */
  showContinuation(turnId) {
    const view = this.view(turnId);
    if (!view) return;
    view.el.classList.add("continuation");
    clear(view.user).append(h("span", { class: "continued-label" }, icon("retry"),
      h("span", { text: "Continued" })));
  }
}
