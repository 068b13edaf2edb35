// Pure formatting helpers (numbers, money, dates) for cards and the sidebar.

const moneyFormats = new Map();

export function money(amount, currency = "USD") {
  if (typeof amount !== "number" || !Number.isFinite(amount)) return "";
  const code = typeof currency === "string" && /^[A-Z]{3}$/.test(currency) ? currency : "USD";
  if (!moneyFormats.has(code)) {
    moneyFormats.set(code, new Intl.NumberFormat(undefined, { style: "currency", currency: code }));
  }
  return moneyFormats.get(code).format(amount);
}

export function count(n) {
  return typeof n === "number" ? new Intl.NumberFormat().format(n) : "";
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})(?:[T ]00:00:00(?:\.0+)?)?$/;

/** Parse a date or timestamp; a bare date (or midnight without zone) stays that calendar day. */
export function parseDate(value) {
  if (typeof value !== "string" || !value) return null;
  const bare = DATE_ONLY.exec(value);
  if (bare) return { date: new Date(+bare[1], +bare[2] - 1, +bare[3]), dateOnly: true };
  const date = new Date(value.includes("T") || value.includes("Z") ? value : value.replace(" ", "T"));
  return Number.isNaN(date.getTime()) ? null : { date, dateOnly: false };
}

const shortDay = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
const longDay = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric" });
const dayTime = new Intl.DateTimeFormat(undefined, {
  month: "short", day: "numeric", hour: "numeric", minute: "2-digit",
});

export function formatDate(value, { withYear = false } = {}) {
  const parsed = parseDate(value);
  if (!parsed) return typeof value === "string" ? value : "";
  if (parsed.dateOnly) return (withYear ? longDay : shortDay).format(parsed.date);
  return dayTime.format(parsed.date);
}

/** "just now", "5 min ago", "3 h ago", else a date: for the chat list only. */
export function relativeTime(value, now = Date.now()) {
  const parsed = parseDate(value);
  if (!parsed) return "";
  const seconds = Math.round((now - parsed.date.getTime()) / 1000);
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return longDay.format(parsed.date);
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

/** "in 5 minutes", "in 23 hours", "in 2 days" (or "… ago"): how far a time is from now. */
export function fromNow(value, now = Date.now()) {
  const parsed = parseDate(value);
  if (!parsed) return "";
  const seconds = Math.round((parsed.date.getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 60) return relative.format(seconds, "second");
  if (abs < 3600) return relative.format(Math.round(seconds / 60), "minute");
  if (abs < 86400 * 2) return relative.format(Math.round(seconds / 3600), "hour");
  return relative.format(Math.round(seconds / 86400), "day");
}
