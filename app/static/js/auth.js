// Token mode: the access token lives in this browser's localStorage (the only thing the
// UI stores there) and is sent as a Bearer header to the API and ?token= to the socket.
const KEY = "switchboard.token";

export const tokenStore = {
  get() {
    try {
      return localStorage.getItem(KEY);
    } catch {
      return null; // storage disabled: the user is asked each time
    }
  },
  set(token) {
    try {
      localStorage.setItem(KEY, token);
    } catch {
      // Kept for this page only.
    }
  },
  clear() {
    try {
      localStorage.removeItem(KEY);
    } catch {
      // Nothing stored.
    }
  },
};

/**
 * Show the sign-in dialog until the user gives a token that ``check(token)`` accepts.
 * ``check`` resolves to the user, or rejects with an error whose message is shown.
 */
export function askForToken(dialog, check, message = "") {
  const form = dialog.querySelector("form");
  const input = dialog.querySelector("#token-input");
  const error = dialog.querySelector("#token-error");
  const submit = dialog.querySelector("button[type=submit]");
  error.textContent = message;
  input.value = "";
  return new Promise((resolve) => {
    const onSubmit = async (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) {
        error.textContent = "Paste your access token.";
        input.focus();
        return;
      }
      submit.disabled = true;
      error.textContent = "";
      try {
        const user = await check(token);
        form.removeEventListener("submit", onSubmit);
        dialog.removeEventListener("cancel", onCancel);
        dialog.close();
        resolve({ token, user });
      } catch (failure) {
        error.textContent = failure.message;
        input.select();
      } finally {
        submit.disabled = false;
      }
    };
    // Nothing works without a token: Escape does not dismiss the dialog.
    const onCancel = (event) => event.preventDefault();
    form.addEventListener("submit", onSubmit);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    input.focus();
  });
}
