// Tool cards: one renderer per response_type of PROTOCOL.md §6, and a generic card from
// display_as hints (or JSON) for every other type. Renderers never throw on odd payloads:
// a card that cannot read its data falls back to the generic card.
import { asList, asText, h, isObject, link, safeImage, safeUrl } from "./dom.js";
import { count, formatDate, money } from "./format.js";
import { icon } from "./icons.js";
import { renderMarkdown } from "./markdown.js";

const EMAIL_LISTS = new Set(["google_email_inbox", "google_email_search",
  "google_email_search_from_email"]);
const EMAIL_SENT = new Set(["send_google_email", "reply_to_google_email"]);
const CONNECT = new Set(["account_needed", "google_account_needed", "connect_google_account",
  "connect_plaid_account"]);
const CONNECT_DEFAULTS = {
  google_account_needed: "gmail", connect_google_account: "gmail", connect_plaid_account: "plaid",
};
const AGENT_ICONS = { GMail: "mail", Plaid: "bank", Yelp: "store", Search: "search" };

/**
 * Render a tool output (the ToolResponse dict of a tool_output event) as a card element.
 * ``ctx``: {live, connect(connector, card) -> Promise, retry(), chunks}
 */
export function renderCard(output, ctx = {}) {
  const type = typeof output?.response_type === "string" ? output.response_type : "unknown";
  const renderer = pickRenderer(type);
  let body;
  try {
    body = renderer(output.response, output, ctx);
  } catch (error) {
    console.warn(`card for ${type} fell back to the generic view`, error);
    body = genericBody(output);
  }
  return frame(output, type, body);
}

function pickRenderer(type) {
  if (EMAIL_LISTS.has(type)) return emailList;
  if (EMAIL_SENT.has(type)) return emailSent;
  if (CONNECT.has(type)) return connectCard;
  return RENDERERS[type] || ((_, output) => genericBody(output));
}

const RENDERERS = {
  google_email_message: emailMessage,
  plaid_accounts_response: accounts,
  plaid_transactions_response: transactions,
  yelp_search_results: businesses,
  yelp_reviews: reviews,
  google_search_results: searchResults,
  open_window: openLink,
  open_tab: openLink,
  error: errorBody,
};

function frame(output, type, body) {
  const kind = type.replace(/[^a-z0-9_-]/gi, "");
  const iconName = type === "error" ? "alert"
    : CONNECT.has(type) ? "plug" : AGENT_ICONS[output?.agent_name] || "doc";
  const title = asText(output?.friendly_name) || type;
  return h("article", { class: `card card-${kind}${type === "error" ? " card-error" : ""}`,
    dataset: { responseType: type } },
  h("header", { class: "card-head" },
    icon(iconName),
    h("h3", { class: "card-title", text: title }),
    output?.agent_name ? h("span", { class: "card-agent", text: asText(output.agent_name) }) : null),
  h("div", { class: "card-body" }, body));
}

// ------------------------------------------------------------------------------ email

function emailList(messages) {
  const items = asList(messages).filter(isObject);
  if (!items.length) return h("p", { class: "muted", text: "No emails found." });
  return h("ul", { class: "email-list" }, items.map((m) => h("li", {
    class: `email${m.unread ? " unread" : ""}`,
  }, h("details", {},
    h("summary", {},
      h("span", { class: "email-line" },
        m.unread ? h("span", { class: "unread-dot", role: "img", title: "Unread", "aria-label": "Unread" }) : null,
        h("span", { class: "email-from", text: asText(m.from) }),
        h("time", { class: "email-date", datetime: asText(m.date), text: formatDate(m.date) })),
      h("span", { class: "email-subject", text: asText(m.subject) || "(no subject)" }),
      h("span", { class: "email-snippet", text: snippet(m.text ?? m.markdown ?? m.snippet) })),
    addressFields(m),
    h("div", { class: "markdown email-body" }, renderMarkdown(asText(m.markdown ?? m.text)))))));
}

