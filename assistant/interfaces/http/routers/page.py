"""GET / (the chat page) and its static files, served from this package's web/ folder."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from ..problems import HTTPProblem

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
router = APIRouter(include_in_schema=False)


@router.get("/")
async def page():
    return FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-store"})


@router.get("/static/{name}")
async def static(name: str):
    path = (WEB_DIR / name).resolve()
    if path.parent != WEB_DIR or not path.is_file():
        raise HTTPProblem(404, "not found", "the web page is at /")
    return FileResponse(path)
