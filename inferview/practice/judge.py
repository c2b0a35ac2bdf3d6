"""An optional local-model judge for free-text answers, over the OpenAI-compatible chat API.

Ollama, llama.cpp's ``llama-server``, vLLM and LM Studio all serve ``POST {url}/chat/completions``.
With ``INFERVIEW_JUDGE_URL`` and ``INFERVIEW_JUDGE_MODEL`` set (environment, or the same keys in the
data folder's ``config.toml``, see ``inferview.settings``), each key point and each error of the
question's rubric is put to the model as one question, at temperature 0, with a JSON-schema
response format asking for a verdict and the supporting quote from the answer:

- a key point: ``yes`` (the answer states it), ``opposite`` (it states the contrary) or ``no``;
- an error: ``yes`` (the answer asserts the wrong claim) or ``no``.

A ``yes`` or ``opposite`` whose quote is not in the answer is discarded as ``no``. When any request
times out, cannot connect, returns an HTTP error or a body that is not the asked-for JSON, the whole
judgement is dropped and the rubric grader's result stands, with a note saying why. The judge is off
unless configured; nothing is sent anywhere but the configured URL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from inferview import settings
from inferview.practice.openq import ErrorResult, OpenGrade, PointResult, Rubric

DEFAULT_TIMEOUT_S = 30.0
PARALLEL_REQUESTS = 4

SYSTEM = (
    "You grade one answer given in an LLM-inference engineering interview. You are asked about a "
    "single claim. Judge the substance, whatever the wording. Reply with the JSON object only. "
    "'quote' is copied word for word from the candidate's answer: the shortest passage that makes "
    "the claim (or its opposite); leave it empty when the verdict is 'no'."
)


class JudgeUnavailable(RuntimeError):
    """The judge could not give a usable judgement; ``str()`` says why in a few words."""


@dataclass(frozen=True)
class JudgeConfig:
    """Where the judge is and which model answers."""

    url: str
    """Base URL of the OpenAI-compatible API, e.g. ``http://127.0.0.1:11434/v1``."""
    model: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    api_key: str | None = None
    """Sent as a bearer token when set (``INFERVIEW_JUDGE_KEY``); local servers need none."""

    @classmethod
    def from_settings(cls) -> JudgeConfig | None:
        """The configured judge, or None when ``INFERVIEW_JUDGE_URL``/``_MODEL`` are not both set.
        Raises ``settings.SettingsError`` for a broken settings file or timeout."""
        url = settings.get("INFERVIEW_JUDGE_URL")
        model = settings.get("INFERVIEW_JUDGE_MODEL")
        if not url or not model:
            return None
        raw = settings.get("INFERVIEW_JUDGE_TIMEOUT", DEFAULT_TIMEOUT_S)
        try:
            timeout = float(raw)
        except (TypeError, ValueError):
            raise settings.SettingsError(f"INFERVIEW_JUDGE_TIMEOUT must be a number of seconds, not {raw!r}") from None
        if timeout <= 0:
            raise settings.SettingsError("INFERVIEW_JUDGE_TIMEOUT must be more than 0 seconds")
        key = settings.get("INFERVIEW_JUDGE_KEY")
        return cls(str(url).rstrip("/"), str(model), timeout, str(key) if key else None)


def _schema(verdicts: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "judgement",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"verdict": {"type": "string", "enum": list(verdicts)},
                               "quote": {"type": "string"}},
                "required": ["verdict", "quote"],
                "additionalProperties": False,
            },
        },
    }


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u2019", "'").replace("\u2018", "'")).strip().casefold()


def quote_in(quote: str, answer: str) -> bool:
    """Whether ``quote`` is really in ``answer`` (case, spacing and edge punctuation aside)."""
    q = _squash(quote).strip(" \"'.,;:!?()[]")
    return bool(q) and q in _squash(answer)


@dataclass(frozen=True)
class _Ask:
    kind: str  # "point" or "error"
    index: int
    text: str


