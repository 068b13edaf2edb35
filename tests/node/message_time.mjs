// The short times under messages (app/static/js/message-time.js) for fixed moments, in
// en-US, in the time zone the test gives (TZ). Prints {cases: [[got, want], ...]}.
import { importSource } from "./source.mjs";

const { fullTime, shortTime } = await importSource("app/static/js/message-time.js");

const now = new Date(2026, 2, 11, 15, 30); // Wednesday, March 11, 2026, 15:30 local
const at = (...parts) => new Date(...parts);
const cases = [
  [shortTime(at(2026, 2, 11, 14, 5), now, "en-US"), "2:05 PM"],
  [shortTime(at(2026, 2, 11, 0, 0), now, "en-US"), "12:00 AM"],
  [shortTime(at(2026, 2, 10, 23, 59), now, "en-US"), "Yesterday 11:59 PM"],
  [shortTime(at(2026, 2, 9, 9, 0), now, "en-US"), "Mon 9:00 AM"],
  [shortTime(at(2026, 2, 5, 9, 0), now, "en-US"), "Thu 9:00 AM"],
  [shortTime(at(2026, 2, 4, 9, 0), now, "en-US"), "Mar 4, 9:00 AM"],
  [shortTime(at(2025, 11, 31, 18, 0), now, "en-US"), "Dec 31, 2025"],
  [shortTime(at(2026, 2, 10, 9, 0), now, "de-DE"), "Gestern 9:00"],
  [fullTime(at(2026, 2, 11, 14, 5, 9), "en-US"), "Wednesday, March 11, 2026 at 2:05:09 PM"],
];
console.log(JSON.stringify({ cases }));
