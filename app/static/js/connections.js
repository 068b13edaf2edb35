// Connected accounts: the connections panel and the connect flow that connect cards use.
// Every connector's account flow is driven the same way (docs/protocol.md, "Connector
// endpoints"): POST /api/connectors/{name}/connect answers what the browser does next:
//   {"status": "connected", "connector": …}         done (demo mode, or nothing to sign in to)
//   {"status": "redirect", "url": …}                sign in at the provider: a popup whose
//                                                   callback page posts the outcome back
//   {"widget": NAME, …}                             run the client widget NAME (a connector's
//                                                   card module provides it), then POST its
//                                                   result to …/{name}/finish
//   {"status": "api_key", "label", "help"}          ask the person for a key, POST it to finish
import { ApiError } from "./api.js";
import { widgetFor } from "./card-registry.js";
import { asList, asText, clear, h, isObject, safeUrl } from "./dom.js";
import { icon } from "./icons.js";

const SERVER_STATES = {
  connecting: "Connecting…",
  reconnecting: "Reconnecting…",
  failed: "Unavailable",
  stopped: "Stopped",
};

export class Connections {
  constructor(api, { dialog, list, status, onChange }) {
    this.api = api;
    this.dialog = dialog;
    this.list = list;
    this.statusEl = status;
    this.onChange = onChange;
    this.connectors = [];
    this.failed = [];
    this.available = true;
  }

  displayName(name) {
    return this.connectors.find((c) => c.name === name)?.display_name || name;
  }

  /** The account a tool acts as (its connector's, found by tool, else by agent name),
   *  for an approval's "From"; null when unknown. */
  accountOf(toolName, agentName) {
    const hasTool = (c) => asList(c.tools).some((t) => (isObject(t) ? t.name : t) === toolName);
    const connector = this.connectors.find(hasTool)
      || this.connectors.find((c) => c.agent_name === agentName || c.name === agentName);
    if (!connector) return null;
    if (connector.needs_account !== false && !connector.connected) {
      return `no ${asText(connector.display_name) || connector.name} account is connected`;
    }
    return accountLabel(connector.account) || null;
  }

  /** Load the connectors; false when this server has no connections API. */
  async load() {
    try {
      const data = await this.api.connectors();
      this.connectors = asList(data?.connectors).filter(isObject);
      this.failed = asList(data?.failed).filter(isObject);
      this.available = true;
    } catch (error) {
      if (error instanceof ApiError && (error.status === 404 || error.status === 405)) {
        this.connectors = [];
        this.available = false;
      } else {
        throw error;
      }
    }
    return this.available;
  }

  async open() {
    this.statusEl.textContent = "Loading…";
    clear(this.list);
    if (!this.dialog.open) this.dialog.showModal();
    try {
      await this.load();
      this.render();
    } catch (error) {
      this.statusEl.textContent = error.message;
    }
  }

  render() {
    clear(this.list);
    if (!this.available) {
      this.statusEl.textContent = "This server does not offer account connections.";
      return;
    }
    this.statusEl.textContent = this.connectors.length ? "" : "No connectors are installed.";
    for (const connector of this.connectors) this.list.append(this.item(connector));
    // Installed or configured but not served, and why: the operator's to fix.
    for (const failed of this.failed) {
      this.list.append(h("li", { class: "failed-connector", dataset: { connector: asText(failed.name) } },
        h("div", { class: "connector-info" },
          h("p", {}, h("strong", { text: asText(failed.name) })),
          h("span", { class: "connector-state off", text: `Not loaded (${asText(failed.origin)})` }),
          h("p", { class: "connector-reason small muted", text: asText(failed.reason) }))));
    }
  }

  item(connector) {
    const name = asText(connector.name);
    const account = accountLabel(connector.account);
    const state = h("span", { class: `connector-state ${connector.connected ? "on" : "off"}`,
      text: connector.connected ? (account ? `Connected: ${account}` : "Connected") : "Not connected" });
    const button = h("button", { type: "button", class: `button ${connector.connected ? "" : "primary"}`,
      "aria-label": `${connector.connected ? "Disconnect" : "Connect"} ${asText(connector.display_name) || name}` },
    icon(connector.connected ? "close" : "plug"),
    h("span", { text: connector.connected ? "Disconnect" : "Connect" }));
    const note = h("p", { class: "connector-note small", role: "status" });
    button.addEventListener("click", async () => {
      button.disabled = true;
      note.textContent = connector.connected ? "Disconnecting…" : "Connecting…";
      try {
        if (connector.connected) {
          await this.api.disconnect(name);
          note.textContent = "";
        } else {
          const result = await this.connect(name);
          if (result !== "connected") {
            note.textContent = result;
            return;
          }
        }
        await this.load();
        this.render();
        this.onChange?.();
      } catch (error) {
        note.textContent = error.message;
        button.disabled = false;
      }
    });
    const tools = asList(connector.tools)
      .map((tool) => asText(isObject(tool) ? tool.description || tool.name : tool)).filter(Boolean);
    // A connector that runs on the server's own keys has no per-user account to manage.
    const managed = connector.needs_account !== false;
    // A remote server (MCP) that is not connected now says so, and why.
    const server = isObject(connector.server) && connector.server.state !== "connected" ? connector.server : null;
    const availability = server
      ? [h("span", { class: "connector-state off", text: SERVER_STATES[server.state] || asText(server.state) }),
        server.reason ? h("p", { class: "connector-reason small muted", text: asText(server.reason) }) : null]
      : h("span", { class: "connector-state on", text: "Always available" });
    return h("li", { class: "connector", dataset: { connector: name } },
      h("div", { class: "connector-info" },
        h("p", {},
          h("strong", { text: asText(connector.display_name) || name }),
          h("span", { class: `badge mode-${asText(connector.mode).replace(/[^a-z]/g, "")}`,
            text: asText(connector.mode) || "?" })),
        managed ? state : availability,
        tools.length ? h("details", { class: "small muted" },
          h("summary", { text: `${tools.length} tool${tools.length === 1 ? "" : "s"}` }),
          h("ul", { class: "tool-list" }, tools.map((t) => h("li", { text: t })))) : null,
        note),
      managed ? button : null);
  }

