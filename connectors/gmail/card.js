// Gmail's cards in the browser UI (docs/connectors.md, "The UI card"): message lists, one
// message, the sent confirmation, the "Connect Google" card, and the approval of an email
// or a reply, which shows every header and the whole body as plain text (never HTML or
// Markdown: what is shown is exactly what would be sent).

const LISTS = ["google_email_inbox", "google_email_search", "google_email_search_from_email"];
// Arguments the email layout shows in its own rows; any other one is listed after them,
// so nothing the tool will receive is left out.
const EMAIL_ARGS = new Set(["to", "cc", "bcc", "subject", "body", "message_id"]);

export default function gmailCard(ui) {
  const { h, asList, asText, isObject, formatDate, icon, renderMarkdown } = ui;

  function emailList(messages) {
    const items = asList(messages).filter(isObject);
    if (!items.length) return h("p", { class: "muted", text: "No emails found." });
    return h("ul", { class: "email-list" }, items.map((m) => h("li", {
      class: `email${m.unread ? " unread" : ""}`,
    }, h("details", {},
      h("summary", {},
        h("span", { class: "email-line" },
          m.unread ? h("span", { class: "unread-dot", role: "img", title: "Unread", "aria-label": "Unread" }) : null,
          h("span", { class: "email-from", text: asText(m.from) }),
          h("time", { class: "email-date", datetime: asText(m.date), text: formatDate(m.date) })),
        h("span", { class: "email-subject", text: asText(m.subject) || "(no subject)" }),
        h("span", { class: "email-snippet", text: snippet(m.text ?? m.markdown ?? m.snippet) })),
      addressFields(m),
      h("div", { class: "markdown email-body" }, renderMarkdown(asText(m.markdown ?? m.text)))))));
  }

  function snippet(value, limit = 160) {
    const text = asText(value).replace(/\s+/g, " ").trim();
    return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
  }

  function addressFields(m, extra = []) {
    const rows = [
      ["From", m.from], ["To", m.to], ["Cc", m.cc], ["Bcc", m.bcc], ...extra,
    ].filter(([, value]) => asList(value).length && asList(value).some((v) => asText(v)));
    return h("dl", { class: "fields" }, rows.map(([label, value]) => [
      h("dt", { text: label }), h("dd", { text: asList(value).map(asText).join(", ") }),
    ]));
  }

  function emailMessage(message, output) {
    if (!isObject(message)) return ui.genericBody(output);
    return [
      h("p", { class: "email-subject large", text: asText(message.subject) || "(no subject)" }),
      addressFields(message, [["Date", message.date ? formatDate(message.date) : ""]]),
      h("div", { class: "markdown email-body" },
        renderMarkdown(asText(message.markdown ?? message.text))),
    ];
  }

  function emailSent(sent, output) {
    if (!isObject(sent)) return ui.genericBody(output);
    const reply = output.response_type === "reply_to_google_email";
    return [
      h("p", { class: "status-line ok" }, icon("check"),
        h("span", { text: reply ? "Reply sent" : "Email sent" })),
      addressFields({ to: sent.to, cc: sent.cc, bcc: sent.bcc },
        [["Subject", sent.subject]]),
      h("details", { class: "sent-body" },
        h("summary", { text: "Message" }),
        h("p", { class: "pre-wrap", text: asText(sent.body) })),
    ];
  }

  // ---------------------------------------------------------------------- approvals

  function addresses(value) {
    return asList(value).map(asText).map((a) => a.trim()).filter(Boolean);
  }

  function people(list) {
    if (list.length <= 2) return list.join(" and ");
    return `${list[0]} and ${list.length - 1} others`;
  }

  /** Every header, the whole body, then any other argument. The headers are those the
   *  server resolved before asking (``card.effect``: a reply's real recipients), else
   *  the arguments'. */
  function emailDetails(reply) {
    return (args, card) => {
      const others = Object.keys(args).filter((key) => !EMAIL_ARGS.has(key));
      return [
        ui.effectFields(card.effect) || headerRows(args, card, reply),
        ui.textBox(asText(args.body), {
          class: "approval-body",
          label: reply ? "Reply text" : "Email body",
          empty: "(empty message)",
          more: "Show the whole message",
        }),
        others.length ? ui.argumentList(args, others) : null,
      ];
    };
  }

  /** Headers from the arguments alone (an approval asked before effects were resolved). */
  function headerRows(args, card, reply) {
    const from = h("dd", { text: "…" });
    card.account().then((account) => { from.textContent = account || `your ${card.actor} account`; });
    const rows = [[h("dt", { text: "From" }), from]];
    for (const [label, key] of [["To", "to"], ["Cc", "cc"], ["Bcc", "bcc"]]) {
      const list = addresses(args[key]);
      if (list.length) rows.push([h("dt", { text: label }), h("dd", { text: list.join(", ") })]);
    }
    if (reply && args.message_id !== undefined) {
      rows.push([h("dt", { text: "In reply to" }), h("dd", { text: `message ${asText(args.message_id)}` })]);
    }
    if (!reply || args.subject !== undefined) {
      rows.push([h("dt", { text: "Subject" }),
        h("dd", { class: "approval-subject", text: asText(args.subject) || "(no subject)" })]);
    }
    return h("dl", { class: "fields approval-fields" }, rows);
  }

  const sending = { actor: "Gmail", sends: true };

  return {
    renderers: {
      ...Object.fromEntries(LISTS.map((type) => [type, emailList])),
      google_email_message: emailMessage,
      send_google_email: emailSent,
      reply_to_google_email: emailSent,
    },
    connect: { label: "Connect Google", types: ["google_account_needed", "connect_google_account"] },
    approvals: {
      send_google_email: {
        ...sending,
        kind: "email",
        action: "send this email",
        approveLabel: "Approve and send",
        summary: (args) => {
          const to = addresses(args.to);
          return to.length ? `send an email to ${people(to)}` : "send an email";
        },
        details: emailDetails(false),
      },
      reply_to_google_email: {
        ...sending,
        kind: "reply",
        action: "send this reply",
        approveLabel: "Approve and reply",
        summary: () => "send a reply to an email",
        details: emailDetails(true),
      },
    },
  };
}
