// Building blocks for showing values a person must read before deciding: label/value
// lists, whole texts in a box that scrolls, and a tool's arguments as a readable list.
// All text goes through textContent (dom.js); nothing here interprets markup.
import { asText, h, isObject } from "./dom.js";

// A value longer than this (or with more lines) is shown in a box with "Show all".
const LONG_CHARS = 240;
const LONG_LINES = 4;
// Argument names that hold an identifier: shown last, as code, muted; the person judges
// the other arguments, an id only tells which record.
const ID_KEY = /(^|[_-])(id|ids|uuid)$|[a-z](Id|Ids|Uuid)$/;

/** A label/value list: rows of [label, value] (a value is text, a node or an array);
 *  rows whose value is empty are left out. */
export function fields(rows, { class: extra = "" } = {}) {
  const shown = rows.filter(([, value]) => value !== null && value !== undefined && value !== "");
  return h("dl", { class: `fields ${extra}`.trim() }, shown.map(([label, value]) => [
    h("dt", { text: label }),
    value instanceof Node || Array.isArray(value) ? h("dd", {}, value) : h("dd", { text: asText(value) }),
  ]));
}

/**
 * The whole ``text`` in a box that scrolls, never cut; when it overflows, a button lifts
 * the box's height limit. Returns [box, button]. Options: label (the box's accessible
 * name), empty (shown, muted, when there is no text), more / less (the button's words),
 * class (added to the box), short (a lower height limit, for values in a list).
 */
export function textBox(text, options = {}) {
  const { label = "Text", empty = "(empty)", more = "Show all", less = "Show less" } = options;
  const body = h("p", { class: "pre-wrap", text: text || empty });
  if (!text) body.classList.add("muted");
  const box = h("div", { class: `text-box${options.short ? " short" : ""} ${options.class || ""}`.trim(),
    role: "region", tabindex: "0", "aria-label": label }, body);
  const button = h("button", { type: "button", class: "link-button small text-box-expand", hidden: true,
    "aria-expanded": "false", text: more });
  button.addEventListener("click", () => {
    const open = box.classList.toggle("expanded");
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? less : more;
  });
  // Whether the text overflows its box is known only once it is laid out. The box
  // scrolls either way; the button says out loud that there is more to read.
  requestAnimationFrame(() => {
    if (box.scrollHeight > box.clientHeight + 1) button.hidden = false;
  });
  return [box, button];
}

/** What an action will do, as its connector resolved it before asking (PROTOCOL.md §3a,
 *  docs/protocol.md "What an approval will do"): its labelled fields, or null. */
export function effectFields(effect, { class: extra = "" } = {}) {
  const rows = Array.isArray(effect?.fields) ? effect.fields.filter(isObject) : [];
  if (!rows.length) return null;
  return fields(rows.map((row) => [asText(row.label), asText(row.value)]),
    { class: `approval-fields approval-effect ${extra}`.trim() });
}

/** "account_id" -> "Account id": readable, while still recognisably the argument's name. */
export function humanKey(key) {
  const words = String(key).replace(/[_-]+/g, " ").trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : String(key);
}

export function isIdKey(key) {
  return ID_KEY.test(String(key));
}

/**
 * Arguments as a readable list: every key in ``keys``, none left out. Identifiers come
 * last, as muted code; nested values as JSON; a long text in a box with "Show all".
 */
export function argumentList(args, keys, { class: extra = "approval-args" } = {}) {
  const ordered = [...keys.filter((k) => !isIdKey(k)), ...keys.filter((k) => isIdKey(k))];
  return h("dl", { class: `fields ${extra}`.trim() }, ordered.map((key) => {
    const value = args[key];
    const id = isIdKey(key) && (typeof value === "string" || typeof value === "number");
    return [h("dt", { class: id ? "arg-id" : null, text: humanKey(key) }), h("dd", {}, argumentValue(key, value, id))];
  }));
}

function argumentValue(key, value, id) {
  if (value === null || value === undefined) return h("span", { class: "muted", text: "none" });
  if (id) return h("code", { class: "arg-id", text: asText(value), title: `${humanKey(key)}: an identifier` });
  if (isObject(value) || Array.isArray(value)) {
    let json;
    try { json = JSON.stringify(value, null, 2); } catch { json = String(value); }
    return h("pre", { class: "json" }, h("code", { text: json }));
  }
  const text = asText(value);
  if (text.length > LONG_CHARS || text.split("\n").length > LONG_LINES) {
    return textBox(text, { label: humanKey(key), short: true, more: `Show all (${text.length} characters)` });
  }
  return h("span", { class: "pre-wrap", text });
}
