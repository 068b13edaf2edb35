// Escape stops the running answer, like the Stop button, unless the key is meant for
// something else: a dialog, a menu, the sidebar on a phone, an approval card, or any
// field of its own (the rename box, the search box, an inline editor) that handles Escape.
// Whoever handles Escape first calls preventDefault; this listens last (bubbling, on the
// document) and respects that.

const OWN_ESCAPE = "dialog, [role=menu], .approval, .chat-menu";

function editable(el) {
  return el instanceof HTMLElement
    && (el.isContentEditable || el.matches("input, textarea, select"));
}

/** ``isRunning()``: an answer is running; ``stop()``: what the Stop button does;
 *  ``prompt``: the message box, the one field where Escape stops too. */
export function bindStopKey({ isRunning, stop, prompt }) {
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.defaultPrevented || event.isComposing) return;
    if (!isRunning()) return;
    const target = event.target instanceof Element ? event.target : null;
    if (target && target !== prompt && (editable(target) || target.closest(OWN_ESCAPE))) return;
    if (document.querySelector("dialog[open]") || document.body.classList.contains("sidebar-open")) return;
    event.preventDefault();
    stop();
  });
}
