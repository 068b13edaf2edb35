// The chat list: the user's chats, newest first, with "load more", delete, and a "Needs
// approval" marker on the chats where a tool waits for the person.
import { describeApproval } from "./approval-card.js";
import { asText, clear, h } from "./dom.js";
import { relativeTime } from "./format.js";
import { icon } from "./icons.js";

export function chatTitle(chat) {
  return asText(chat?.title) || asText(chat?.preview) || "New chat";
}

export class ChatList {
  /** hooks: {onDelete(chat), onOpen(chatId)} */
  constructor(api, { list, more, status }, hooks) {
    this.api = api;
    this.listEl = list;
    this.moreEl = more;
    this.statusEl = status;
    this.hooks = hooks;
    this.chats = [];
    this.cursor = null;
    this.activeId = null;
    this.loading = null;
    this.pending = new Map(); // chat_id -> its pending approvals
    this.moreEl.addEventListener("click", () => this.loadMore());
  }

  async refresh() {
    // One refresh at a time; a refresh asked for meanwhile runs once after it.
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        const page = await this.api.listChats();
        this.chats = page?.chats || [];
        this.cursor = page?.next_cursor || null;
        this.statusEl.textContent = "";
        this.render();
      } catch (error) {
        this.statusEl.textContent = `Could not load chats: ${error.message}`;
      } finally {
        this.loading = null;
      }
      if (this.again) {
        this.again = false;
        await this.refresh();
      }
    })();
    return this.loading;
  }

  async loadMore() {
    if (!this.cursor) return;
    this.moreEl.disabled = true;
    try {
      const page = await this.api.listChats(this.cursor);
      const known = new Set(this.chats.map((c) => c.id));
      this.chats.push(...(page?.chats || []).filter((c) => !known.has(c.id)));
      this.cursor = page?.next_cursor || null;
      this.render();
    } catch (error) {
      this.statusEl.textContent = `Could not load more chats: ${error.message}`;
    } finally {
      this.moreEl.disabled = false;
    }
  }

  setActive(chatId) {
    this.activeId = chatId;
    for (const link of this.listEl.querySelectorAll("a.chat-link")) {
      if (link.dataset.chatId === chatId) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }

  /** Mark the chats that have pending approvals (``byChat``: chat_id -> approvals). */
  setPending(byChat) {
    this.pending = byChat;
    for (const link of this.listEl.querySelectorAll("a.chat-link")) this.flag(link);
  }

  flag(link) {
    const waiting = this.pending.get(link.dataset.chatId) || [];
    link.querySelector(".chat-flag")?.remove();
    link.classList.toggle("needs-approval", waiting.length > 0);
    if (!waiting.length) return;
    const text = waiting.length === 1 ? "Needs approval" : `${waiting.length} need approval`;
    // Inside the link: its accessible name says it, and a click on it opens the chat.
    link.append(h("span", { class: "chat-flag", title: waiting.map((a) => `Waiting for you: ${describeApproval(a)}`).join("\n") },
      h("span", { class: "chat-flag-dot", "aria-hidden": "true" }), h("span", { text })));
  }

  find(chatId) {
    return this.chats.find((c) => c.id === chatId) || null;
  }

  render() {
    clear(this.listEl);
    if (!this.chats.length) {
      this.listEl.append(h("li", { class: "muted small empty", text: "No chats yet." }));
    }
    for (const chat of this.chats) {
      const title = chatTitle(chat);
      const link = h("a", { class: "chat-link", href: `#/chat/${encodeURIComponent(chat.id)}`,
        dataset: { chatId: chat.id }, "aria-current": chat.id === this.activeId ? "page" : null },
      h("span", { class: "chat-title", text: title }),
      h("span", { class: "chat-time", text: relativeTime(chat.updated_at) }));
      this.flag(link);
      link.addEventListener("click", () => this.hooks.onOpen?.(chat.id));
      const remove = h("button", { type: "button", class: "icon-button delete-chat",
        "aria-label": `Delete chat: ${title}`, title: "Delete chat" }, icon("trash"));
      remove.addEventListener("click", () => this.hooks.onDelete?.(chat));
      this.listEl.append(h("li", { class: "chat-item" }, link, remove));
    }
    this.moreEl.hidden = !this.cursor;
  }
}
