"""The server's Prometheus instruments, one registry per app (so several apps in one
process never clash). The streaming layer owns them because nearly all of them count its
work; the app serves them at ``/metrics``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
WRITE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.sockets_open = Gauge("switchboard_sockets_open", "Open chat sockets", registry=r)
        self.turns_running = Gauge("switchboard_turns_running", "Turns running here", registry=r)
        self.turns = Counter(
            "switchboard_turns", "Finished turns by status", ["status"], registry=r
        )
        self.turn_seconds = Histogram(
            "switchboard_turn_seconds", "Prompt to end_of_stream", buckets=TURN_BUCKETS, registry=r
        )
        self.events_sent = Counter(
            "switchboard_events_sent", "Frames written to sockets", registry=r
        )
        self.events_persisted = Counter(
            "switchboard_events_persisted", "Events committed to storage", registry=r
        )
        self.persist_seconds = Histogram(
            "switchboard_persist_seconds",
            "One batch append transaction",
            buckets=WRITE_BUCKETS,
            registry=r,
        )
        self.tool_calls = Counter(
            "switchboard_tool_calls",
            "Tool calls by agent and outcome",
            ["agent", "outcome"],
            registry=r,
        )
        self.model_errors = Counter(
            "switchboard_model_errors", "Turns ended by a model error", ["code"], registry=r
        )
        self.approvals = Counter(
            "switchboard_approvals",
            "Approvals asked for and decided, by outcome",
            ["outcome"],
            registry=r,
        )
        self.rate_limited = Counter(
            "switchboard_rate_limited", "Refused by a rate limit", ["limit"], registry=r
        )
        # Token usage by model, as each model call ends (websocket.usage_hooks).
        self.model_requests = Counter(
            "switchboard_model_requests", "Model calls that finished", ["model"], registry=r
        )
        self.model_input_tokens = Counter(
            "switchboard_model_input_tokens", "Input tokens used", ["model"], registry=r
        )
        self.model_output_tokens = Counter(
            "switchboard_model_output_tokens", "Output tokens used", ["model"], registry=r
        )
        self.model_tokens = Counter(
            "switchboard_model_tokens", "Tokens used, input and output", ["model"], registry=r
        )

        # Ratings of answers (app.feedback_api): each time an answer gets a rating it did
        # not have (a first rating, or a change to the other one); editing only the
        # comment is not counted. Current totals are in the database, not here.
        self.feedback = Counter(
            "switchboard_feedback",
            "Answers rated up or down (a first rating, or a change of rating)",
            ["rating"],
            registry=r,
        )
        for rating in ("up", "down"):
            self.feedback.labels(rating)  # both series exist (at 0) from the start
        self.feedback_cleared = Counter(
            "switchboard_feedback_cleared", "Ratings taken back (cleared)", registry=r
        )

    def count_tokens(self, model: str, input_tokens: int, output_tokens: int, total: int) -> None:
        self.model_requests.labels(model).inc()
        # A server that reports no usage counts as zero, never as a negative increment.
        self.model_input_tokens.labels(model).inc(max(input_tokens, 0))
        self.model_output_tokens.labels(model).inc(max(output_tokens, 0))
        self.model_tokens.labels(model).inc(max(total, 0))
