// Plaid's cards in the browser UI (docs/connectors.md, "The UI card"): accounts and
// balances, transactions by account, the "Connect bank" card, and Plaid Link, the client
// widget its live account flow runs (connectors/plaid/flow.py). Link's script comes from
// Plaid; the connector declares it in the page's Content-Security-Policy (Connector.csp).

const LINK_SCRIPT = "https://cdn.plaid.com/link/v2/stable/link-initialize.js";
const TRANSACTIONS_SHOWN = 8;

export default function plaidCard(ui) {
  const { h, asList, asText, isObject, money, count, formatDate } = ui;

  function accounts(list) {
    const items = asList(list).filter(isObject);
    if (!items.length) return h("p", { class: "muted", text: "No accounts." });
    let cash = 0;
    let owed = 0;
    const currency = items[0]?.balances?.iso_currency_code || "USD";
    const rows = items.map((account) => {
      const b = isObject(account.balances) ? account.balances : {};
      const credit = account.type === "credit" || account.type === "loan";
      if (typeof b.current === "number") credit ? (owed += b.current) : (cash += b.current);
      const detail = [account.institution?.name, account.subtype,
        account.mask ? `•••• ${account.mask}` : null].filter(Boolean).join(" · ");
      return h("tr", { class: credit ? "credit" : "" },
        h("th", { scope: "row" },
          h("span", { class: "account-name", text: asText(account.name) }),
          h("span", { class: "muted small", text: detail })),
        h("td", { class: "num", text: money(b.current, b.iso_currency_code) }),
        h("td", { class: "num muted", text: credit && typeof b.limit === "number"
          ? `limit ${money(b.limit, b.iso_currency_code)}` : money(b.available, b.iso_currency_code) }));
    });
    return [
      h("table", { class: "data accounts" },
        h("thead", {}, h("tr", {},
          h("th", { scope: "col", text: "Account" }),
          h("th", { scope: "col", class: "num", text: "Balance" }),
          h("th", { scope: "col", class: "num", text: "Available" }))),
        h("tbody", {}, rows)),
      h("p", { class: "totals" },
        h("span", {}, "Cash ", h("strong", { text: money(cash, currency) })),
        owed ? h("span", {}, "Credit owed ", h("strong", { text: money(owed, currency) })) : null),
    ];
  }

  function transactions(byAccount, output) {
    if (!isObject(byAccount)) return ui.genericBody(output);
    const sections = Object.values(byAccount).filter(isObject);
    if (!sections.length) return h("p", { class: "muted", text: "No transactions in this period." });
    return sections.map((account) => {
      const txns = asList(account.transactions).filter(isObject);
      const row = (t) => {
        const spent = typeof t.amount === "number" && t.amount > 0;
        const amount = typeof t.amount === "number"
          ? `${spent ? "−" : "+"}${money(Math.abs(t.amount), t.iso_currency_code)}` : "";
        return h("tr", {},
          h("td", { class: "date", text: formatDate(t.date) }),
          h("td", {},
            h("span", { text: asText(t.merchant_name || t.name) }),
            t.pending ? h("span", { class: "badge", text: "pending" }) : null,
            h("span", { class: "muted small block", text: asList(t.category).map(asText).join(" › ") })),
          h("td", { class: `num ${spent ? "" : "income"}`, text: amount }));
      };
      const table = (list) => h("table", { class: "data transactions" },
        h("thead", { class: "visually-hidden" }, h("tr", {},
          h("th", { scope: "col", text: "Date" }), h("th", { scope: "col", text: "Description" }),
          h("th", { scope: "col", class: "num", text: "Amount" }))),
        h("tbody", {}, list.map(row)));
      return h("section", { class: "account-transactions" },
        h("h4", {}, asText(account.account_name),
          h("span", { class: "muted small", text: ` ${count(txns.length)} transactions` })),
        table(txns.slice(0, TRANSACTIONS_SHOWN)),
        txns.length > TRANSACTIONS_SHOWN
          ? h("details", {}, h("summary", { text: `Show ${txns.length - TRANSACTIONS_SHOWN} more` }),
            table(txns.slice(TRANSACTIONS_SHOWN)))
          : null);
    });
  }

  return {
    renderers: {
      plaid_accounts_response: accounts,
      plaid_transactions_response: transactions,
    },
    connect: { label: "Connect bank", types: ["connect_plaid_account"] },
    widgets: { plaid_link: runLink },
  };
}

// ------------------------------------------------------------------------ Plaid Link

let linkScript = null;

function loadLink() {
  if (window.Plaid) return Promise.resolve(window.Plaid);
  linkScript ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = LINK_SCRIPT;
    script.async = true;
    script.addEventListener("load", () => resolve(window.Plaid));
    script.addEventListener("error", () => {
      linkScript = null;
      reject(new Error("Could not load Plaid Link. Check the network and try again."));
    });
    document.head.append(script);
  });
  return linkScript;
}

/** Plaid Link: the bank sign-in runs in Plaid's widget; resolves to the finish body. */
async function runLink(step) {
  const linkToken = typeof step?.link_token === "string" ? step.link_token : "";
  if (!linkToken) throw new Error("The server did not send a Plaid link token.");
  const Plaid = await loadLink();
  return new Promise((resolve, reject) => {
    const handler = Plaid.create({
      token: linkToken,
      // metadata.institution tells the server which bank this is, so a re-link replaces
      // that bank's dead item instead of adding a second one.
      onSuccess: (publicToken, metadata) => {
        const body = { public_token: publicToken };
        const institution = metadata?.institution;
        if (institution) {
          body.institution = { name: institution.name ?? null, institution_id: institution.institution_id ?? null };
        }
        resolve(body);
      },
      onExit: (error) => reject(new Error(error?.display_message || "Bank connection cancelled.")),
    });
    handler.open();
  });
}
