// One chat's WebSocket: connects with ?after_seq=<last seq seen>, so every (re)connect
// resumes exactly where the page is (PROTOCOL.md §4); reconnects with backoff and
// jitter; pings so a dead connection is noticed even when the network says nothing.
import { backoffDelay } from "./backoff.js";

const PING_EVERY_MS = 25_000;
const PONG_WITHIN_MS = 10_000;
const TICK_MS = 2_500;
// Close codes after which reconnecting cannot help (PROTOCOL.md §1).
const FATAL = {
  4400: "The server refused this chat id.",
  4401: "Sign in again: the server did not accept the token.",
  4403: "This chat belongs to someone else, or this page's origin is not allowed.",
};
const TOO_MANY = 4429;
const CHAT_DELETED = "chat deleted"; // the reason of the 4403 sent when a chat is deleted

export class ChatSocket {
  /**
   * options: {chatId, token, lastSeq() -> number, onEvent(event), onOpen(), onStatus(status, info),
   *           onDropped(code, reason)}
   * status: "connecting" | "open" | "reconnecting" ({delayMs, attempt}) | "failed" ({code, message})
   */
  constructor(options) {
    this.options = options;
    this.ws = null;
    this.attempt = 0;
    this.timer = null;
    this.stopped = false;
    this.lastHeard = 0;
    this.lastPing = 0;
    this.ticker = null;
    this.onOnline = () => this.retryNow();
    window.addEventListener("online", this.onOnline);
  }

  get isOpen() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const params = new URLSearchParams({ after_seq: String(this.options.lastSeq()) });
    const token = typeof this.options.token === "function" ? this.options.token() : this.options.token;
    if (token) params.set("token", token);
    return `${scheme}://${location.host}/ws/chats/${encodeURIComponent(this.options.chatId)}?${params}`;
  }

  start() {
    if (this.stopped || this.ws) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.status("connecting");
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (this.ws !== ws) return;
      this.attempt = 0;
      this.lastHeard = Date.now();
      this.lastPing = 0;
      this.ticker = setInterval(() => this.tick(), TICK_MS);
      this.status("open");
      this.options.onOpen?.();
    });
    ws.addEventListener("message", (message) => {
      if (this.ws !== ws) return;
      this.lastHeard = Date.now();
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        console.warn("ignored a frame that is not JSON");
        return;
      }
      this.options.onEvent(event);
    });
    ws.addEventListener("close", (close) => {
      if (this.ws === ws) this.dropped(close.code, close.reason);
    });
  }

  /** Send a frame; false when the socket is not open (the caller keeps it for later). */
  send(frame) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Reconnect at once (a click on "retry", the browser coming back online). */
  retryNow() {
    if (this.stopped || this.ws) return;
    this.attempt = 0;
    this.start();
  }

  /** Close for good (another chat is opened). */
  close() {
    this.stopped = true;
    window.removeEventListener("online", this.onOnline);
    clearTimeout(this.timer);
    clearInterval(this.ticker);
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000, "closed by the page");
  }

  tick() {
    if (!this.isOpen) return;
    const now = Date.now();
    if (this.lastPing > this.lastHeard && now - this.lastPing > PONG_WITHIN_MS) {
      // Nothing since our ping: the connection is dead even if the browser has not noticed.
      const ws = this.ws;
      this.dropped(1006, "no answer to ping");
      ws.close();
      return;
    }
    if (now - Math.max(this.lastHeard, this.lastPing) > PING_EVERY_MS) {
      this.lastPing = now;
      this.send({ type: "ping" });
    }
  }

  dropped(code, reason) {
    clearInterval(this.ticker);
    this.ticker = null;
    this.ws = null;
    if (this.stopped) return;
    // First, so that what was sent on this connection is dealt with before the next one.
    this.options.onDropped?.(code, reason);
    if (FATAL[code]) {
      this.stopped = true;
      const message = reason === CHAT_DELETED ? "This chat was deleted." : FATAL[code];
      this.status("failed", { code, message, reason });
      return;
    }
    if (code === TOO_MANY) this.attempt = Math.max(this.attempt, 4);
    const delayMs = backoffDelay(this.attempt);
    this.attempt += 1;
    this.status("reconnecting", { delayMs, attempt: this.attempt, code });
    this.timer = setTimeout(() => this.start(), delayMs);
  }

  status(name, info = {}) {
    this.options.onStatus?.(name, info);
  }
}
