// One polite live region for things a screen reader should hear that are not text being
// added to the conversation (an approval that waits for the person, how it was decided).

let region = null;
let timer = 0;

/** Say ``text`` through the page's live region (#announcer). */
export function announce(text) {
  region ??= document.getElementById("announcer");
  if (!region || !text) return;
  // Clear first, then set on a later task: screen readers ignore a region whose text is
  // replaced by the same text, and some miss a change made in the same task as a clear.
  region.textContent = "";
  clearTimeout(timer);
  timer = setTimeout(() => {
    region.textContent = text;
  }, 60);
}
