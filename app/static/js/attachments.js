// Attachments: the composer's attach button (and drag-and-drop, paste), the tray of files
// waiting to be sent, and the previews of a message's attachments in the transcript.
//
// Each file is uploaded as soon as it is picked (POST /api/chats/{id}/attachments, with
// progress); the prompt frame then names the uploaded ids. The server sniffs every file,
// so the type shown is the one it found, not the one the browser guessed. Images are
// fetched with the credential and shown as data: URLs (the page's CSP allows no blob:).

import { h, clear } from "./dom.js";
import { icon } from "./icons.js";

const KINDS = {
  "image/png": "PNG image", "image/jpeg": "JPEG image", "image/gif": "GIF image",
  "image/webp": "WebP image", "application/pdf": "PDF", "text/plain": "Text",
  "text/csv": "CSV", "text/markdown": "Markdown", "application/json": "JSON",
};
const MAX_FILES = 10; // the prompt frame's limit
const UPLOAD_TIMEOUT_MS = 120_000;

export function describeSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function kindOf(attachment) {
  return KINDS[attachment.content_type] || attachment.content_type || "File";
}

function isImage(attachment) {
  return String(attachment.content_type || "").startsWith("image/");
}

/** One line about an attachment, for chips and screen readers. */
export function summary(attachment) {
  const size = attachment.width && attachment.height
    ? `${attachment.width}×${attachment.height}, ${describeSize(attachment.size)}`
    : describeSize(attachment.size);
  return `${attachment.name} (${kindOf(attachment)}, ${size})`;
}

/** The composer's attachments: picked, uploading, ready, or failed. */
export class AttachmentTray {
  /**
   * @param els {form, tray, button, input}
   * @param hooks {chatId(): the chat to upload into (made if need be), token(): the
   *   credential, changed(): the tray changed, error(text): say why a file was refused}
   */
  constructor(els, hooks) {
    this.els = els;
    this.hooks = hooks;
    this.items = []; // {key, file, state: "uploading"|"ready"|"failed", attachment, xhr, el}
    this.nextKey = 0;
    els.button.addEventListener("click", () => els.input.click());
    els.input.addEventListener("change", () => {
      this.add([...els.input.files]);
      els.input.value = "";
    });
    els.form.addEventListener("dragover", (event) => {
      if (!event.dataTransfer?.types?.includes("Files")) return;
      event.preventDefault();
      els.form.classList.add("dropping");
    });
    els.form.addEventListener("dragleave", () => els.form.classList.remove("dropping"));
    els.form.addEventListener("drop", (event) => {
      els.form.classList.remove("dropping");
      if (!event.dataTransfer?.files?.length) return;
      event.preventDefault();
      this.add([...event.dataTransfer.files]);
    });
    els.form.addEventListener("paste", (event) => {
      const files = [...(event.clipboardData?.files || [])];
      if (!files.length) return;
      event.preventDefault();
      this.add(files);
    });
  }

  /** Whether every file is uploaded (none is still on its way). */
  get busy() {
    return this.items.some((item) => item.state === "uploading");
  }

  get hasFailed() {
    return this.items.some((item) => item.state === "failed");
  }

  add(files) {
    for (const file of files) {
      if (this.items.length >= MAX_FILES) {
        this.hooks.error(`At most ${MAX_FILES} attachments per message.`);
        break;
      }
      const item = { key: this.nextKey++, file, state: "uploading", attachment: null };
      this.items.push(item);
      this.upload(item);
    }
    this.render();
  }