function snippet(value, limit = 160) {
  const text = asText(value).replace(/\s+/g, " ").trim();
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

function addressFields(m, extra = []) {
  const rows = [
    ["From", m.from], ["To", m.to], ["Cc", m.cc], ["Bcc", m.bcc], ...extra,
  ].filter(([, value]) => asList(value).length && asList(value).some((v) => asText(v)));
  return h("dl", { class: "fields" }, rows.map(([label, value]) => [
    h("dt", { text: label }), h("dd", { text: asList(value).map(asText).join(", ") }),
  ]));
}

function emailMessage(message, output) {
  if (!isObject(message)) return genericBody(output);
  return [
    h("p", { class: "email-subject large", text: asText(message.subject) || "(no subject)" }),
    addressFields(message, [["Date", message.date ? formatDate(message.date) : ""]]),
    h("div", { class: "markdown email-body" },
      renderMarkdown(asText(message.markdown ?? message.text))),
  ];
}

function emailSent(sent, output) {
  if (!isObject(sent)) return genericBody(output);
  const reply = output.response_type === "reply_to_google_email";
  return [
    h("p", { class: "status-line ok" }, icon("check"),
      h("span", { text: reply ? "Reply sent" : "Email sent" })),
    addressFields({ to: sent.to, cc: sent.cc, bcc: sent.bcc },
      [["Subject", sent.subject]]),
    h("details", { class: "sent-body" },
      h("summary", { text: "Message" }),
      h("p", { class: "pre-wrap", text: asText(sent.body) })),
  ];
}

// ------------------------------------------------------------------------------ banking

function accounts(list, output) {
  const items = asList(list).filter(isObject);
  if (!items.length) return h("p", { class: "muted", text: "No accounts." });
  let cash = 0;
  let owed = 0;
  const currency = items[0]?.balances?.iso_currency_code || "USD";
  const rows = items.map((account) => {
    const b = isObject(account.balances) ? account.balances : {};
    const credit = account.type === "credit" || account.type === "loan";
    if (typeof b.current === "number") credit ? (owed += b.current) : (cash += b.current);
    const detail = [account.institution?.name, account.subtype,
      account.mask ? `•••• ${account.mask}` : null].filter(Boolean).join(" · ");
    return h("tr", { class: credit ? "credit" : "" },
      h("th", { scope: "row" },
        h("span", { class: "account-name", text: asText(account.name) }),
        h("span", { class: "muted small", text: detail })),
      h("td", { class: "num", text: money(b.current, b.iso_currency_code) }),
      h("td", { class: "num muted", text: credit && typeof b.limit === "number"
        ? `limit ${money(b.limit, b.iso_currency_code)}` : money(b.available, b.iso_currency_code) }));
  });
  return [
    h("table", { class: "data accounts" },
      h("thead", {}, h("tr", {},
        h("th", { scope: "col", text: "Account" }),
        h("th", { scope: "col", class: "num", text: "Balance" }),
        h("th", { scope: "col", class: "num", text: "Available" }))),
      h("tbody", {}, rows)),
    h("p", { class: "totals" },
      h("span", {}, "Cash ", h("strong", { text: money(cash, currency) })),
      owed ? h("span", {}, "Credit owed ", h("strong", { text: money(owed, currency) })) : null),
  ];
}

const TRANSACTIONS_SHOWN = 8;

function transactions(byAccount, output) {
  if (!isObject(byAccount)) return genericBody(output);
  const sections = Object.values(byAccount).filter(isObject);
  if (!sections.length) return h("p", { class: "muted", text: "No transactions in this period." });
  return sections.map((account) => {
    const txns = asList(account.transactions).filter(isObject);
    const row = (t) => {
      const spent = typeof t.amount === "number" && t.amount > 0;
      const amount = typeof t.amount === "number"
        ? `${spent ? "−" : "+"}${money(Math.abs(t.amount), t.iso_currency_code)}` : "";
      return h("tr", {},
        h("td", { class: "date", text: formatDate(t.date) }),
        h("td", {},
          h("span", { text: asText(t.merchant_name || t.name) }),
          t.pending ? h("span", { class: "badge", text: "pending" }) : null,
          h("span", { class: "muted small block", text: asList(t.category).map(asText).join(" › ") })),
        h("td", { class: `num ${spent ? "" : "income"}`, text: amount }));
    };
    const table = (list) => h("table", { class: "data transactions" },
      h("thead", { class: "visually-hidden" }, h("tr", {},
        h("th", { scope: "col", text: "Date" }), h("th", { scope: "col", text: "Description" }),
        h("th", { scope: "col", class: "num", text: "Amount" }))),
      h("tbody", {}, list.map(row)));
    return h("section", { class: "account-transactions" },
      h("h4", {}, asText(account.account_name),
        h("span", { class: "muted small", text: ` ${count(txns.length)} transactions` })),
      table(txns.slice(0, TRANSACTIONS_SHOWN)),
      txns.length > TRANSACTIONS_SHOWN
        ? h("details", {}, h("summary", { text: `Show ${txns.length - TRANSACTIONS_SHOWN} more` }),
          table(txns.slice(TRANSACTIONS_SHOWN)))
        : null);
  });
}

// ------------------------------------------------------------------------------ yelp

function stars(rating) {
  const value = typeof rating === "number" ? Math.max(0, Math.min(5, rating)) : 0;
  const el = h("span", { class: "stars", role: "img", "aria-label": `Rated ${value} out of 5` },
    h("span", { class: "stars-fill", "aria-hidden": "true", text: "★★★★★" }),
    h("span", { class: "stars-empty", "aria-hidden": "true", text: "★★★★★" }));
  el.style.setProperty("--rating", String(value / 5));
  return el;
}

function businesses(list) {
  const items = asList(list).filter(isObject);
  if (!items.length) return h("p", { class: "muted", text: "No places found." });
  return h("ul", { class: "business-grid" }, items.map((b) => {
    const image = safeImage(b.image_url);
    const hours = asList(b.business_hours).find(isObject);
    const open = b.is_closed ? "Closed permanently"
      : hours && typeof hours.is_open_now === "boolean" ? (hours.is_open_now ? "Open now" : "Closed now")
        : "";
    return h("li", { class: "business" },
      image ? thumbnail(image, asText(b.name)) : placeholder(asText(b.name)),
      h("div", { class: "business-info" },
        h("h4", {}, link(b.url, asText(b.name))),
        h("p", { class: "rating-line" }, stars(b.rating),
          h("span", { class: "rating-number", text: typeof b.rating === "number" ? b.rating.toFixed(1) : "" }),
          h("span", { class: "muted", text: b.review_count ? `(${count(b.review_count)})` : "" }),
          b.price ? h("span", { class: "price", text: asText(b.price) }) : null),
        h("p", { class: "muted small", text: asList(b.categories).map((c) => asText(c?.title ?? c)).join(", ") }),
        h("p", { class: "small", text: asList(b.location?.display_address).map(asText).join(", ") }),
        h("p", { class: "small" },
          b.display_phone ? h("span", { text: asText(b.display_phone) }) : null,
          open ? h("span", { class: `open-state ${open === "Open now" ? "open" : "closed"}`, text: open }) : null)));
  }));
}

function placeholder(name) {
  const initials = name.split(/\s+/).filter((w) => /^[\p{L}\p{N}]/u.test(w)).slice(0, 2).map((w) => w[0]).join("").toUpperCase();
  return h("span", { class: "thumb-placeholder", "aria-hidden": "true", text: initials });
}

function thumbnail(src, name) {
  const img = h("img", { src, alt: "", loading: "lazy", referrerpolicy: "no-referrer" });
  img.addEventListener("error", () => img.replaceWith(placeholder(name)), { once: true });
  return img;
}

function reviews(list) {
  const items = asList(list).filter(isObject).slice(0, 3);
  if (!items.length) return h("p", { class: "muted", text: "No reviews yet." });
  return h("ul", { class: "reviews" }, items.map((r) => h("li", { class: "review" },
    h("p", { class: "review-head" },
      h("strong", { text: asText(r.user?.name) || "A Yelp user" }), stars(r.rating),
      h("span", { class: "muted small", text: formatDate(asText(r.time_created).slice(0, 10), { withYear: true }) })),
    h("blockquote", { class: "pre-wrap", text: asText(r.text) }),
    safeUrl(r.url) ? h("p", { class: "small" }, link(r.url, "Read on Yelp")) : null)));
}

// ------------------------------------------------------------------------------ search

function searchResults(results, output) {
  const items = asList(results).filter(isObject);
  if (!items.length) return h("p", { class: "muted", text: "No results." });
  const chunks = asList(output.content_chunks).filter(isObject);
  return h("ol", { class: "search-results" }, items.map((r, i) => {
    const id = asText(chunks.find((c) => c.url === r.url)?.id ?? i + 1);
    let host = asText(r.display_link);
    if (!host) {
      try { host = new URL(r.url).hostname; } catch { host = ""; }
    }
    return h("li", { class: "search-result", dataset: { citation: id } },
      h("span", { class: "citation-number", "aria-hidden": "true", text: id }),
      h("div", {},
        h("h4", {}, link(r.url, asText(r.title) || asText(r.url))),
        h("p", { class: "muted small", text: host }),
        h("p", { class: "small", text: asText(r.snippet) })));
  }));
}

// ------------------------------------------------------------------------------ actions

function connectCard(response, output, ctx) {
  const data = isObject(response) ? response : { message: asText(response) };
  const connector = asText(data.connector) || CONNECT_DEFAULTS[output.response_type] || "";
  const status = h("p", { class: "connect-status", role: "status" });
  const button = h("button", { type: "button", class: "button primary" }, icon("plug"),
    h("span", { text: connectLabel(connector, output, ctx) }));
  const retry = h("button", { type: "button", class: "button", hidden: true }, icon("retry"),
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

function connectLabel(connector, output, ctx) {
  if (output.response_type === "connect_plaid_account" || connector === "plaid") return "Connect bank";
  if (connector === "gmail") return "Connect Google";
  return `Connect ${ctx.displayName?.(connector) || asText(output.agent_name) || connector}`;
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
