"""Bylines: the owner, version and date lines a team's page opens with.

Ingest reads them so that such a line is never a heading (a handbook's "维护：… / 更新：…"
line titled every section under it), and answers so that one is never quoted as the page's
opening.
"""

from __future__ import annotations

import re

# "版本：V1.3    编写：推理平台组", "Owner: inference-oncall   Last reviewed: 2025-02-10",
# "文档负责人：@王磊 ｜ 最后更新：2024-10-21": a line of short labelled fields.
_BYLINE_FIELD = re.compile(r"(?:^|\s{2,}|\s*[｜|]\s*)[^\s：:｜|。]{1,12}(?: [^\s：:｜|。]{1,12})?[：:]\s*\S")
_BYLINE_WORD = re.compile(r"(?i)owner|author|version|updated|reviewed|\blast (?:edit(?:ed)?|modified)\b|负责人|版本|编写|作者|更新|日期|参会")


# "Created by Alice, last modified yesterday" (Confluence), "Owner: serving-oncall. Last reviewed 2026-01."
_BYLINE_PHRASE = re.compile(r"(?i)\b(?:created by|written by|authored by|(?:last )?(?:modified|updated|edited|changed|reviewed)(?: by| on| at|\b)"
                            r"|owners?:|maintainers?:|负责人[：:]|最后(?:更新|修改)|创建于|创建人)")


# A short line that starts by saying who wrote or owns the page is a byline, sentence or not.
_BYLINE_PERSON = re.compile(r"(?i)(?:authors?|owners?|maintainers?|written by|作者|负责人|编写人?|维护人)\s*[：:]\s*\S")


# A pandoc title block's line at the top of a page: "% ramalama 7", "% Jane Doe", "% 2025-03".
_PANDOC_TITLE = re.compile(r"^% \S.{0,60}$")


def is_byline(line: str) -> bool:
    """A page's owner, version or date line ("维护：平台组 张磊 / 更新：2025-09-30"), not its content."""
    line = line.strip()
    if not line or len(line) > 120:
        return False
    if _PANDOC_TITLE.match(line):
        return True
    if len(_BYLINE_PHRASE.findall(line)) >= 2 and len(line.split()) <= 14:
        return True  # two byline phrases on one short line, whatever its punctuation
    if _BYLINE_PERSON.match(line) and len(line.split()) <= 14:
        return True  # "Author: on-call team. Duration: 47 minutes." opened a postmortem, and was quoted as its answer
    if line.endswith(("。", ".")) or not _BYLINE_FIELD.match(line):
        return False
    return len(_BYLINE_FIELD.findall(line)) >= 2 or bool(_BYLINE_WORD.search(line))


# Labelled fields on one line, however they are apart: "维护：平台组 张磊 / 更新：2025-09-30".
_ANY_FIELD = re.compile(r"(?:^|[\s/｜|,，;；]+)[^\s：:｜|/]{1,12}[：:]\s*\S")


def is_byline_not_heading(line: str) -> bool:
    """A byline that could not be a heading: two labelled fields, a byline phrase twice, or a
    line that starts by naming its author, owner or date. `is_byline` alone also takes one
    labelled title with a byline word in it ("故障一：驱动更新后 NCCL 超时", "案例：版本升级后报错"),
    which heads a section (review)."""
    line = line.strip()
    if not is_byline(line):
        return False
    label = re.split(r"[：:]", line, maxsplit=1)[0]
    return (len(_ANY_FIELD.findall(line)) >= 2 or len(_BYLINE_PHRASE.findall(line)) >= 2 or bool(_PANDOC_TITLE.match(line))
            or bool(_BYLINE_PERSON.match(line)) or bool(_BYLINE_WORD.fullmatch(label.strip())))