  upload(item) {
    const xhr = new XMLHttpRequest();
    item.xhr = xhr;
    item.progress = 0;
    xhr.open("POST", `/api/chats/${encodeURIComponent(this.hooks.chatId())}/attachments`);
    xhr.timeout = UPLOAD_TIMEOUT_MS;
    const token = this.hooks.token();
    if (token) xhr.setRequestHeader("Authorization", `Bearer ${token}`);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", (event) => {
      if (!event.lengthComputable) return;
      item.progress = Math.round((100 * event.loaded) / event.total);
      const bar = item.el?.querySelector("progress");
      if (bar) bar.value = item.progress;
    });
    const failed = (message) => {
      item.state = "failed";
      item.error = message;
      this.render();
      this.hooks.error(`${item.file.name}: ${message}`);
    };
    xhr.addEventListener("load", () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* described below */ }
      if (xhr.status === 201 && body?.id) {
        item.state = "ready";
        item.attachment = body;
        this.render();
      } else {
        failed(body?.error?.message || `the server answered ${xhr.status}`);
      }
    });
    xhr.addEventListener("error", () => failed("the upload did not reach the server"));
    xhr.addEventListener("timeout", () => failed("the upload took too long"));
    const form = new FormData();
    form.append("file", item.file, item.file.name);
    xhr.send(form);
  }

  remove(item) {
    if (item.state === "uploading") item.xhr?.abort();
    this.items = this.items.filter((other) => other !== item);
    this.render();
    this.els.button.focus();
  }

  /** The uploaded attachments, to send with a prompt. */
  ready() {
    return this.items.filter((item) => item.state === "ready").map((item) => item.attachment);
  }

  /** The uploaded attachments, to send with a prompt; the tray empties. */
  take() {
    const ready = this.items.filter((item) => item.state === "ready").map((item) => item.attachment);
    this.items = [];
    this.render();
    return ready;
  }

  /** Attachments of a prompt the server did not take, back into the tray. */
  restore(attachments) {
    for (const attachment of attachments || []) {
      this.items.push({ key: this.nextKey++, file: { name: attachment.name }, state: "ready", attachment });
    }
    this.render();
  }

  /** Another chat: uploads of this one are dropped (the server keeps them with the chat). */
  reset() {
    for (const item of this.items) if (item.state === "uploading") item.xhr?.abort();
    this.items = [];
    this.render();
  }

  render() {
    const tray = clear(this.els.tray);
    tray.hidden = this.items.length === 0;
    for (const item of this.items) {
      const name = item.attachment?.name || item.file.name;
      const label = item.state === "ready" ? summary(item.attachment)
        : item.state === "failed" ? `${name}: ${item.error}` : `${name}: uploading`;
      const remove = h("button", { type: "button", class: "icon-button", "aria-label": `Remove ${name}` },
        icon("close"));
      remove.addEventListener("click", () => this.remove(item));
      item.el = h("li", { class: `attachment-chip ${item.state}`, title: label },
        icon(item.state === "ready" && isImage(item.attachment) ? "attach" : "doc"),
        h("span", { class: "attachment-name", text: name }),
        item.state === "ready"
          ? h("span", { class: "attachment-meta", text: `${kindOf(item.attachment)} · ${describeSize(item.attachment.size)}` })
          : item.state === "failed"
            ? h("span", { class: "attachment-meta", text: "Not attached" })
            : h("progress", { max: "100", value: String(item.progress || 0), "aria-label": `Uploading ${name}` }),
        h("span", { class: "visually-hidden", text: label }),
        remove);
      tray.append(item.el);
    }
    this.hooks.changed();
  }
}

/** Previews of a message's attachments: image thumbnails and file chips, in ``container``. */
export function showAttachments(container, attachments, token) {
  if (!Array.isArray(attachments) || !attachments.length) return;
  const list = h("ul", { class: "attachment-previews", "aria-label": "Attachments" });
  for (const attachment of attachments) {
    const label = summary(attachment);
    const url = `/api/attachments/${encodeURIComponent(attachment.id)}/content`;
    if (isImage(attachment)) {
      const img = h("img", { alt: label, width: attachment.width, height: attachment.height, loading: "lazy" });
      list.append(h("li", { class: "attachment-preview image", title: label }, img));
      loadImage(url, token, img);
    } else {
      const link = h("a", { href: "#", class: "attachment-chip ready", title: label },
        icon("doc"),
        h("span", { class: "attachment-name", text: attachment.name }),
        h("span", { class: "attachment-meta", text: `${kindOf(attachment)} · ${describeSize(attachment.size)}` }));
      link.addEventListener("click", (event) => {
        event.preventDefault();
        download(url, token, attachment.name);
      });
      list.append(h("li", {}, link));
    }
  }
  container.append(list);
}

async function fetchBlob(url, token) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const response = await fetch(url, { headers, credentials: "same-origin" });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.blob();
}

async function loadImage(url, token, img) {
  try {
    const blob = await fetchBlob(url, token);
    img.src = await new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.addEventListener("load", () => resolve(reader.result));
      reader.addEventListener("error", () => reject(reader.error));
      reader.readAsDataURL(blob);
    });
  } catch {
    img.closest("li")?.classList.add("missing");
    img.alt = `${img.alt} (could not be loaded)`;
  }
}

async function download(url, token, name) {
  try {
    const blob = await fetchBlob(url, token);
    const link = h("a", { href: URL.createObjectURL(blob), download: name });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  } catch {
    // The chip stays; the browser's own error page is not the place for this.
  }
}
