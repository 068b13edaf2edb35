// When a message was sent or answered: a short time on the page ("14:05", "Yesterday
// 14:05", "Mon 14:05", "Mar 3, 14:05", "Mar 3, 2025") and the full date and time in its
// title and datetime attribute. From the events' ts, so a reloaded chat shows the same.

const DAY_MS = 86_400_000;

function startOfDay(date) {
  return new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime();
}

/** The short words for ``date`` as seen at ``now`` (pure: tests pass both and a locale). */
export function shortTime(date, now = new Date(), locale = undefined) {
  const clock = new Intl.DateTimeFormat(locale, { hour: "numeric", minute: "2-digit" }).format(date);
  const days = Math.round((startOfDay(now) - startOfDay(date)) / DAY_MS);
  if (days === 0) return clock;
  if (days === 1) {
    const yesterday = new Intl.RelativeTimeFormat(locale, { numeric: "auto" }).format(-1, "day");
    return `${yesterday[0].toUpperCase()}${yesterday.slice(1)} ${clock}`;
  }
  if (days > 1 && days < 7) {
    return `${new Intl.DateTimeFormat(locale, { weekday: "short" }).format(date)} ${clock}`;
  }
  if (date.getFullYear() === now.getFullYear()) {
    return new Intl.DateTimeFormat(locale, { month: "short", day: "numeric", hour: "numeric",
      minute: "2-digit" }).format(date);
  }
  return new Intl.DateTimeFormat(locale, { year: "numeric", month: "short", day: "numeric" }).format(date);
}

/** "Tuesday, March 3, 2026 at 14:05:09": what the title says. */
export function fullTime(date, locale = undefined) {
  return new Intl.DateTimeFormat(locale, { dateStyle: "full", timeStyle: "medium" }).format(date);
}

/** A <time> element for an event's ``ts``, or null when it has none. */
export function timeElement(ts, className = "") {
  const date = typeof ts === "string" ? new Date(ts) : null;
  if (!date || Number.isNaN(date.getTime())) return null;
  const el = document.createElement("time");
  el.className = `msg-time ${className}`.trim();
  el.dateTime = date.toISOString();
  el.title = fullTime(date);
  el.textContent = shortTime(date);
  return el;
}
