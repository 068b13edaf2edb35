// The page: wires the chat list, the transcript, the socket, approvals, connections and sign-in.
import { announce } from "./announce.js";
import { Api, ApiError } from "./api.js";
import { PendingApprovals } from "./approvals.js";
import { AttachmentTray, showAttachments } from "./attachments.js";
import { askForToken, tokenStore } from "./auth.js";
import { OidcSession, askToSignIn } from "./oidc.js";
import { loadCardModules } from "./card-modules.js";
import { Connections } from "./connections.js";
import { Feedback } from "./feedback.js";
import { syncConnectCards } from "./connect-state.js";
import { h } from "./dom.js";
import { icon } from "./icons.js";
import { CHAT_ID, newChatId, uuid } from "./ids.js";
import { PromptLimit, charCount, serverLimits, utf8Bytes } from "./prompt-limit.js";
import { FollowScroll } from "./scroll.js";
import { ChatList, chatTitle } from "./sidebar.js";
import { ChatSocket } from "./socket.js";
import { bindStopKey } from "./stop-key.js";
import { Transcript } from "./transcript.js";
import { TurnActions } from "./turn-actions.js";

const EXAMPLES = [
  "Find sushi in Boston and email the list to bob@example.com",
  "What's in my inbox?",
  "What are my account balances?",
  "How much did I spend by category?",
  "Find coffee near me",
  "Search the web for python asyncio",
];
const TOAST_MS = 6000;
// How long the first paint of a chat waits for the connectors' card modules; one that
// comes later draws its cards again in place.
const CARDS_WAIT_MS = 5000;
const TITLE_CHECKS = 4;
// A key pressed in the message box this recently means the person is typing there.
const TYPING_MS = 3000;
// The server closes the socket with 1009 on a frame over its size limit (PROTOCOL.md §1).
const CLOSE_TOO_BIG = 1009;
// A prompt whose connection closed this many times before the server took it is not sent
// again: whatever closes it (a proxy's limit, a server that fails on it) would do so forever.
const MAX_SEND_ATTEMPTS = 3;

const $ = (id) => document.getElementById(id);

class App {
  constructor() {
    this.token = tokenStore.get();
    this.authMode = null;
    // The identity provider's session in oidc mode, null in the others (undefined until
    // the server has said which: GET /api/auth/config).
    this.oidc = undefined;
    this.serverMode = null; // the server's auth mode, from GET /api/auth/config
    this.api = new Api(() => this.token);
    this.chatId = null;
    this.fresh = true; // the open chat has no events on the server yet
    this.socket = null;
    // client_message_id -> {text, sent (on the open connection), attempts (connections it
    // was sent on)}; a prompt leaves it when the server takes it (user_prompt) or refuses it.
    this.outbox = new Map();
    this.opening = 0;
    this.countdown = null;
    this.scroller = $("scroller");
    this.follow = new FollowScroll(this.scroller);
    this.prompt = $("prompt");
    this.lastTyped = 0;
    this.busy = false; // an answer is running (and not waiting on an approval)
    this.limit = new PromptLimit(
      { textarea: this.prompt, count: $("prompt-count"), error: $("composer-error") },
      serverLimits());
    this.connectionsReady = Promise.resolve();

    this.feedback = new Feedback(this.api, () => this.chatId);
    this.transcript = new Transcript($("transcript"), {
      answerFooter: (turnId, foot) => this.feedback.attach(turnId, foot),
      onChip: (text) => this.send(text),
      onRetry: (text) => this.send(text),
      connect: (name) => this.connections.connect(name),
      displayName: (name) => this.connections.displayName(name),
      onRunning: (turnId) => this.showRunning(turnId),
      changed: () => this.afterChange(),
      applied: (event) => this.turnActions.applied(event),
      attachments: (el, list) => showAttachments(el, list, this.token),
      approvals: {
        accountOf: (toolName, agent) => this.connectionsReady.then(() => this.connections.accountOf(toolName, agent)),
        decide: (approvalId, decision, reason) => this.decide(approvalId, decision, reason),
        onEscape: () => this.prompt.focus(),
        shown: (card, event, live) => {
          this.pendingApprovals.add(event.chat_id || this.chatId, event);
          if (live) this.presentApproval(card);
        },
        resolved: (card, event, live) => {
          this.pendingApprovals.remove(card.approvalId);
          if (live && card.outcome) announce(card.outcome);
        },
      },
    });
    this.turnActions = new TurnActions(this.transcript, {
      send: (frame) => Boolean(this.socket?.send(frame)),
      toast: (text) => this.toast(text),
    });
    this.pendingApprovals = new PendingApprovals(this.api, (pending) => this.showPendingApprovals(pending));
    this.chats = new ChatList(this.api,
      { list: $("chat-list"), more: $("more-chats"), status: $("chat-list-status"), search: $("chat-search") },
      {
        onDelete: (chat) => this.confirmDelete(chat),
        onOpen: () => this.closeSidebar(),
        onRenamed: (chat) => {
          if (chat.id === this.chatId) this.setTitle(chatTitle(chat));
          this.toast("Chat renamed.");
        },
        onError: (message) => this.toast(message),
      });
    this.tray = new AttachmentTray(
      { form: $("composer"), tray: $("attachment-tray"), button: $("attach"), input: $("attach-input") },
      {
        chatId: () => this.chatId || (this.chatId = newChatId()),
        token: () => this.token,
        changed: () => this.updateSend(),
        error: (text) => this.toast(text),
      });
    this.connections = new Connections(this.api, {
      dialog: $("connections-dialog"), list: $("connector-list"), status: $("connections-status"),
    });
  }

