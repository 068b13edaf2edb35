// Following the conversation as it grows, without fighting the person: the view keeps to
// the bottom only while they are there. Once they scroll up (wheel, touch, keys or the
// scrollbar) it stays put, and a "Jump to latest" button appears while there is more
// below; reaching the bottom again, by hand or with the button, resumes following.
import { h } from "./dom.js";
import { icon } from "./icons.js";

// Within this many pixels of the bottom counts as at the bottom (sub-pixel rounding,
// zoom). Small on purpose: a small scroll up must be enough to stop following.
const NEAR_PX = 24;
const UP_KEYS = new Set(["ArrowUp", "PageUp", "Home"]);

export class FollowScroll {
  /** ``scroller``: the scrolling element; the button is put at its end (sticky). */
  constructor(scroller) {
    this.scroller = scroller;
    this.stick = true;
    this.lastTop = scroller.scrollTop;
    this.button = h("button", { type: "button", class: "jump-latest", hidden: true },
      icon("down"), h("span", { text: "Jump to latest" }));
    this.button.addEventListener("click", () => {
      this.toEnd();
      document.getElementById("prompt")?.focus({ preventScroll: true });
    });
    scroller.append(h("div", { class: "jump-latest-dock" }, this.button));
    scroller.addEventListener("scroll", () => this.onScroll(), { passive: true });
    // The person's own moves up stop following at once, before the next frame of a
    // streaming answer could pull the view back down.
    scroller.addEventListener("wheel", (event) => { if (event.deltaY < 0) this.release(); },
      { passive: true });
    // A finger moving down drags the content down: back up the conversation.
    let touchY = null;
    scroller.addEventListener("touchstart", (event) => { touchY = event.touches[0]?.clientY ?? null; },
      { passive: true });
    scroller.addEventListener("touchmove", (event) => {
      const y = event.touches[0]?.clientY;
      if (touchY !== null && y !== undefined && y > touchY) this.release();
      touchY = y ?? touchY;
    }, { passive: true });
    scroller.addEventListener("keydown", (event) => { if (UP_KEYS.has(event.key)) this.release(); });
  }

  get distance() {
    const el = this.scroller;
    return el.scrollHeight - el.scrollTop - el.clientHeight;
  }

  release() {
    if (this.distance > 0 || this.scroller.scrollTop > 0) this.stick = false;
  }

  onScroll() {
    const top = this.scroller.scrollTop;
    if (this.distance <= NEAR_PX) this.stick = true;
    else if (top < this.lastTop) this.stick = false; // moved up: reading back
    this.lastTop = top;
    this.update();
  }

  /** Content changed: follow it if following, else offer the button. */
  changed() {
    if (this.stick) this.scrollToEnd();
    this.update();
  }

  /** Go to the bottom and follow from there (a new prompt, a chat opened). */
  toEnd() {
    this.stick = true;
    this.scrollToEnd();
    this.update();
  }

  scrollToEnd() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.lastTop = this.scroller.scrollTop;
  }

  update() {
    this.button.hidden = this.stick || this.distance <= NEAR_PX;
  }
}
