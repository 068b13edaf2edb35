// OIDC mode: the page signs in at the identity provider with the authorization-code flow
// and PKCE (S256), as a public client (no secret: a page cannot keep one). The tokens live
// in sessionStorage (this tab, until it closes or the person signs out); the access token
// is what the API and the socket get, exactly like an API token in token mode.
const TOKENS_KEY = "switchboard.oidc.tokens";
// What the page needs again when the provider sends the browser back: the PKCE verifier,
// the state that ties the answer to this request, and where in the app the person was.
const PENDING_KEY = "switchboard.oidc.pending";
// Refresh this long before the access token expires, so no request carries a stale one.
const EARLY_MS = 60_000;
const TIMEOUT_MS = 15_000;

function base64url(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomString(size = 32) {
  const bytes = new Uint8Array(size);
  crypto.getRandomValues(bytes);
  return base64url(bytes);
}

async function s256(verifier) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

function read(key) {
  try {
    return JSON.parse(sessionStorage.getItem(key) || "null");
  } catch {
    return null;
  }
}

function write(key, value) {
  try {
    if (value === null) sessionStorage.removeItem(key);
    else sessionStorage.setItem(key, JSON.stringify(value));
  } catch {
    // Storage disabled: the tokens last as long as this page.
  }
}

export class SignInError extends Error {}

export class OidcSession {
  /** config: GET /api/auth/config's "oidc" (issuer, client_id, scopes, endpoints). */
  constructor(config) {
    this.config = config;
    this.tokens = read(TOKENS_KEY);
    this.refreshTimer = null;
    this.onRefreshed = () => {};
  }

  get redirectUri() {
    return `${location.origin}/`;
  }

  accessToken() {
    return this.tokens?.access_token ?? null;
  }

  /** True when there is an access token that is not about to expire. */
  fresh() {
    return Boolean(this.tokens?.access_token) && this.tokens.expires_at - Date.now() > EARLY_MS;
  }

  /** Go to the provider; the page unloads, so the promise never settles. */
  async redirectToProvider() {
    const verifier = randomString(48);
    const state = randomString(16);
    write(PENDING_KEY, { verifier, state, returnTo: location.hash });
    const query = new URLSearchParams({
      response_type: "code",
      client_id: this.config.client_id,
      redirect_uri: this.redirectUri,
      scope: this.config.scopes,
      state,
      nonce: randomString(16),
      code_challenge: await s256(verifier),
      code_challenge_method: "S256",
    });
    // Auth0 and others issue a JWT for an API only when asked for its audience.
    if (this.config.audience) query.set("audience", this.config.audience);
    location.assign(`${this.config.authorization_endpoint}?${query}`);
    return new Promise(() => {});
  }

  /**
   * When the provider has just sent the browser back (?code=…&state=…, or ?error=…),
   * exchange the code for tokens. Returns whether this was such a return; throws a
   * SignInError to show the person when the provider or the exchange refused.
   */
  async completeRedirect() {
    const params = new URLSearchParams(location.search);
    if (!params.has("code") && !params.has("error")) return false;
    const pending = read(PENDING_KEY);
    write(PENDING_KEY, null);
    // The code is single-use and must not stay in the address bar or the history.
    history.replaceState(null, "", `/${pending?.returnTo || ""}`);
    if (params.has("error")) {
      const reason = params.get("error_description") || params.get("error");
      throw new SignInError(`The identity provider did not sign you in: ${reason}`);
    }
    if (!pending || params.get("state") !== pending.state) {
      throw new SignInError("That sign-in answer was not for this page. Sign in again.");
    }
    await this.exchange({
      grant_type: "authorization_code",
      code: params.get("code"),
      redirect_uri: this.redirectUri,
      client_id: this.config.client_id,
      code_verifier: pending.verifier,
    });
    return true;
  }

  async exchange(form) {
    let response;
    try {
      response = await fetch(this.config.token_endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
        body: new URLSearchParams(form),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch {
      throw new SignInError("Cannot reach the identity provider. Try again in a moment.");
    }
    const body = await response.json().catch(() => null);
    if (!response.ok || !body?.access_token) {
      throw new SignInError(`The identity provider refused: ${body?.error || response.status}.`);
    }
    this.store(body);
  }

  store(body) {
    const lifetime = Number(body.expires_in) > 0 ? Number(body.expires_in) * 1000 : 5 * 60_000;
    this.tokens = {
      access_token: body.access_token,
      // A refresh may not return a new refresh token (or id token): keep the old one.
      refresh_token: body.refresh_token || this.tokens?.refresh_token || null,
      id_token: body.id_token || this.tokens?.id_token || null,
      expires_at: Date.now() + lifetime,
    };
    write(TOKENS_KEY, this.tokens);
    this.schedule();
  }

  /** A new access token from the refresh token; false when there is none or it failed. */
  async refresh() {
    const refreshToken = this.tokens?.refresh_token;
    if (!refreshToken) return false;
    try {
      await this.exchange({
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: this.config.client_id,
      });
    } catch {
      this.forget();
      return false;
    }
    this.onRefreshed();
    return true;
  }

  /** Refresh shortly before expiry, so the socket's next reconnect has a valid token. */
  schedule() {
    clearTimeout(this.refreshTimer);
    if (!this.tokens?.refresh_token) return;
    const due = Math.max(1000, this.tokens.expires_at - Date.now() - EARLY_MS);
    this.refreshTimer = setTimeout(() => this.refresh(), due);
  }

  forget() {
    clearTimeout(this.refreshTimer);
    this.tokens = null;
    write(TOKENS_KEY, null);
  }

  /** Forget the tokens, and end the provider's session too when it offers a way. */
  signOut() {
    const idToken = this.tokens?.id_token;
    this.forget();
    const back = `${location.origin}/?signed_out=1`;
    if (!this.config.end_session_endpoint) {
      location.assign(back);
      return;
    }
    const query = new URLSearchParams({ client_id: this.config.client_id, post_logout_redirect_uri: back });
    if (idToken) query.set("id_token_hint", idToken);
    location.assign(`${this.config.end_session_endpoint}?${query}`);
  }
}

/**
 * Show the sign-in dialog (a message and one button) until the person presses the
 * button. Used when signing in needs them: after signing out, or after a refusal, so a
 * provider that keeps failing cannot send the page round in a redirect loop.
 */
export function askToSignIn(dialog, message) {
  dialog.querySelector("#signin-text").textContent = message;
  return new Promise((resolve) => {
    const button = dialog.querySelector("#signin-go");
    const onCancel = (event) => event.preventDefault();
    const onClick = () => {
      button.removeEventListener("click", onClick);
      dialog.removeEventListener("cancel", onCancel);
      dialog.close();
      resolve();
    };
    button.addEventListener("click", onClick);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    button.focus();
  });
}
