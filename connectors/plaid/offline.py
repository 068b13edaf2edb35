"""What the offline demo model knows about Plaid (``connectors.offline_hints``). Pure."""

from __future__ import annotations

import re

from connectors.offline_hints import Clause, Decline, OfflineHints, PastCall, Step, ToolHints
from connectors.offline_reading import date_range, items_of, money, parse_json, plural

# French, Spanish and German after the English: "dépensé", "gasté", "ausgegeben".
_SPENT = r"d[ée]pens[ée]e?s?|d[ée]penses|gast(?:[ée]|o|os|ado|aste|amos|ar)|ausgegeben|ausgaben"
_BALANCES = r"soldes?|saldos?|kontost[äa]nde?|comptes? bancaires?|cuentas? bancarias?|konten"
_RECORDS = r"transacciones|transaktionen|ums[äa]tze|buchungen|achats|compras|eink[äa]ufe"
KEYWORDS = re.compile(
    r"\b(balances?|spen[dt]|spending|transactions?|bank(?:ing)?|accounts?|budget|money|"
    r"purchases?|charges?|expenses?|income|paycheck|deposits?|savings|checking|credit card|"
    rf"did i (?:buy|pay)|i (?:bought|paid)|{_SPENT}|{_BALANCES}|{_RECORDS})\b",
    re.I,
)
# What a spending question is about: "spend on coffee", "bought at Amazon", "paid for Uber",
# "dépensé en restaurants", "gasté en café".
_SUBJECT_AFTER = re.compile(
    r"\b(?:spen[dt]|spending|pa(?:y|id)|buy|bought|purchased?|charged|"
    r"d[ée]pens[ée]e?s?|gast(?:[ée]|ado|aste|amos))\b(?:\s+(?:so\s+)?much)?"
    r"\s+(?:on|at|for|with|en|pour|au|aux|chez|dans|para)\s+"
    r"(?:the\s+|my\s+|les\s+|le\s+|la\s+|l'|des\s+|du\s+|los\s+|las\s+|el\s+|mis?\s+)?"
    r"(?P<what>[\w'&.-]+(?:\s+[\w'&.-]+){0,2}?)"
    r"(?=\s+(?:in|during|over|this|last|past|since|from|between|on|at|for|today|yesterday|"
    r"so|and|or|each|per|every|recently|lately|ce|cette|le|la|depuis|hier|aujourd'hui|"
    r"el|este|esta|la|desde|ayer|hoy)\b|\s*[,.;?!¿]|\s*$)",
    re.I,
)
# German names it before the verb: "für Restaurants ausgegeben", "bei Amazon ausgegeben".
_SUBJECT_BEFORE_VERB = re.compile(
    r"\b(?:für|bei)\s+(?:den\s+|die\s+|das\s+)?(?P<what>[\w'&.-]+(?:\s+[\w'&.-]+){0,2}?)"
    r"\s+ausgegeben\b",
    re.I,
)
# The bank's categories and merchants are English: what the money went on, in English.
_IN_ENGLISH = {
    "restaurant": "restaurants",
    "restaurants": "restaurants",
    "restaurantes": "restaurants",
    "café": "coffee",
    "cafés": "coffee",
    "kaffee": "coffee",
    "épicerie": "groceries",
    "supermarché": "groceries",
    "supermercado": "groceries",
    "comestibles": "groceries",
    "lebensmittel": "groceries",
    "gasolina": "gas",
    "benzin": "gas",
}
# "coffee transactions", "Uber charges": the word before the kind of record.
_SUBJECT_BEFORE = re.compile(
    r"\b(?P<what>[a-z][\w'&.-]*)\s+(?:transactions?|purchases?|charges?|payments?|spending|"
    r"expenses?|bills?)\b",
    re.I,
)
# Words in those places that say which records or when, not what they were for.
_NOT_A_SUBJECT = frozenset(
    """my the a an all any some recent latest last this past these those big biggest largest
    new pending card credit debit bank account checking savings monthly weekly daily total
    of in and or me it that what much money everything stuff things today yesterday week month
    year average usual show list find get give see view display pull check
    mes mon ma les des mis meine meinen letzten diesen""".split()
)
_PAY_IN = re.compile(r"\b(paycheck|payroll|income|deposits?|salary|got paid)\b", re.I)


