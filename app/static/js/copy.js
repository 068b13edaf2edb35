// Copy buttons: the text goes to the clipboard (the Clipboard API, or a hidden textarea
// and execCommand where the API is missing or refused), and the button says so, to the
// eye (its label turns to "Copied") and to a screen reader (the page's live region).
import { announce } from "./announce.js";
import { h } from "./dom.js";
import { icon } from "./icons.js";

const DONE_MS = 2000;

/** Put ``text`` on the clipboard; true when it worked. */
export async function copyText(text) {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Refused (no permission, not focused, an old browser): try the old way.
    }
  }
  return copyWithSelection(text);
}

function copyWithSelection(text) {
  const focused = document.activeElement;
  const area = h("textarea", { class: "copy-buffer", readonly: true, "aria-hidden": "true",
    tabindex: "-1" });
  area.value = text;
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    copied = false;
  }
  area.remove();
  if (focused instanceof HTMLElement) focused.focus({ preventScroll: true });
  return copied;
}

/**
 * A button that copies what ``text()`` returns. ``label``: its visible words ("Copy",
 * "Copy code"); ``what``: what a screen reader hears was copied ("the answer", "the code").
 */
export function copyButton({ label = "Copy", what = "the text", text, className = "" }) {
  const words = h("span", { text: label });
  const button = h("button", { type: "button", class: `copy-button ${className}`.trim() },
    icon("copy"), words);
  let timer = 0;
  button.addEventListener("click", async () => {
    const copied = await copyText(String(text() ?? ""));
    clearTimeout(timer);
    button.dataset.state = copied ? "copied" : "failed";
    words.textContent = copied ? "Copied" : "Copy failed";
    button.querySelector("svg")?.replaceWith(icon(copied ? "check" : "alert"));
    announce(copied ? `Copied ${what}.` : `Could not copy ${what}: select it and copy it by hand.`);
    timer = setTimeout(() => {
      delete button.dataset.state;
      words.textContent = label;
      button.querySelector("svg")?.replaceWith(icon("copy"));
    }, DONE_MS);
  });
  return button;
}
