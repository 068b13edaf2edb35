// Tool cards. A connector's card module (loaded from its manifest, card-modules.js)
// renders its own response types; the page renders the types every connector shares
// (connect cards, links, errors) and, for every other type, a generic card from the
// display_as hints (or JSON). A renderer that throws or returns nothing falls back to the
// generic card with a console warning: a card is never blank.
import { connectLabel, connectorOfConnectType, iconForAgent, isConnectType, onRegistered, rendererFor } from "./card-registry.js";
import { asList, asText, h, isObject, link, safeImage, safeUrl } from "./dom.js";
import { icon } from "./icons.js";
import { renderMarkdown } from "./markdown.js";

// What a card was rendered from, to render it again when a late module takes its type.
const sources = new WeakMap(); // card element -> {output, ctx}

/**
 * Render a tool output (the ToolResponse dict of a tool_output event) as a card element.
 * ``ctx``: {live, connect(connector, card) -> Promise, retry(), displayName(connector)}
 */
export function renderCard(output, ctx = {}) {
  const type = typeof output?.response_type === "string" ? output.response_type : "unknown";
  const renderer = pickRenderer(type);
  let body;
  try {
    body = renderer ? renderer(output.response, output, ctx) : genericBody(output);
    if (renderer && !isBody(body)) throw new Error("the renderer returned no element, text or list of them");
  } catch (error) {
    console.warn(`card for ${type} fell back to the generic view`, error);
    body = genericBody(output);
  }
  const card = frame(output, type, body);
  if (!renderer) {
    card.dataset.generic = "";
    sources.set(card, { output, ctx });
  }
  return card;
}

/** What a renderer may return: an element, a text, or a non-empty list of them. */
function isBody(body) {
  if (Array.isArray(body)) return body.some(isBody) && body.every((part) => part == null || part === false || isBody(part));
  return body instanceof Node || (typeof body === "string" && body !== "");
}

function pickRenderer(type) {
  if (isConnectType(type)) return connectCard;
  return CORE_RENDERERS[type] || rendererFor(type);
}

const CORE_RENDERERS = {
  open_window: openLink,
  open_tab: openLink,
  error: errorBody,
};

function frame(output, type, body) {
  const kind = type.replace(/[^a-z0-9_-]/gi, "");
  const connect = isConnectType(type);
  const iconName = type === "error" ? "alert"
    : connect ? "plug" : iconForAgent(output?.agent_name) || "doc";
  const title = asText(output?.friendly_name) || type;
  const classes = ["card", `card-${kind}`, connect ? "card-connect" : null, type === "error" ? "card-error" : null];
  return h("article", { class: classes.filter(Boolean).join(" "), dataset: { responseType: type } },
    h("header", { class: "card-head" },
      icon(iconName),
      h("h3", { class: "card-title", text: title }),
      // The server cut a result over its size cap: this card shows only its first part.
      output?.truncated === true
        ? h("span", { class: "card-truncated", text: "truncated", title: "The result was too large; only its first part is shown." })
        : null,
      output?.agent_name ? h("span", { class: "card-agent", text: asText(output.agent_name) }) : null),
    h("div", { class: "card-body" }, body));
}

/** Cards drawn the generic way because no module had taken their type yet: drawn again
 *  once a module (loaded late) takes it, in place. */
onRegistered((types) => {
  if (!types.length) return;
  for (const card of document.querySelectorAll(".card[data-generic]")) {
    if (!types.includes(card.dataset.responseType)) continue;
    const source = sources.get(card);
    if (!source) continue;
    const again = renderCard(source.output, { ...source.ctx, live: false });
    if (card.dataset.callId) again.dataset.callId = card.dataset.callId;
    card.replaceWith(again);
  }
});

// ------------------------------------------------------------------------------ actions

function connectCard(response, output, ctx) {
  const data = isObject(response) ? response : { message: asText(response) };
  const connector = asText(data.connector) || connectorOfConnectType(output.response_type);
  const status = h("p", { class: "connect-status", role: "status" });
  // Classes and data-connector: connect-state.js keeps an old chat's card in step with
  // the connection as it is now (data-live: just drawn from the server's own word).
  const marks = connector ? { connector, ...(ctx.live ? { live: "" } : {}) } : null;
  const button = h("button", { type: "button", class: "button primary connect-button",
    dataset: marks }, icon("plug"),
  h("span", { text: buttonLabel(connector, output, ctx) }));
  const retry = h("button", { type: "button", class: "button connect-retry", hidden: true,
    dataset: ctx.retry ? { ready: "" } : null }, icon("retry"),
  h("span", { text: "Ask again" }));
  button.addEventListener("click", async () => {
    if (!ctx.connect || !connector) {
      status.textContent = "Connections are not available here.";
      return;
    }
    button.disabled = true;
    status.textContent = "Connecting…";
    try {
      const result = await ctx.connect(connector);
      if (result === "connected") {
        status.textContent = "Connected.";
        button.hidden = true;
        retry.hidden = !ctx.retry;
      } else {
        status.textContent = result || "";
        button.disabled = false;
      }
    } catch (error) {
      status.textContent = error?.message || "Could not connect.";
      button.disabled = false;
    }
  });
  retry.addEventListener("click", () => ctx.retry?.());
  return [
    h("p", { text: asText(data.message) || "Connect an account to continue." }),
    h("div", { class: "actions" }, button, retry),
    status,
  ];
}

