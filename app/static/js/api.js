// The REST API (PROTOCOL.md §7) with the same auth as the socket: nothing in local mode,
// "Authorization: Bearer <token>" in token mode.

const TIMEOUT_MS = 15_000;
const EVENTS_PAGE = 1000;

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class Api {
  constructor(getToken) {
    this.getToken = getToken;
  }

  async request(method, path, body = undefined) {
    const headers = { Accept: "application/json" };
    const token = this.getToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "same-origin",
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      const timedOut = error?.name === "TimeoutError";
      throw new ApiError(0, "network", timedOut
        ? "The server did not answer in time."
        : "Cannot reach the server. Check that it is running.");
    }
    if (response.status === 204) return null;
    let data = null;
    try {
      data = await response.json();
    } catch {
      // Non-JSON error pages (a proxy's 502, …) are described by their status below.
    }
    if (!response.ok) {
      const error = data?.error || {};
      throw new ApiError(response.status, error.code || `http_${response.status}`,
        error.message || `The server answered ${response.status} ${response.statusText}.`);
    }
    return data;
  }

  me() {
    return this.request("GET", "/api/me");
  }

  /** How this server signs in: {mode, oidc?: {client_id, endpoints, …}} (public). */
  authConfig() {
    return this.request("GET", "/api/auth/config");
  }

  /** A page of the user's chats; with ``q``, of the chats matching it (with snippets). */
  listChats(cursor = null, q = null) {
    const query = new URLSearchParams({ limit: "50" });
    if (cursor) query.set("cursor", cursor);
    if (q !== null) query.set("q", q);
    return this.request("GET", `/api/chats?${query}`);
  }

  renameChat(chatId, title) {
    return this.request("PATCH", `/api/chats/${encodeURIComponent(chatId)}`, { title });
  }

  /** The chat as a file, {blob, filename}: fetched (it needs the credential), not linked. */
  async exportChat(chatId, format) {
    const headers = {};
    const token = this.getToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    const path = `/api/chats/${encodeURIComponent(chatId)}/export?format=${encodeURIComponent(format)}`;
    let response;
    try {
      response = await fetch(path, { headers, credentials: "same-origin", signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch {
      throw new ApiError(0, "network", "Cannot reach the server. Check that it is running.");
    }
    if (!response.ok) {
      const data = await response.json().catch(() => null);
      throw new ApiError(response.status, data?.error?.code || "http_error",
        data?.error?.message || `The server answered ${response.status}.`);
    }
    const named = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
    return { blob: await response.blob(), filename: named ? named[1] : `chat.${format === "json" ? "json" : "md"}` };
  }

  chat(chatId) {
    return this.request("GET", `/api/chats/${encodeURIComponent(chatId)}`);
  }

  /** Every persisted event of a chat, paging through the API. */
  async events(chatId) {
    const events = [];
    let after = 0;
    for (;;) {
      const query = new URLSearchParams({ after_seq: String(after), limit: String(EVENTS_PAGE) });
      const page = await this.request("GET", `/api/chats/${encodeURIComponent(chatId)}/events?${query}`);
      const batch = page?.events || [];
      events.push(...batch);
      if (batch.length < EVENTS_PAGE) return events;
      after = batch[batch.length - 1].seq;
    }
  }

  deleteChat(chatId) {
    return this.request("DELETE", `/api/chats/${encodeURIComponent(chatId)}`);
  }

  /** The user's pending approvals across their chats. */
  approvals() {
    return this.request("GET", "/api/approvals");
  }

  /** Decide a pending approval over REST (the same decision as the socket's frame). */
  decide(chatId, approvalId, decision, reason = null) {
    const body = { decision };
    if (reason) body.reason = reason;
    return this.request("POST",
      `/api/chats/${encodeURIComponent(chatId)}/approvals/${encodeURIComponent(approvalId)}`, body);
  }

  connectors() {
    return this.request("GET", "/api/connectors");
  }

  connect(name) {
    return this.request("POST", `/api/connectors/${encodeURIComponent(name)}/connect`);
  }

  disconnect(name) {
    return this.request("DELETE", `/api/connectors/${encodeURIComponent(name)}`);
  }

  /** The last step of a connector's account flow: a client widget's result, or a key. */
  finish(name, body) {
    return this.request("POST", `/api/connectors/${encodeURIComponent(name)}/finish`, body);
  }
}