def spending_subject(text: str) -> str | None:
    """What the money went on, if the request names it ("coffee", "Uber"), else None."""
    for pattern in (_SUBJECT_AFTER, _SUBJECT_BEFORE_VERB, _SUBJECT_BEFORE):
        match = pattern.search(text)
        if match is None:
            continue
        words = match.group("what").split()
        while words and words[0].lower() in _NOT_A_SUBJECT:
            words.pop(0)
        if words and words[-1].lower() not in _NOT_A_SUBJECT:
            said = " ".join(words)
            return _IN_ENGLISH.get(said.lower(), said)
    return None


def steps(clause: Clause) -> list[Step]:
    lowered = clause.text.lower()
    start, end, days = date_range(clause.text, clause.today)
    subject = spending_subject(clause.text)
    wanted: list[tuple[int, Step]] = []
    accounts = re.search(
        r"\b(balances?|accounts?|how much (?:money )?do i have|net worth|savings|checking|"
        rf"owe|{_BALANCES})\b",
        lowered,
    )
    transactions = re.search(
        r"\b(transactions?|purchases?|charges?|payments?|expenses?|activity|did i buy|bought|"
        r"did i pay|i paid|"
        rf"paycheck|payroll|income|deposits?|salary|{_RECORDS})\b",
        lowered,
    )
    spending = re.search(rf"\b(spen[dt]|spending|budget|categor(?:y|ies)|{_SPENT})\b", lowered)
    if subject is not None and spending and not transactions:
        # "what did I spend on coffee": the coffee transactions (their total), not every
        # category's.
        transactions, spending = spending, None
    query = subject if subject is not None and not _PAY_IN.search(subject) else None
    if accounts:
        wanted.append((accounts.start(), Step("get_accounts_at_plaid", lambda turn: {})))
    if transactions:
        wanted.append(
            (
                transactions.start(),
                Step(
                    "get_transactions_at_plaid",
                    lambda turn: {
                        "start_date": start,
                        "end_date": end,
                        "account_id": None,
                        "query": query,
                    },
                ),
            )
        )
    if spending:
        wanted.append(
            (spending.start(), Step("get_spending_summary_at_plaid", lambda turn: {"days": days}))
        )
    if not wanted:
        wanted.append((0, Step("get_accounts_at_plaid", lambda turn: {})))
    return [step for _, step in sorted(wanted, key=lambda pair: pair[0])]


# ----------------------------------------------------------------------------- declines

# An amount or the word for money: "$500", "500 €", "50 dollars", "money", "argent".
_MONEY = (
    r"(?:[$€£]\s?\d|\d[\d.,]*\s?(?:[$€£]|(?:dollars?|euros?|bucks|usd|eur)\b)|"
    r"\b(?:money|funds|cash|argent|dinero|plata|geld)\b)"
)


def _moving(verbs: str) -> re.Pattern[str]:
    # A question about a past payment ("did I send $50 to Bob?") is a lookup, not an order;
    # an email that mentions money ("send Bob an email saying dinner was $50") is an email.
    between = r"(?:(?!e-?mail|mail|message|courriel|correo|mensaje|nachricht)[^.?!]){0,40}?"
    return re.compile(rf"(?<!did i )(?<!have i )\b(?:{verbs})\b{between}{_MONEY}", re.I)


MOVE_MONEY = Decline(
    asks={
        "en": _moving("transfer|wire|send|pay|move|venmo|zelle"),
        "fr": _moving(
            r"vire[rz]?|transf[eèé]re[rz]?|envoie[rz]?|envoyer|paie[rz]?|payer|verse[rz]?"
        ),
        "es": _moving(r"transfiere|transferir|env[ií]a|enviar|manda|mandar|paga|pagar|deposita"),
        "de": _moving(r"[üu]berweise\w*|sende|senden|schick\w*|zahle|zahlen|bezahle\w*"),
    },
    says={
        "en": "I can't move money: the bank connection here only reads your accounts, "
        "balances and transactions.",
        "fr": "Je ne peux pas virer d'argent : ici, l'accès à la banque se limite à lire vos "
        "comptes, vos soldes et vos transactions.",
        "es": "No puedo transferir dinero: aquí la conexión con el banco solo lee tus cuentas, "
        "saldos y movimientos.",
        "de": "Ich kann kein Geld überweisen: Der Bankzugang liest hier nur deine Konten, "
        "Kontostände und Umsätze.",
    },
    about="transfer payment pay money",
)