function buttonLabel(connector, output, ctx) {
  return connectLabel(connector)
    || `Connect ${ctx.displayName?.(connector) || asText(output.agent_name) || connector}`;
}

function openLink(response, output, ctx) {
  const url = safeUrl(isObject(response) ? response.url : response);
  if (!url) return h("p", { class: "muted", text: "This link cannot be opened (unsupported address)." });
  if (output.response_type === "open_tab" && ctx.live) {
    // Best effort: browsers allow it only shortly after a click; the button is always there.
    window.open(url, "_blank", "noopener,noreferrer");
  }
  return [
    h("p", { class: "small break", text: url }),
    h("div", { class: "actions" },
      h("a", { class: "button primary", href: url, target: "_blank", rel: "noopener noreferrer" },
        icon("external"), h("span", { text: output.response_type === "open_window" ? "Open window" : "Open tab" }))),
  ];
}

function errorBody(response, output) {
  const message = asText(output.error_message) || asText(response) || "The tool failed.";
  return h("p", { class: "pre-wrap", text: message.replace(/^Error:\s*/, "") });
}

// ------------------------------------------------------------------------------ generic

/** display_as: the first segment this UI supports, else the response as JSON. */
export function genericBody(output) {
  for (const segment of asList(output?.display_as)) {
    if (!isObject(segment)) continue;
    const render = SEGMENTS[segment.type];
    if (!render) continue;
    const el = render(segment.content);
    if (el) return el;
  }
  const response = output?.response;
  if (typeof response === "string") return h("p", { class: "pre-wrap", text: response });
  return jsonBlock(response);
}

function jsonBlock(value) {
  let text;
  try { text = JSON.stringify(value, null, 2); } catch { text = String(value); }
  return h("pre", { class: "json" }, h("code", { text: text ?? "null" }));
}

const SEGMENTS = {
  text: (content) => h("p", { class: "pre-wrap", text: asText(content) }),
  markdown: (content) => h("div", { class: "markdown" }, renderMarkdown(asText(content))),
  json: jsonBlock,
  diff: diffBlock,
  link: (content) => {
    const url = isObject(content) ? content.url : content;
    if (!safeUrl(url)) return null;
    const title = isObject(content) ? asText(content.title) || url : url;
    return h("p", {}, link(url, title),
      isObject(content) && content.description ? h("span", { class: "muted block small", text: asText(content.description) }) : null);
  },
  card: (content) => {
    if (!isObject(content)) return h("p", { class: "pre-wrap", text: asText(content) });
    const image = safeImage(content.image_url ?? content.image);
    const body = content.text ?? content.body ?? content.description ?? content.subtitle;
    return h("div", { class: "hint-card" },
      image ? h("img", { src: image, alt: "", loading: "lazy", referrerpolicy: "no-referrer" }) : null,
      content.title ? h("h4", { text: asText(content.title) }) : null,
      body ? h("p", { class: "pre-wrap", text: asText(body) }) : null,
      safeUrl(content.url) ? h("p", {}, link(content.url, asText(content.url_title) || "Open")) : null);
  },
};

function diffBlock(content) {
  const data = isObject(content) ? content : { patch: asText(content) };
  const patch = asText(data.patch ?? data.diff);
  const lines = patch.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const kind = (line) => {
    if (line.startsWith("+++") || line.startsWith("---")) return "meta";
    if (line.startsWith("@@")) return "hunk";
    if (line.startsWith("+")) return "add";
    if (line.startsWith("-")) return "del";
    return "ctx";
  };
  const added = lines.filter((l) => kind(l) === "add").length;
  const removed = lines.filter((l) => kind(l) === "del").length;
  return h("figure", { class: "diff" },
    h("figcaption", {}, icon("code"), h("span", { class: "diff-path", text: asText(data.path) || "changes" }),
      h("span", { class: "diff-stat" },
        h("span", { class: "add", text: `+${added}` }), " ", h("span", { class: "del", text: `−${removed}` }))),
    h("pre", {}, h("code", {}, lines.map((line) => h("span", { class: `diff-line ${kind(line)}`, text: `${line}\n` })))));
}