  /** Run the connect flow for one connector: "connected", or a note on what happens next. */
  async connect(name) {
    const result = await this.api.connect(name);
    const status = asText(result?.status);
    if (status === "connected") {
      this.onChange?.();
      return "connected";
    }
    if (status === "redirect") {
      const url = safeUrl(result.url);
      if (!url) throw new Error("The server gave an unusable sign-in address.");
      // A popup keeps the chat open; the callback page tells us how it went (postMessage).
      const popup = window.open(url, "switchboard-connect", "popup,width=520,height=700");
      if (!popup) {
        window.location.assign(url);
        return "Opening the sign-in page…";
      }
      await waitForCallback(popup, name);
      this.onChange?.();
      return "connected";
    }
    if (result?.widget !== undefined) {
      // (step) -> the JSON body of the finish step, from the connector's card module.
      const widget = widgetFor(result.widget);
      if (!widget) throw new Error(`This page cannot run the ${asText(result.widget) || "unnamed"} step.`);
      await this.api.finish(name, await widget(result));
      this.onChange?.();
      return "connected";
    }
    if (status === "api_key") {
      const key = await askForKey(this.displayName(name), asText(result.label), asText(result.help));
      if (key === null) return "Not connected: no key was given.";
      await this.api.finish(name, { api_key: key });
      this.onChange?.();
      return "connected";
    }
    throw new Error(`Unexpected answer from the server (${status || "no status"}).`);
  }
}

/** Ask for an API key in a modal dialog; resolves to the key, or null when cancelled. */
function askForKey(service, label, help) {
  const input = h("input", { type: "password", id: "api-key-input", autocomplete: "off", spellcheck: "false", required: true });
  const submit = h("button", { type: "submit", class: "button primary", text: "Connect" });
  const cancel = h("button", { type: "button", class: "button", text: "Cancel" });
  const form = h("form", {},
    h("h2", { id: "api-key-title", text: `Connect ${service}` }),
    help ? h("p", { class: "small", text: help }) : null,
    h("label", { for: "api-key-input", text: label || "API key" }),
    input,
    h("p", { class: "muted small", text: "The key is sent to this server once and stored encrypted; it is never shown again." }),
    h("div", { class: "actions end" }, cancel, submit));
  const dialog = h("dialog", { class: "dialog", "aria-labelledby": "api-key-title" }, form);
  document.body.append(dialog);
  return new Promise((resolve) => {
    const done = (value) => {
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const key = input.value.trim();
      if (key) done(key);
    });
    cancel.addEventListener("click", () => done(null));
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      done(null);
    });
    dialog.showModal();
    input.focus();
  });
}

function accountLabel(account) {
  if (!isObject(account)) return asText(account);
  const institutions = asList(account.institutions).map((i) => asText(isObject(i) ? i.name : i));
  return asText(account.email || institutions.filter(Boolean).join(", ") || account.name || "");
}

/** Resolve when the OAuth callback page in ``popup`` reports success; reject otherwise. */
function waitForCallback(popup, name) {
  return new Promise((resolve, reject) => {
    const done = (fn, value) => {
      window.removeEventListener("message", onMessage);
      clearInterval(watch);
      fn(value);
    };
    const onMessage = (event) => {
      if (event.origin !== location.origin || event.source !== popup) return;
      const data = event.data;
      if (!isObject(data) || data.type !== "switchboard:connector" || data.name !== name) return;
      if (data.status === "connected") done(resolve);
      else done(reject, new Error(asText(data.message) || "The account was not connected."));
    };
    const watch = setInterval(() => {
      if (popup.closed) done(reject, new Error("The sign-in window was closed before it finished."));
    }, 500);
    window.addEventListener("message", onMessage);
  });
}
