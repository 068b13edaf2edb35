// The prompt limit in the composer: a counter near the server's limit, an error past it,
// and the message for a prompt the server refused as too big (close code 1009).
import { announce } from "./announce.js";
import { count } from "./format.js";

// Served as a bare file (not through app/ui.py) the page has no limits filled in: fall
// back to the protocol's default prompt limit, and to "unknown" for the frame limit.
const DEFAULT_MAX_PROMPT_CHARS = 32_000;
// The counter appears once a message has used this share of the limit.
const NEAR = 0.9;

function pageLimit(name) {
  const value = Number(document.body.dataset[name]);
  return Number.isSafeInteger(value) && value > 0 ? value : null;
}

/** The server's limits, as app/ui.py wrote them into the page. */
export function serverLimits() {
  return {
    maxPromptChars: pageLimit("maxPromptChars") ?? DEFAULT_MAX_PROMPT_CHARS,
    maxFrameBytes: pageLimit("maxFrameBytes"),
  };
}

/** Characters as the server counts them (Python's len: code points, so an emoji is one,
 *  where String.length counts it twice). */
export function charCount(text) {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

const encoder = new TextEncoder();

export function utf8Bytes(text) {
  return encoder.encode(text).length;
}

export class PromptLimit {
  /** elements: {textarea, count, error}; limits: serverLimits(). */
  constructor(elements, { maxPromptChars, maxFrameBytes }) {
    this.el = elements;
    this.maxChars = maxPromptChars;
    this.maxFrameBytes = maxFrameBytes;
    this.state = "ok"; // "ok" | "near" | "over"
    this.chars = 0;
  }

  get over() {
    return this.state === "over";
  }

  /** Recount after the text changed. */
  update() {
    // What is sent is the trimmed text, so that is what counts.
    this.chars = charCount(this.el.textarea.value.trim());
    const state = this.chars > this.maxChars ? "over"
      : this.chars >= this.maxChars * NEAR ? "near" : "ok";
    const changed = state !== this.state;
    this.state = state;
    const counter = this.el.count;
    counter.hidden = state === "ok";
    counter.dataset.state = state;
    counter.textContent = this.describe();
    if (state === "over") this.el.textarea.setAttribute("aria-invalid", "true");
    else this.el.textarea.removeAttribute("aria-invalid");
    // The counter changes with every key: say it only when crossing into another state.
    if (changed && state !== "ok") announce(counter.textContent);
  }

  describe(chars = this.chars) {
    const limit = count(this.maxChars);
    if (chars > this.maxChars) {
      const extra = chars - this.maxChars;
      return `${count(extra)} character${extra === 1 ? "" : "s"} too many: a message can be at `
        + `most ${limit} characters. Shorten it to send it.`;
    }
    const left = this.maxChars - chars;
    return `${count(left)} character${left === 1 ? "" : "s"} left (the limit is ${limit})`;
  }

  /** A message of ``chars`` characters, past the limit, was to be sent (Enter does not
   *  wait for the disabled button): say why it is not. The counter already shows why, so
   *  say it to screen readers only, rather than twice on the screen. */
  explainOver(chars) {
    announce(`Not sent: ${this.describe(chars)}`);
  }

  /** The server closed the socket on this prompt's frame as too big (1009). */
  explainTooBig(frameBytes) {
    const size = `${count(frameBytes)} bytes`;
    const why = this.maxFrameBytes && frameBytes > this.maxFrameBytes
      ? `it takes ${size} as sent, and the server accepts at most ${count(this.maxFrameBytes)} bytes`
      : `something between this page and the server refused it at ${size}`;
    this.showError(`Not sent: this message is too long for the server (${why}). `
      + "Emoji and many scripts take several bytes a character. The text is back in the "
      + "message box: shorten it and send it again.");
  }

  /** A prompt that the connection closed on each time it was sent. */
  explainGaveUp(attempts) {
    this.showError(`Not sent: the connection closed each time this message was sent `
      + `(${attempts} times), so it is not sent again. The text is back in the message box; `
      + "try again in a moment.");
  }

  showError(text) {
    this.el.error.textContent = text;
  }

  clearError() {
    this.el.error.textContent = "";
  }
}
