"""Request and response models of the HTTP API: what /docs and /openapi.json show.

Lone surrogates ("\\ud800" in JSON) are valid JSON but not text; they are refused here, at
the edge, rather than failing later while the answer is encoded (a 500).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, model_validator

from oncall_common.lang import Lang

MODEL_NAME = "kb-assistant"  # the one "model" the OpenAI-compatible endpoints offer


def has_surrogates(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(has_surrogates(k) or has_surrogates(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_surrogates(v) for v in value)
    return False


def _no_surrogates(value: Any) -> Any:
    if has_surrogates(value):
        raise ValueError("contains invalid Unicode (a lone surrogate)")
    return value


Text = Annotated[str, AfterValidator(_no_surrogates)]


class AskRequest(BaseModel):
    # A misspelt field is refused, not ignored: {"topk": 1, "language": "zh"} got an English
    # answer with five citations and no word that both were dropped (newcomer).
    model_config = ConfigDict(extra="forbid")

    question: Text = Field("", description="The question, in Chinese or English (≤ 8 kB). A pasted log works. "
                                           "May be left out when `log` is sent: the log is then the question, as `ask --log FILE`.")
    top_k: int | None = Field(None, ge=1, le=10, description="Articles to consider (default 3).")
    lang: Lang | Literal["auto"] | None = Field(None, description="Answer language; \"auto\" or omitted: the question's (as `ask --lang auto`).")
    # Strict: "yes" or "no" is no yes/no answer here ("llm": "no" read as true would call the LLM).
    llm: StrictBool | None = Field(None, description="false: answer from the KB only; default: use the LLM when configured.")
    log: Text | None = Field(None, description="Log text to diagnose alongside the question (≤ the body limit).")

    @model_validator(mode="after")
    def _question_or_log(self) -> AskRequest:
        # A portal that posts the log its user pasted, and nothing else, was told "question:
        # Field required"; the CLI's `ask --log FILE` has always taken the log alone.
        if not self.question.strip() and not (self.log or "").strip():
            if "question" in self.model_fields_set and self.log is None:
                return self  # an empty question alone: refused as such ("the question is empty")
            raise ValueError("send a `question`, or a non-empty `log` to diagnose")
        if self.log is not None and not self.question.strip():  # the log is the question
            from assistant.i18n import t
            from oncall_common.lang import LANGS, detect_lang

            self.question = t("answer.log_question", self.lang if self.lang in LANGS else detect_lang(self.log))
        return self


class CitationOut(BaseModel):
    id: str
    title: str
    source: str
    section: str
    lang: str
    score: float
    text: str


class AskResponse(BaseModel):
    id: str = Field(..., description="Answer id, for POST /v1/feedback.")
    question: str
    answer: str
    lang: str
    grounded: bool
    citations: list[CitationOut]
    tool_calls: list[dict]
    backend: str
    timings_ms: dict[str, float]
    notes: list[str]
    coverage: Literal["full", "tentative", "partial", "none"] = Field(
        "full", description="tentative: answered, but a close call (the answer says to check it against what you see); "
        "partial: the symptom is covered, the question's platform, product or subject is not")
    confidence: float | None = Field(None, description="The refusal model's P(the KB answers this question)")
    fallback_reason: Literal["llm_not_configured", "not_grounded", "llm_failed"] | None = Field(
        None, description="Why the answer is the KB's own text although an LLM was wanted; null when it was not wanted or answered")


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer_id: Text = Field(..., max_length=64)
    rating: Literal[1, -1] = Field(..., description="1 for 👍, -1 for 👎")
    comment: Text = Field("", max_length=2000)


class ChatMessage(BaseModel):
    role: Text
    content: Annotated[str | list[dict] | None, AfterValidator(_no_surrogates)] = None


class ChatRequest(BaseModel):
    model: Text = MODEL_NAME
    messages: list[ChatMessage] = Field(..., min_length=1)
    stream: bool = False
    temperature: float | None = Field(None, description="Accepted for OpenAI clients and not applied: the assistant's own LLM settings decide.")
    max_tokens: int | None = Field(None, description="Accepted for OpenAI clients and not applied: a KB answer cut at N tokens would cut its fix "
                                   "(answers stay under 3,000 characters).")
    n: int | None = Field(None, description="Only 1: the KB gives one answer (a client asking for 3 was given 1 without a word).")

    @model_validator(mode="after")
    def _one_choice(self) -> ChatRequest:
        if self.n not in (None, 1):
            raise ValueError("only n=1 is supported: the KB gives one answer per question")
        return self


class ErrorOut(BaseModel):
    error: str
    hint: str = ""


class OpenAIError(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: int | None = None
    hint: str = ""


class OpenAIErrorOut(BaseModel):
    error: OpenAIError


# The error responses the answer endpoints document in the OpenAPI schema.
ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorOut} for status in (401, 413, 415, 422, 429, 503)}
OPENAI_ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": OpenAIErrorOut} for status in ERRORS}