def _amounts(text: str, label: str) -> list[float]:
    return [float(v.replace(",", "")) for v in re.findall(rf"{label} (-?[\d,]+\.\d\d)", text)]


def summary(call: PastCall) -> str | None:
    output = call.output or ""
    args = call.arguments
    if call.not_run:
        return None
    items = items_of(output)
    if call.name == "get_accounts_at_plaid":
        credit = [item for item in items if "credit" in item.lower()]
        cash = [item for item in items if item not in credit]
        cash_total = sum(sum(_amounts(item, "current")[:1]) for item in cash)
        owed = sum(sum(_amounts(item, "current")[:1]) for item in credit)
        text = (
            f"You have {plural(len(items), 'account')} connected, holding "
            f"{money(cash_total)} across checking and savings."
        )
        if credit:
            text += f" Your credit card balance is {money(owed)}."
        return text
    if call.name == "get_transactions_at_plaid":
        rows = [re.match(r"(\d{4}-\d{2}-\d{2}) (.+?) (-?[\d,]+\.\d\d)\b", item) for item in items]
        found = [(m.group(2), float(m.group(3).replace(",", ""))) for m in rows if m]
        spent = sum(amount for _, amount in found if amount > 0)
        period = (
            f" from {args['start_date']} to {args.get('end_date') or 'today'}"
            if args.get("start_date")
            else " over the last 30 days"
        )
        query = str(args.get("query") or "").strip()
        if not found:
            about = f" for {query}" if query else ""
            return f"I didn't find any transactions{about}{period}."
        biggest = max(found, key=lambda pair: pair[1])
        if query and len(found) == 1:
            return f"You spent {money(spent)} on {query}{period}: {biggest[0].title()}."
        if query:
            return (
                f"You spent {money(spent)} on {query}{period}, across "
                f"{plural(len(found), 'transaction')}. The largest was "
                f"{biggest[0].title()} at {money(biggest[1])}."
            )
        return (
            f"I found {plural(len(found), 'transaction')}{period}, with "
            f"{money(spent)} going out. The largest was {biggest[0].title()} at "
            f"{money(biggest[1])}."
        )
    if call.name == "get_spending_summary_at_plaid":
        data = parse_json(output)
        if isinstance(data, dict) and isinstance(data.get("categories"), list):
            top = ", ".join(
                f"{c['category']} ({money(c['amount'])})" for c in data["categories"][:3]
            )
            return (
                f"You spent {money(data.get('total_spent', 0))} over the last "
                f"{data.get('days', args.get('days', 30))} days; the biggest categories "
                f"were {top}."
            )
        return f"Here's your spending summary for the last {args.get('days', 30)} days."
    return None


HINTS = OfflineHints(
    examples=(
        "What are my account balances?",
        "Show my transactions from last week",
        "How much did I spend this month?",
        "Combien ai-je dépensé ce mois-ci ?",
        "¿Cuánto gasté este mes?",
        "Wie viel habe ich diesen Monat ausgegeben?",
    ),
    tools={
        "get_accounts_at_plaid": ToolHints(examples=("What are my account balances?",)),
        "get_transactions_at_plaid": ToolHints(examples=("Show my transactions from last week",)),
        "get_spending_summary_at_plaid": ToolHints(
            examples=("How much did I spend this month?",),
            follow_up="Want the transactions behind one of these categories, or a longer range?",
        ),
    },
    keywords=KEYWORDS,
    capability="show bank balances and spending",
    capability_in={
        "fr": "afficher vos soldes et vos dépenses bancaires",
        "es": "mostrar tus saldos y gastos bancarios",
        "de": "Kontostände und Ausgaben anzeigen",
    },
    declines=(MOVE_MONEY,),
    planner=steps,
    summary=summary,
    follow_up="Want a breakdown by category or a longer date range?",
    result_title=lambda call: "My recent banking summary",
    suggestions={
        "plaid_accounts_response": (
            "Show my transactions from last week",
            "How much did I spend this month?",
        ),
        "plaid_transactions_response": (
            "How much did I spend this month?",
            "What are my account balances?",
        ),
        "plaid_spending_summary": (
            "Show my transactions from last week",
            "What are my account balances?",
        ),
    },
)
