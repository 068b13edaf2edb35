"""The Open Responses error object and its HTTP statuses (the Open Responses spec, "Error Types").

``{"error": {"type": "invalid_request", "code": "…", "param": "input[1].role",
"message": "…"}}``. Messages say what to change and never carry secrets or traces.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse

STATUS_BY_TYPE = {
    "invalid_request": 400,
    "not_found": 404,
    "too_many_requests": 429,
    "server_error": 500,
    "model_error": 500,
}


class OpenResponsesError(Exception):
    def __init__(
        self,
        type_: str,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.type = type_
        self.message = message
        self.code = code or type_
        self.param = param
        self.status = status or STATUS_BY_TYPE[type_]
        self.headers = dict(headers or {})

    def response(self) -> JSONResponse:
        return JSONResponse(
            {
                "error": {
                    "type": self.type,
                    "code": self.code,
                    "param": self.param,
                    "message": self.message,
                }
            },
            status_code=self.status,
            headers=self.headers,
        )


def invalid(
    message: str, param: str | None = None, code: str = "invalid_value"
) -> OpenResponsesError:
    return OpenResponsesError("invalid_request", message, code=code, param=param)