  // ---------------------------------------------------------------------- start-up

  async start() {
    for (const el of document.querySelectorAll("[data-icon]")) el.prepend(icon(el.dataset.icon));
    this.bindControls();
    this.renderExamples();
    const me = await this.signIn();
    this.showUser(me);
    this.connectionsReady = this.connections.load().then(() => this.syncConnectCards(), () => {});
    this.chats.refresh();
    // The cards before the chat: history is drawn with its connectors' own cards.
    const cards = this.connectionsReady.then(() => loadCardModules(this.connections.connectors));
    // Said on the page once every card module has loaded or failed (not when the wait
    // below gave up): what a test waits for before it relies on a module's words.
    cards.then(() => { document.documentElement.dataset.cards = "loaded"; });
    await Promise.race([cards, new Promise((resolve) => setTimeout(resolve, CARDS_WAIT_MS))]);
    this.pendingApprovals.refresh();
    window.addEventListener("hashchange", () => this.route());
    await this.route();
  }

  async signIn(message = "") {
    if (this.oidc === undefined) this.oidc = await this.loadSignInConfig();
    if (this.oidc) return this.signInWithProvider(message);
    for (;;) {
      try {
        const me = await this.api.me();
        this.authMode = me?.auth_mode || "local";
        return me;
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 401) {
          this.showBanner(`${error.message} Retrying…`, null);
          await new Promise((resolve) => setTimeout(resolve, 3000));
          continue;
        }
      }
      if (this.serverMode === "header") {
        // The proxy in front signs people in; this page has nothing to ask for.
        this.showBanner("The sign-in proxy in front of this server did not sign you in. "
          + "Reload the page to sign in again.", () => location.reload(), "Reload");
        return new Promise(() => {});
      }
      this.token = null;
      tokenStore.clear();
      const { token, user } = await askForToken($("token-dialog"), (candidate) => {
        const probe = new Api(() => candidate);
        return probe.me().catch((error) => {
          throw new Error(error.status === 401 ? "That token was not accepted." : error.message);
        });
      }, message);
      this.token = token;
      tokenStore.set(token);
      this.authMode = user?.auth_mode || "token";
      return user;
    }
  }

  /** The provider's session when the server signs in with OIDC, else null. */
  async loadSignInConfig() {
    for (;;) {
      let config;
      try {
        config = await this.api.authConfig();
      } catch (error) {
        this.showBanner(`${error.message} Retrying…`, null);
        await new Promise((resolve) => setTimeout(resolve, 3000));
        continue;
      }
      this.serverMode = config?.mode;
      if (config?.mode !== "oidc") return null;
      const settings = config.oidc || {};
      if (!settings.client_id || !settings.authorization_endpoint || !settings.token_endpoint) {
        this.showBanner("This server signs in through an identity provider but is not set up "
          + "for the browser: SWITCHBOARD_OIDC_CLIENT_ID is not set.", null);
        return new Promise(() => {});
      }
      const session = new OidcSession(settings);
      session.onRefreshed = () => { this.token = session.accessToken(); };
      return session;
    }
  }

  /**
   * OIDC: use the tokens of this tab, refresh them, or go to the provider and back.
   * ``message``: why the last token was refused (a 401 or a socket's 4401).
   */
  async signInWithProvider(message) {
    const oidc = this.oidc;
    const dialog = $("signin-dialog");
    if (new URLSearchParams(location.search).has("signed_out")) {
      history.replaceState(null, "", "/");
      await askToSignIn(dialog, "You are signed out.");
      await oidc.redirectToProvider();
    }
    let returned = false;
    try {
      returned = await oidc.completeRedirect();
    } catch (error) {
      await askToSignIn(dialog, error.message);
      await oidc.redirectToProvider();
    }
    let stale = Boolean(message);
    for (;;) {
      if (stale || !oidc.fresh()) {
        if (!(await oidc.refresh())) await oidc.redirectToProvider();
        stale = false;
      }
      this.token = oidc.accessToken();
      try {
        const me = await this.api.me();
        this.authMode = me?.auth_mode || "oidc";
        oidc.schedule();
        return me;
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 401) {
          this.showBanner(`${error.message} Retrying…`, null);
          await new Promise((resolve) => setTimeout(resolve, 3000));
          continue;
        }
        oidc.forget();
        if (returned) {
          // A token fresh from the provider was refused: going round again would loop.
          await askToSignIn(dialog, `This server did not accept the sign-in. ${error.message}`);
          await oidc.redirectToProvider();
        }
        stale = true;
      }
    }
  }

  showUser(me) {
    const tokenMode = this.authMode !== "local";
    $("whoami").textContent = tokenMode ? `Signed in as ${me?.name ?? "?"}` : "Local mode: no sign-in needed";
    // In header mode signing out is the proxy's business, not this page's.
    $("sign-out").hidden = !(this.authMode === "token" || this.authMode === "oidc");
    this.hideBanner();
  }

  bindControls() {
    $("composer").addEventListener("submit", (event) => {
      event.preventDefault();
      this.sendFromComposer();
    });
    this.prompt.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.sendFromComposer();
      }
    });
    this.prompt.addEventListener("input", () => {
      this.lastTyped = Date.now();
      this.composerChanged();
    });
    $("cancel").addEventListener("click", () => this.cancel());
    $("new-chat").addEventListener("click", () => {
      this.closeSidebar();
      this.goToNewChat();
    });
    $("open-connections").addEventListener("click", () => this.connections.open());
    this.connections.onChange = async () => {
      await this.connections.load().catch(() => {});
      if ($("connections-dialog").open) this.connections.render();
      this.syncConnectCards({ fresh: true });
    };
    $("sign-out").addEventListener("click", () => {
      if (this.oidc) {
        this.token = null;
        this.oidc.signOut();
        return;
      }
      tokenStore.clear();
      this.token = null;
      location.hash = "";
      location.reload();
    });
    $("open-sidebar").addEventListener("click", () => this.openSidebar());
    $("close-sidebar").addEventListener("click", () => this.closeSidebar());
    $("backdrop").addEventListener("click", () => this.closeSidebar());
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && document.body.classList.contains("sidebar-open")) this.closeSidebar();
    });
    bindStopKey({ isRunning: () => Boolean(this.transcript.runningTurnId), stop: () => this.cancel(),
      prompt: this.prompt });
    $("banner-action").addEventListener("click", () => this.bannerAction?.());
    window.addEventListener("offline", () => this.showConnection("offline"));
    // Approvals may have been decided (or asked for) in another tab meanwhile.
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) this.pendingApprovals.refresh();
    });
  }

  renderExamples() {
    for (const text of EXAMPLES) {
      const chip = h("button", { type: "button", class: "chip", text });
      chip.addEventListener("click", () => this.send(text));
      $("examples").append(chip);
    }
  }

  // ---------------------------------------------------------------------- routing

  async route() {
    const match = /^#\/chat\/([^/?#]+)$/.exec(location.hash);
    const chatId = match ? decodeURIComponent(match[1]) : null;
    if (chatId && CHAT_ID.test(chatId)) {
      if (chatId !== this.chatId) await this.openChat(chatId);
    } else if (!this.chatId || !this.fresh || !this.transcript.isEmpty) {
      this.newChat();
    }
  }

  /** "New chat": through the address bar when it names a chat, so Back returns to it. */
  goToNewChat() {
    if (location.hash && location.hash !== "#") location.hash = "";
    else this.newChat();
  }

  newChat() {
    this.leaveChat();
    this.chatId = newChatId();
    this.fresh = true;
    this.setTitle("New chat");
    this.chats.setActive(null);
    this.updateEmptyState();
    this.prompt.focus();
    this.pendingApprovals.refresh();
  }

  leaveChat() {
    this.opening += 1;
    this.socket?.close();
    this.socket = null;
    this.outbox.clear();
    this.feedback.reset();
    this.tray?.reset();
    this.transcript.reset();
    this.turnActions.reset();
    this.showRunning(null);
    this.showConnection("idle");
    this.hideBanner();
    this.limit.clearError();
  }

  async openChat(chatId) {
    this.leaveChat();
    const opening = this.opening;
    this.chatId = chatId;
    this.fresh = false;
    this.chats.setActive(chatId);
    this.setTitle(chatTitle(this.chats.find(chatId)));
    $("transcript").setAttribute("aria-busy", "true");
    let events;
    let detail;
    try {
      [events, detail] = await Promise.all([this.api.events(chatId), this.api.chat(chatId)]);
    } catch (error) {
      if (opening !== this.opening) return;
      $("transcript").removeAttribute("aria-busy");
      if (error instanceof ApiError && error.status === 404) {
        // An id nobody has used yet (a link to a new chat): start it fresh.
        this.fresh = true;
        this.updateEmptyState();
        return;
      }
      this.toast(`Could not open the chat: ${error.message}`);
      return;
    }
    if (opening !== this.opening) return;
    const interrupted = new Map((detail?.turns || [])
      .filter((t) => (t.status === "cancelled" || t.status === "failed") && t.final_text)
      .map((t) => [t.id, t.final_text]));
    this.transcript.setInterruptedTexts(interrupted);
    this.feedback.load(detail?.turns);
    for (const event of events) this.transcript.apply(event, { live: false });
    $("transcript").removeAttribute("aria-busy");
    this.setTitle(chatTitle(detail));
    this.updateEmptyState();
    this.follow.toEnd();
    this.connect();
    this.pendingApprovals.refresh();
    // Reopened (or reloaded) while a tool waits: the card is live again; bring it forward.
    const waiting = this.transcript.pendingApprovals[0];
    if (waiting) this.presentApproval(waiting);
  }

  setTitle(title) {
    $("chat-title").textContent = title;
    document.title = title === "New chat" ? "Switchboard" : `${title} · Switchboard`;
  }

  // ---------------------------------------------------------------------- socket

  connect() {
    if (this.socket) return;
    this.socket = new ChatSocket({
      chatId: this.chatId,
      // Read at each (re)connect: in oidc mode the token is refreshed while the page runs.
      token: () => (this.authMode === "local" ? null : this.token),
      lastSeq: () => this.transcript.lastSeq,
      onOpen: () => {
        this.transcript.beginResume();
        this.flushOutbox();
        this.turnActions.flush();
      },
      onDropped: (code) => this.onDropped(code),
      onEvent: (event) => this.onEvent(event),
      onStatus: (status, info) => this.showConnection(status, info),
    });
    this.socket.start();
  }

  onEvent(event) {
    if (event.type === "pong") return;
    if (event.type === "chat_renamed") {
      this.setTitle(event.title);
      this.chats.refresh();
      return;
    }
    if (event.type === "error" && (event.seq === null || event.seq === undefined)) {
      this.onEphemeralError(event);
      return;
    }
    const applied = this.transcript.apply(event, { live: true });
    if (!applied) return;
    if (event.type === "user_prompt") {
      this.outbox.delete(event.client_message_id);
      if (this.fresh) {
        this.fresh = false;
        this.refreshTitle(this.chatId);
      }
    } else if (event.type === "end_of_stream" || event.type === "suggested_prompts") {
      this.refreshTitle(this.chatId);
    }
  }

  /** Refresh the chat list; the server names a chat after its first turn, so until the
   *  chat has a title, look again a few times (a model-written title can take seconds). */
  async refreshTitle(chatId, attempt = 0) {
    await this.chats.refresh();
    if (chatId !== this.chatId) return;
    const chat = this.chats.find(chatId);
    if (chat) this.setTitle(chatTitle(chat));
    this.chats.setActive(chatId);
    if (chat && !chat.title && attempt < TITLE_CHECKS) {
      clearTimeout(this.titleTimer);
      this.titleTimer = setTimeout(() => this.refreshTitle(chatId, attempt + 1), 1000 * 2 ** attempt);
    }
  }

  onEphemeralError(event) {
    if (this.turnActions.refused(event)) return; // a regenerate, edit or continue
    const message = event.message || "The server refused that.";
    // A refused decision (already decided, expired): its card shows why.
    if (/approval/i.test(message) && this.transcript.approvalRefused(message)) return;
    const cancelError = /no such turn/i.test(message);
    if (!cancelError) {
      // The oldest prompt in flight is the one refused (frames are answered in order).
      const [id, entry] = [...this.outbox.entries()].find(([, e]) => e.sent) || [];
      if (id) this.unsend(id, entry);
    }
    const text = event.code === "turn_in_progress"
      ? "An answer is still running in this chat. Wait for it or press Stop."
      : cancelError ? "Nothing is running to stop." : message;
    this.toast(text);
  }

  /** The socket closed. A prompt sent on it that the server has not taken is sent again
   *  on the next connection (its client_message_id makes that safe), unless the server
   *  refused it as too big or it has closed connections too often: then re-sending would
   *  loop forever, so it goes back to the message box with the reason. */
  onDropped(code) {
    for (const [id, entry] of this.outbox) {
      if (!entry.sent) continue;
      entry.sent = false;
      if (code === CLOSE_TOO_BIG) {
        this.unsend(id, entry);
        this.limit.explainTooBig(utf8Bytes(JSON.stringify(promptFrame(id, entry))));
      } else if (entry.attempts >= MAX_SEND_ATTEMPTS) {
        this.unsend(id, entry);
        this.limit.explainGaveUp(entry.attempts);
      }
    }
  }

  /** Take a prompt the server did not take out of the outbox, and its text back into the
   *  message box, before anything typed there meanwhile: nothing is lost. */
  unsend(id, entry) {
    this.outbox.delete(id);
    this.transcript.dropPending(id);
    this.tray.restore(entry.attachments);
    this.updateEmptyState();
    const typed = this.prompt.value;
    if (typed.trim() === entry.text) return;
    this.prompt.value = typed.trim() ? `${entry.text}\n\n${typed}` : entry.text;
    this.composerChanged();
  }

  flushOutbox() {
    for (const [id, entry] of this.outbox) {
      if (this.socket?.send(promptFrame(id, entry))) {
        entry.sent = true;
        entry.attempts += 1;
        this.transcript.notePending(id, "Sending…");
      } else {
        this.transcript.notePending(id, "Waiting for the connection…");
      }
    }
  }

  // ---------------------------------------------------------------------- prompts

  sendFromComposer() {
    if (this.tray.busy) {
      this.toast("Wait for the files to finish uploading.");
      return;
    }
    if (this.send(this.prompt.value, this.tray.ready())) {
      this.lastTyped = 0; // what was typed is sent: only typing after this counts
      this.prompt.value = "";
      this.tray.take();
      this.composerChanged();
    }
  }

  composerChanged() {
    this.fitComposer();
    this.limit.update();
    this.updateSend();
  }

  /** Send a prompt (from the box, a chip or "try again"); false if it cannot go now. */
  send(raw, attachments = []) {
    const text = String(raw ?? "").trim();
    if (!text) return false;
    // A turn paused on an approval does not block a new prompt: the server cancels it (the
    // approval is superseded) and starts the new one. The card says so while it waits.
    if ((this.transcript.runningTurnId && !this.transcript.awaitingApproval) || this.outbox.size) {
      this.toast("Wait for the current answer, or press Stop.");
      return false;
    }
    const chars = charCount(text);
    if (chars > this.limit.maxChars) {
      this.limit.explainOver(chars);
      return false;
    }
    this.limit.clearError();
    if (!this.chatId) this.chatId = newChatId();
    if (this.fresh && location.hash !== `#/chat/${this.chatId}`) {
      history.replaceState(null, "", `#/chat/${this.chatId}`);
    }
    const id = uuid();
    this.outbox.set(id, { text, attachments, sent: false, attempts: 0 });
    this.transcript.addPending(id, text, attachments);
    this.updateEmptyState();
    this.follow.toEnd();
    if (this.socket) this.flushOutbox();
    else this.connect();
    this.closeSidebar();
    return true;
  }

  cancel() {
    if (!this.transcript.runningTurnId) return;
    if (this.socket?.send({ type: "cancel" })) {
      $("cancel").disabled = true;
      $("cancel").querySelector("span:last-child").textContent = "Stopping…";
    } else {
      this.toast("Not connected: the answer can be stopped once the connection is back.");
    }
  }

  showRunning(turnId) {
    const running = Boolean(turnId);
    const cancel = $("cancel");
    cancel.hidden = !running;
    cancel.disabled = false;
    cancel.querySelector("span:last-child").textContent = "Stop";
    this.busy = running && !this.transcript.awaitingApproval;
    this.updateSend();
    $("composer").classList.toggle("running", running);
  }

  updateSend() {
    $("send").disabled = this.busy || this.limit.over || Boolean(this.tray?.busy);
  }

  // ---------------------------------------------------------------------- approvals

  /** Send a decision: on the socket, or over REST while the socket is down. Resolves
   *  "sent" (the approval_resolved event answers) or "recorded" (REST took it). */
  async decide(approvalId, decision, reason) {
    const frame = { type: "approval", approval_id: approvalId, decision };
    if (reason) frame.reason = reason;
    if (this.socket?.send(frame)) return "sent";
    try {
      await this.api.decide(this.chatId, approvalId, decision, reason);
    } catch (error) {
      // Not reaching the server is worth another try; a refusal (404, 409) is final.
      if (error instanceof ApiError && (error.status === 0 || error.status >= 500)) error.retryable = true;
      throw error;
    }
    return "recorded";
  }

  /** A live approval card appeared: announce it, and move focus to it unless the person
   *  is busy elsewhere. Never while they type in the message box: their next Enter is
   *  meant for their message. Focus goes to the card itself, never to Approve, so no
   *  stray key can approve anything. */
  presentApproval(card) {
    announce(card.announcement);
    const active = document.activeElement;
    const typing = active === this.prompt
      && (this.prompt.value.trim() !== "" || Date.now() - this.lastTyped < TYPING_MS);
    const idle = !active || active === document.body || active === $("send") || active === $("cancel")
      || (active === this.prompt && !typing)
      || ($("transcript").contains(active) && !active.matches("input, textarea"));
    if (!idle || document.querySelector("dialog[open]") || document.body.classList.contains("sidebar-open")) return;
    card.el.focus({ preventScroll: true });
  }

  showPendingApprovals(pending) {
    const byChat = pending.byChat();
    this.chats.setPending(byChat);
    // On a phone the chat list is behind the menu button: it carries the marker too.
    const menu = $("open-sidebar");
    const others = [...byChat.keys()].filter((id) => id !== this.chatId).length;
    menu.classList.toggle("has-flag", others > 0);
    menu.setAttribute("aria-label", others
      ? `Open the chat list (${others} other chat${others === 1 ? "" : "s"} need${others === 1 ? "s" : ""} approval)`
      : "Open the chat list");
  }

  fitComposer() {
    // Empty, it keeps its one-line height (a long placeholder would otherwise grow it).
    if (!this.prompt.value) {
      this.prompt.style.height = "";
      return;
    }
    this.prompt.style.height = "auto";
    this.prompt.style.height = `${Math.min(this.prompt.scrollHeight, 220)}px`;
  }

  // ---------------------------------------------------------------------- chats

  confirmDelete(chat) {
    const dialog = $("confirm-dialog");
    $("confirm-text").textContent = `“${chatTitle(chat)}” and its whole history will be deleted.`;
    dialog.returnValue = "";
    dialog.addEventListener("close", async () => {
      if (dialog.returnValue !== "confirm") return;
      try {
        await this.api.deleteChat(chat.id);
      } catch (error) {
        this.toast(error.code === "turn_in_progress"
          ? "This chat is answering right now: stop it first, then delete it."
          : `Could not delete the chat: ${error.message}`);
        return;
      }
      if (chat.id === this.chatId) this.goToNewChat();
      await this.chats.refresh();
      this.toast("Chat deleted.");
    }, { once: true });
    dialog.showModal();
  }

  openSidebar() {
    document.body.classList.add("sidebar-open");
    $("backdrop").hidden = false;
    $("open-sidebar").setAttribute("aria-expanded", "true");
    $("new-chat").focus();
  }

  closeSidebar() {
    if (!document.body.classList.contains("sidebar-open")) return;
    document.body.classList.remove("sidebar-open");
    $("backdrop").hidden = true;
    $("open-sidebar").setAttribute("aria-expanded", "false");
  }

  // ---------------------------------------------------------------------- status

  showConnection(status, info = {}) {
    const el = $("conn-status");
    clearInterval(this.countdown);
    this.countdown = null;
    const offline = navigator.onLine === false;
    if (status === "open") {
      el.dataset.state = "online";
      $("conn-label").textContent = "Connected";
      this.hideBanner();
    } else if (status === "connecting") {
      el.dataset.state = "connecting";
      $("conn-label").textContent = "Connecting…";
    } else if (status === "reconnecting" || status === "offline") {
      el.dataset.state = offline || status === "offline" ? "offline" : "reconnecting";
      $("conn-label").textContent = offline ? "Offline" : "Reconnecting…";
      // Closed over a message too big: the composer says so; the connection is not lost.
      if (info.code === CLOSE_TOO_BIG && !offline) return;
      if (status === "offline") {
        this.showBanner("You are offline. The chat reconnects when the network is back.", null);
        return;
      }
      const due = Date.now() + (info.delayMs || 0);
      const tick = () => {
        const seconds = Math.max(0, Math.ceil((due - Date.now()) / 1000));
        this.showBanner(offline
          ? "You are offline. The chat reconnects when the network is back."
          : `Connection lost. Reconnecting${seconds ? ` in ${seconds} s` : "…"}`,
        () => this.socket?.retryNow(), "Retry now");
      };
      tick();
      this.countdown = setInterval(tick, 1000);
    } else if (status === "failed") {
      el.dataset.state = "offline";
      $("conn-label").textContent = "Disconnected";
      if (info.code === 4401) {
        this.reauthenticate(info.message);
      } else if (info.reason === "chat deleted") {
        this.showBanner(info.message, () => this.goToNewChat(), "New chat");
      } else {
        this.showBanner(info.message || "Disconnected.", () => location.reload(), "Reload");
      }
    } else {
      el.dataset.state = "idle";
      $("conn-label").textContent = "";
    }
  }

  async reauthenticate(message) {
    const me = await this.signIn(message);
    this.showUser(me);
    const chatId = this.chatId;
    this.socket?.close();
    this.socket = null;
    if (chatId && !this.fresh) this.connect();
  }

  showBanner(text, action, actionLabel = "Retry now") {
    $("banner").hidden = false;
    $("banner-text").textContent = text;
    this.bannerAction = action;
    $("banner-action").hidden = !action;
    $("banner-action").textContent = actionLabel;
  }

  hideBanner() {
    $("banner").hidden = true;
    this.bannerAction = null;
  }

  toast(text) {
    const el = h("div", { class: "toast", text });
    $("toasts").append(el);
    setTimeout(() => el.remove(), TOAST_MS);
  }

  updateEmptyState() {
    $("welcome").hidden = !this.transcript.isEmpty;
  }

  afterChange() {
    this.updateEmptyState();
    this.syncConnectCards();
    this.follow.changed();
  }

  /** Every connect card on the page shows the connection as it is now. */
  syncConnectCards(options = {}) {
    if (!this.connections?.available) return;
    syncConnectCards($("transcript"), (name) => {
      const connector = this.connections.connectors.find((c) => c.name === name);
      if (!connector) return null;
      return connector.needs_account === false || Boolean(connector.connected);
    }, options);
  }
}

function promptFrame(id, entry) {
  const frame = { type: "prompt", text: entry.text, client_message_id: id };
  if (entry.attachments?.length) frame.attachments = entry.attachments.map((a) => a.id);
  return frame;
}

const app = new App();
app.start().catch((error) => {
  console.error(error);
  app.showBanner(`The page failed to start: ${error.message}`, () => location.reload(), "Reload");
});
