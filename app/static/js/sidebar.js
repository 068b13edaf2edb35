// The chat list: the user's chats, newest first in date groups (Today, Yesterday, Previous
// 7 days, Older), with "load more", search, rename, export, delete, and a "Needs approval"
// marker on the chats where a tool waits for the person.
import { describeApproval } from "./approval-card.js";
import { asText, clear, h } from "./dom.js";
import { parseDate, relativeTime } from "./format.js";
import { icon } from "./icons.js";

export function chatTitle(chat) {
  return asText(chat?.title) || asText(chat?.preview) || "New chat";
}

const SEARCH_DELAY_MS = 250;
const DAY_MS = 86_400_000;

/** The sidebar group of a chat last active at ``value``, by the viewer's local days. */
export function dateGroup(value, now = new Date()) {
  const when = parseDate(value)?.date;
  if (!when) return "Older";
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const at = when.getTime();
  if (at >= today) return "Today";
  if (at >= today - DAY_MS) return "Yesterday";
  if (at >= today - 7 * DAY_MS) return "Previous 7 days";
  return "Older";
}

export class ChatList {
  /** hooks: {onDelete(chat), onOpen(chatId), onRenamed(chat), onError(message)} */
  constructor(api, { list, more, status, search }, hooks) {
    this.api = api;
    this.listEl = list;
    this.moreEl = more;
    this.statusEl = status;
    this.searchEl = search;
    this.hooks = hooks;
    this.chats = [];
    this.cursor = null;
    this.activeId = null;
    this.loading = null;
    this.query = ""; // the search shown ("" = the plain list)
    this.pending = new Map(); // chat_id -> its pending approvals
    this.moreEl.addEventListener("click", () => this.loadMore());
    this.searchEl?.addEventListener("input", () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.search(this.searchEl.value), SEARCH_DELAY_MS);
    });
    this.searchEl?.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.searchEl.value) {
        event.preventDefault();
        this.searchEl.value = "";
        this.search("");
      }
    });
    document.addEventListener("click", (event) => {
      if (!event.target.closest?.(".chat-menu, .chat-menu-button")) this.closeMenu();
    });
  }

  /** Show the chats matching ``text`` (the plain list when it is blank). */
  async search(text) {
    const query = text.trim();
    if (query === this.query) return;
    this.query = query;
    await this.refresh();
  }

  fetchPage(cursor = null) {
    return this.api.listChats(cursor, this.query || null);
  }

  async refresh() {
    // One refresh at a time; a refresh asked for meanwhile runs once after it.
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        const query = this.query;
        const page = await this.fetchPage();
        if (query !== this.query) {
          this.again = true; // the search changed meanwhile: this page is stale
          return;
        }
        this.chats = page?.chats || [];
        this.cursor = page?.next_cursor || null;
        this.statusEl.textContent = this.query
          ? `${this.chats.length}${this.cursor ? "+" : ""} ${this.chats.length === 1 ? "chat matches" : "chats match"}.`
          : "";
        this.render();
      } catch (error) {
        this.statusEl.textContent = this.query
          ? `Cannot search: ${error.message}`
          : `Could not load chats: ${error.message}`;
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
      const page = await this.fetchPage(this.cursor);
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
    this.closeMenu();
    clear(this.listEl);
    if (!this.chats.length) {
      this.listEl.append(h("li", { class: "muted small empty",
        text: this.query ? "No chats match." : "No chats yet." }));
    }
    let group = null;
    const now = new Date();
    for (const chat of this.chats) {
      // Search results are one list (by recency too, but matches matter more than days).
      const heading = this.query ? null : dateGroup(chat.updated_at, now);
      if (heading && heading !== group) {
        group = heading;
        this.listEl.append(h("li", { class: "chat-group" }, h("h2", { class: "chat-group-title", text: heading })));
      }
      this.listEl.append(this.item(chat));
    }
    this.moreEl.hidden = !this.cursor;
  }

  item(chat) {
    const title = chatTitle(chat);
    const link = h("a", { class: "chat-link", href: `#/chat/${encodeURIComponent(chat.id)}`,
      dataset: { chatId: chat.id }, "aria-current": chat.id === this.activeId ? "page" : null },
    h("span", { class: "chat-title", text: title }),
    chat.snippet ? h("span", { class: "chat-snippet", text: chat.snippet }) : null,
    h("span", { class: "chat-time", text: relativeTime(chat.updated_at) }));
    this.flag(link);
    link.addEventListener("click", () => this.hooks.onOpen?.(chat.id));
    link.addEventListener("dblclick", (event) => {
      event.preventDefault();
      this.startRename(chat);
    });
    const more = h("button", { type: "button", class: "icon-button chat-menu-button",
      "aria-label": `More for chat: ${title}`, title: "Rename or download",
      "aria-haspopup": "menu", "aria-expanded": "false" }, icon("more"));
    more.addEventListener("click", () => this.toggleMenu(chat, more));
    const remove = h("button", { type: "button", class: "icon-button delete-chat",
      "aria-label": `Delete chat: ${title}`, title: "Delete chat" }, icon("trash"));
    remove.addEventListener("click", () => this.hooks.onDelete?.(chat));
    return h("li", { class: "chat-item", dataset: { chatId: chat.id } }, link, more, remove);
  }

  // ------------------------------------------------------------------ menu

  toggleMenu(chat, button) {
    const open = this.menu?.button === button;
    this.closeMenu();
    if (open) return;
    const entry = (label, name, action) => {
      const item = h("button", { type: "button", role: "menuitem", class: "chat-menu-item" }, icon(name), h("span", { text: label }));
      item.addEventListener("click", () => {
        this.closeMenu();
        action();
      });
      return item;
    };
    const menu = h("div", { class: "chat-menu", role: "menu", "aria-label": `Chat: ${chatTitle(chat)}` },
      entry("Rename", "edit", () => this.startRename(chat)),
      entry("Download as Markdown", "download", () => this.download(chat, "markdown")),
      entry("Download as JSON", "download", () => this.download(chat, "json")));
    menu.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        this.closeMenu();
        button.focus();
      }
    });
    button.setAttribute("aria-expanded", "true");
    button.closest(".chat-item").append(menu);
    this.menu = { menu, button };
    menu.querySelector("button").focus();
  }

  closeMenu() {
    if (!this.menu) return;
    this.menu.button.setAttribute("aria-expanded", "false");
    this.menu.menu.remove();
    this.menu = null;
  }

  async download(chat, format) {
    try {
      const { blob, filename } = await this.api.exportChat(chat.id, format);
      const url = URL.createObjectURL(blob);
      const link = h("a", { href: url, download: filename, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (error) {
      this.hooks.onError?.(`Could not download the chat: ${error.message}`);
    }
  }

  // ------------------------------------------------------------------ rename

  startRename(chat) {
    const item = this.listEl.querySelector(`li.chat-item[data-chat-id="${CSS.escape(chat.id)}"]`);
    const link = item?.querySelector("a.chat-link");
    if (!link || item.querySelector(".chat-rename")) return;
    const input = h("input", { type: "text", class: "chat-rename", value: chat.title || "",
      maxlength: "200", "aria-label": "New chat title", placeholder: chatTitle(chat) });
    link.hidden = true;
    item.prepend(input);
    input.focus();
    input.select();
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      if (save && title && title !== chat.title) {
        try {
          const renamed = await this.api.renameChat(chat.id, title);
          Object.assign(chat, { title: renamed.title });
          this.hooks.onRenamed?.(chat);
        } catch (error) {
          this.hooks.onError?.(`Could not rename the chat: ${error.message}`);
        }
      }
      this.render();
      this.listEl.querySelector(`a.chat-link[data-chat-id="${CSS.escape(chat.id)}"]`)?.focus();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        finish(true);
      } else if (event.key === "Escape") {
        event.preventDefault();
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
  }
}
