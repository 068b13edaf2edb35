// Ids for chats and prompts. crypto.randomUUID exists only in secure contexts (https,
// localhost); a server reached over plain http on a LAN gets the getRandomValues version.

export function uuid() {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
  bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A chat id the server accepts ([A-Za-z0-9_-]{1,64}). */
export function newChatId() {
  return uuid().replaceAll("-", "");
}

export const CHAT_ID = /^[A-Za-z0-9_-]{1,64}$/;