class Judge:
    """Asks one configured model about each item of a rubric."""

    def __init__(self, config: JudgeConfig, client: Any = None) -> None:
        import httpx

        self.config = config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = client or httpx.Client(timeout=config.timeout_s, headers=headers)

    def close(self) -> None:
        self._client.close()

    def _ask(self, prompt: str, answer: str, ask: _Ask) -> tuple[str, str]:
        import httpx

        if ask.kind == "point":
            question = (f"Does the answer state this claim? Claim: {ask.text}\n"
                        "Reply 'yes' if it states it, 'opposite' if it states the contrary, "
                        "'no' otherwise.")
            verdicts = ("yes", "no", "opposite")
        else:
            question = (f"Does the answer assert this wrong claim as true? Claim: {ask.text}\n"
                        "Reply 'no' when the answer only mentions it to reject it.")
            verdicts = ("yes", "no")
        body = {
            "model": self.config.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Interview question: {prompt}\n\nCandidate's answer:\n"
                                            f'"""\n{answer}\n"""\n\n{question}'},
            ],
            "response_format": _schema(verdicts),
        }
        try:
            resp = self._client.post(f"{self.config.url}/chat/completions", json=body)
        except httpx.TimeoutException:
            raise JudgeUnavailable(f"no reply within {self.config.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise JudgeUnavailable(f"cannot reach {self.config.url} ({type(exc).__name__})") from None
        if resp.status_code != 200:
            raise JudgeUnavailable(f"the server answered HTTP {resp.status_code}")
        try:
            content = resp.json()["choices"][0]["message"]["content"]
            data = json.loads(content)
            verdict, quote = data["verdict"], data["quote"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeUnavailable("the reply was not the JSON asked for") from None
        if verdict not in verdicts or not isinstance(quote, str):
            raise JudgeUnavailable(f"the reply's verdict {verdict!r} is not one of {', '.join(verdicts)}")
        return verdict, quote

    def grade(self, rubric: Rubric, answer: str) -> OpenGrade:
        """The judge's grade of ``answer``; raises :class:`JudgeUnavailable`."""
        asks = [_Ask("point", i, kp.point) for i, (kp, _, _) in enumerate(rubric.points)]
        asks += [_Ask("error", i, mis.claim) for i, (mis, _, _) in enumerate(rubric.errors)]
        prompt = " ".join(rubric.question.prompt.split())
        with ThreadPoolExecutor(max_workers=PARALLEL_REQUESTS) as pool:
            replies = list(pool.map(lambda a: self._ask(prompt, answer, a), asks))
        points: list[PointResult] = []
        errors: list[ErrorResult] = []
        invented = 0
        for ask, (verdict, quote) in zip(asks, replies, strict=True):
            if verdict != "no" and not quote_in(quote, answer):
                invented += 1
                verdict = "no"
            if ask.kind == "point":
                kp = rubric.points[ask.index][0]
                points.append(PointResult(kp, verdict == "yes", quote if verdict == "yes" else None))
                if verdict == "opposite":
                    errors.append(ErrorResult(f"Says the opposite of: {kp.point}", kp.point, quote,
                                              origin="reversal"))
            elif verdict == "yes":
                mis, origin, _ = rubric.errors[ask.index]
                errors.append(ErrorResult(mis.claim, mis.correction, quote, origin=origin))
        note = f"{invented} judgement(s) quoting words not in the answer were discarded" if invented else ""
        return OpenGrade(tuple(points), tuple(errors), grader="judge", note=note)


def grade_with_judge(rubric: Rubric, answer: str, config: JudgeConfig | None,
                     rubric_grade: OpenGrade | None = None) -> OpenGrade:
    """The judge's grade when ``config`` is set and the judge answers; otherwise the rubric's,
    with a note saying why the judge was not used."""
    fallback = rubric_grade if rubric_grade is not None else rubric.grade(answer)
    if config is None or not answer.strip():
        return fallback
    judge = Judge(config)
    try:
        return judge.grade(rubric, answer)
    except JudgeUnavailable as exc:
        return replace(fallback, note=f"judge unavailable: {exc}; the rubric decided")
    finally:
        judge.close()
