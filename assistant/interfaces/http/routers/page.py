"""GET / (the chat page) and its static files, served from this package's web/ folder."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse

from ..dependencies import State
from ..problems import HTTPProblem

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
router = APIRouter(include_in_schema=False)


@router.get("/")
async def page(state: State):
    """The page, with this server's question limit: it is in bytes, and a character count
    let a Chinese question three times over the limit be typed, sent and refused."""
    html = (WEB_DIR / "index.html").read_text(encoding="utf-8")
    html = html.replace("{{MAX_QUESTION_BYTES}}", str(state.settings.max_question_bytes))
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})


@router.get("/static/{name}")
async def static(name: str):
    path = (WEB_DIR / name).resolve()
    if path.parent != WEB_DIR or not path.is_file():
        raise HTTPProblem(404, "not found", "the web page is at /")
    return FileResponse(path)
