// The user's pending approvals across all their chats, for the sidebar's "Needs approval"
// markers: loaded from GET /api/approvals, and kept current between loads from the open
// chat's approval_required / approval_resolved events.
import { asList, asText, isObject } from "./dom.js";

export class PendingApprovals {
  /** onChange(this) runs after every change. */
  constructor(api, onChange) {
    this.api = api;
    this.onChange = onChange;
    this.items = new Map(); // approval_id -> {approval_id, chat_id, name, arguments, …}
    // What the events said, with the tick it was said at: a list fetched before an event
    // must not bring back an approval the event resolved (or drop one it announced).
    this.seen = new Map(); // approval_id -> {pending, tick, item}
    this.tick = 0;
  }

  async refresh() {
    const started = this.tick;
    let data;
    try {
      data = await this.api.approvals();
    } catch {
      return; // a server without approvals, or offline: keep what the events said
    }
    const items = new Map();
    for (const item of asList(data?.approvals).filter(isObject)) {
      items.set(asText(item.approval_id), item);
    }
    for (const [id, seen] of this.seen) {
      if (seen.tick <= started) continue;
      if (seen.pending) items.set(id, seen.item);
      else items.delete(id);
    }
    this.items = items;
    this.onChange?.(this);
  }

  /** From an approval_required event of chat ``chatId``. */
  add(chatId, event) {
    const id = asText(event.approval_id);
    const item = { ...event, chat_id: chatId };
    this.seen.set(id, { pending: true, tick: ++this.tick, item });
    this.items.set(id, item);
    this.onChange?.(this);
  }

  /** From an approval_resolved event (or the end of the approval's turn). */
  remove(approvalId) {
    const id = asText(approvalId);
    this.seen.set(id, { pending: false, tick: ++this.tick, item: null });
    if (this.items.delete(id)) this.onChange?.(this);
  }

  /** chat_id -> the pending approvals of that chat. */
  byChat() {
    const chats = new Map();
    for (const item of this.items.values()) {
      const chatId = asText(item.chat_id);
      if (!chats.has(chatId)) chats.set(chatId, []);
      chats.get(chatId).push(item);
    }
    return chats;
  }
}
