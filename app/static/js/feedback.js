// Thumbs up or down under each finished answer, with an optional comment: a small box
// opens after a thumbs-down (and on "Comment" after a thumbs-up). Saved over REST
// (PUT / DELETE /api/chats/{id}/turns/{turn_id}/feedback); a reopened or reloaded chat
// shows what was saved, read from GET /api/chats/{id}'s turns (load()). Pressing the
// pressed thumb again takes the rating back. Comments are text (textContent), never HTML.
import { announce } from "./announce.js";
import { asText, h, isObject } from "./dom.js";
import { icon } from "./icons.js";

export const MAX_COMMENT_CHARS = 2000; // storage/feedback.py MAX_COMMENT_CHARS

const LABELS = { up: "Good answer", down: "Bad answer" };
const THANKS = { up: "Thanks — marked as a good answer.", down: "Thanks — marked as a bad answer." };

export class Feedback {
  /** api: the Api (its request()); chatId(): the open chat's id. */
  constructor(api, chatId) {
    this.api = api;
    this.chatId = chatId;
    this.saved = new Map(); // turn id -> {rating, comment}
  }

  /** The saved ratings of the chat about to be drawn (GET /api/chats/{id}'s turns). */
  load(turns) {
    this.saved = new Map();
    for (const turn of Array.isArray(turns) ? turns : []) {
      if (isObject(turn) && isObject(turn.feedback)) {
        this.saved.set(asText(turn.id), { rating: turn.feedback.rating, comment: turn.feedback.comment || "" });
      }
    }
  }

  reset() {
    this.saved = new Map();
  }

  /** Append the rating controls to a finished turn's footer (only under an answer). */
  attach(turnId, foot) {
    if (!foot.closest(".turn")?.querySelector(".message.assistant")) return;
    foot.querySelector(".feedback")?.remove();
    const control = new FeedbackControl(this, turnId, this.saved.get(turnId));
    foot.append(control.el);
  }

  path(turnId) {
    return `/api/chats/${encodeURIComponent(this.chatId())}/turns/${encodeURIComponent(turnId)}/feedback`;
  }

  async save(turnId, rating, comment) {
    if (!rating) {
      await this.api.request("DELETE", this.path(turnId));
      this.saved.delete(turnId);
      return null;
    }
    const body = comment ? { rating, comment } : { rating };
    const stored = await this.api.request("PUT", this.path(turnId), body);
    const state = { rating: stored.rating, comment: stored.comment || "" };
    this.saved.set(turnId, state);
    return state;
  }
}

class FeedbackControl {
  constructor(feedback, turnId, saved) {
    this.feedback = feedback;
    this.turnId = turnId;
    this.state = saved ? { ...saved } : { rating: null, comment: "" };
    this.buttons = {};
    for (const rating of ["up", "down"]) {
      const button = h("button", { type: "button", class: `feedback-button ${rating}`,
        "aria-pressed": "false", "aria-label": LABELS[rating], title: LABELS[rating],
        dataset: { rating } }, icon(`thumb-${rating}`));
      button.addEventListener("click", () => this.rate(rating));
      this.buttons[rating] = button;
    }
    this.commentToggle = h("button", { type: "button", class: "feedback-link", text: "Comment" });
    this.commentToggle.addEventListener("click", () => this.openForm());
    this.note = h("p", { class: "feedback-note" });
    this.error = h("p", { class: "feedback-error", role: "alert" });
    this.form = this.buildForm();
    this.el = h("div", { class: "feedback", dataset: { turnId } },
      h("div", { class: "feedback-buttons", role: "group", "aria-label": "Rate this answer" },
        this.buttons.up, this.buttons.down, this.commentToggle),
      this.note, this.form, this.error);
    this.show();
  }

  buildForm() {
    // Named after the turn: a chat drawn again (reopened, reloaded) gets the same ids.
    const id = `feedback-comment-${this.turnId}`;
    this.textarea = h("textarea", { id, rows: "2", maxlength: String(MAX_COMMENT_CHARS),
      placeholder: "Optional: say what was wrong or what would help" });
    this.label = h("label", { for: id, text: "Tell us more" });
    const send = h("button", { type: "button", class: "button small primary", text: "Save comment" });
    const skip = h("button", { type: "button", class: "button small", text: "Skip" });
    // Not a <form>: nothing in the conversation may submit anywhere (tests/browser/test_security.py).
    const form = h("div", { class: "feedback-form", hidden: true }, this.label, this.textarea,
      h("div", { class: "feedback-actions" }, send, skip));
    send.addEventListener("click", () => this.sendComment());
    skip.addEventListener("click", () => this.closeForm());
    form.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault(); // Ctrl+Enter saves, as a plain Enter makes a new line
        this.sendComment();
      } else if (event.key === "Escape") {
        event.stopPropagation(); // Esc closes this box, nothing else on the page
        this.closeForm();
      }
    });
    return form;
  }

  show() {
    const { rating, comment } = this.state;
    for (const [name, button] of Object.entries(this.buttons)) {
      button.setAttribute("aria-pressed", String(rating === name));
    }
    this.el.dataset.rating = rating || "";
    this.commentToggle.hidden = !rating || !this.form.hidden;
    this.commentToggle.textContent = comment ? "Edit comment" : "Comment";
    this.note.hidden = !comment || !this.form.hidden;
    this.note.textContent = comment ? `Your comment: ${comment}` : "";
  }

  setBusy(busy) {
    this.el.setAttribute("aria-busy", String(busy));
    for (const button of [...Object.values(this.buttons), ...this.form.querySelectorAll("button")]) {
      button.disabled = busy;
    }
  }

  async rate(rating) {
    const next = this.state.rating === rating ? null : rating;
    if (!(await this.store(next, ""))) return;
    if (next === "down") this.openForm();
    else this.closeForm(false);
    announce(next ? THANKS[next] : "Rating removed.");
  }

  async sendComment() {
    const comment = this.textarea.value.trim();
    if (!(await this.store(this.state.rating, comment))) return;
    this.closeForm();
    announce(comment ? "Comment saved." : "Comment removed.");
  }

  /** Save; true when the server stored it. On failure the old state stays, with why. */
  async store(rating, comment) {
    this.error.textContent = "";
    this.setBusy(true);
    try {
      const saved = await this.feedback.save(this.turnId, rating, comment);
      this.state = saved || { rating: null, comment: "" };
      return true;
    } catch (error) {
      this.error.textContent = `Could not save your feedback: ${error.message}`;
      return false;
    } finally {
      this.setBusy(false);
      this.show();
    }
  }

  openForm() {
    this.label.textContent = this.state.rating === "down" ? "What was wrong? (optional)" : "Add a comment (optional)";
    this.textarea.value = this.state.comment;
    this.form.hidden = false;
    this.show();
    this.textarea.focus();
    this.form.scrollIntoView({ block: "nearest" });
  }

  closeForm(focus = true) {
    const wasOpen = !this.form.hidden;
    this.form.hidden = true;
    this.show();
    if (focus && wasOpen) this.buttons[this.state.rating || "down"].focus();
  }
}
