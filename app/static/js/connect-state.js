// Connect cards follow the connection as it is now, not as it was when the card was
// drawn: an old chat's "Connect Google" card says "Connected." once the account is
// connected (from the Connections panel, another tab, or another card), and offers to
// connect again after a disconnect.

/**
 * ``isConnected(connector)``: true, false, or null for a connector the page does not
 * know (its card is then left as drawn). ``fresh``: the page has just reloaded the
 * connections, so they are newer than any card; otherwise a card drawn live (the server
 * has just said the account is missing) is newer than the page's list, and is left alone.
 */
export function syncConnectCards(root, isConnected, { fresh = false } = {}) {
  const which = fresh ? "[data-connector]" : "[data-connector]:not([data-live])";
  for (const button of root.querySelectorAll(`button.connect-button${which}`)) {
    const connected = isConnected(button.dataset.connector);
    if (connected === null) continue;
    const card = button.closest(".card") || button.parentElement;
    const status = card.querySelector(".connect-status");
    const retry = card.querySelector("button.connect-retry");
    if (connected && !button.hidden) {
      button.hidden = true;
      if (status) status.textContent = "Connected.";
      // "Ask again" only where the card knows its question.
      if (retry && retry.dataset.ready !== undefined) retry.hidden = false;
    } else if (!connected && button.hidden) {
      button.hidden = false;
      button.disabled = false;
      if (status) status.textContent = "";
      if (retry) retry.hidden = true;
    }
  }
}
