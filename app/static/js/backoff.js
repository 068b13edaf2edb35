// Reconnect delays: exponential, capped, with jitter so that many tabs dropped by one
// server restart do not all come back in the same instant.

export const BACKOFF = { baseMs: 500, capMs: 15_000, factor: 2 };

/**
 * Delay before reconnect attempt ``attempt`` (0 for the first): a random value between
 * half and all of min(cap, base · factor^attempt). ``random`` is injectable for tests.
 */
export function backoffDelay(attempt, { baseMs, capMs, factor } = BACKOFF, random = Math.random) {
  const ceiling = Math.min(capMs, baseMs * factor ** Math.max(0, attempt));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
