"use strict";
// The chat page: streams /v1/ask/stream (server-sent events), renders the answer with
// clickable citations, shows tool results, and sends 👍/👎 to /v1/feedback. No framework,
// no CDN: it works on an offline network.

const $ = (sel, root = document) => root.querySelector(sel);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

function token() { return localStorage.getItem("assistant-token") || ""; }
function headers() {
  const h = { "Content-Type": "application/json" };
  if (token()) h.Authorization = "Bearer " + token();
  return h;
}

// A small markdown renderer for what answers contain: headings, bold, code, fences,
// tables, lists and [n] citation marks. Everything is escaped first.
function inline(text) {
  return esc(text)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/\[(\d+)\]/g, '<a class="cite" data-n="$1">[$1]</a>');
}
function renderMarkdown(md) {
  const out = [];
  const lines = md.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim().startsWith("```")) {
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith("```"); i++) code.push(lines[i]);
      out.push("<pre><code>" + esc(code.join("\n")) + "</code></pre>");
    } else if (/^\s*\|.*\|\s*$/.test(line)) {
      const rows = [];
      for (; i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i]); i++) {
        if (/^\s*\|[\s:|-]+\|\s*$/.test(lines[i])) continue;
        rows.push(lines[i].trim().slice(1, -1).split("|").map((c) => inline(c.trim())));
      }
      i--;
      out.push("<table>" + rows.map((r, k) => "<tr>" + r.map((c) => (k ? "<td>" : "<th>") + c + (k ? "</td>" : "</th>")).join("") + "</tr>").join("") + "</table>");
    } else if (/^#{1,6}\s/.test(line)) {
      out.push("<h3>" + inline(line.replace(/^#+\s*/, "")) + "</h3>");
    } else if (/^\s*([-*•]|\d+\.)\s+/.test(line)) {
      const items = [];
      for (; i < lines.length && /^\s*([-*•]|\d+\.)\s+/.test(lines[i]); i++) items.push("<li>" + inline(lines[i].replace(/^\s*([-*•]|\d+\.)\s+/, "")) + "</li>");
      i--;
      out.push("<ul>" + items.join("") + "</ul>");
    } else if (line.trim()) {
      out.push("<p>" + inline(line) + "</p>");
    }
  }
  return out.join("\n");
}

function parseEvents(buffer, onEvent) {
  const parts = buffer.split("\n\n");
  const rest = parts.pop();
  for (const part of parts) {
    let event = "message", data = "";
    for (const line of part.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (data) onEvent(event, JSON.parse(data));
  }
  return rest;
}

async function ask(question) {
  const card = $("#answer-template").content.firstElementChild.cloneNode(true);
  $(".question", card).textContent = question;
  $("#conversation").prepend(card);
  const body = $(".body", card);
  let streamed = "";
  const response = await fetch("/v1/ask/stream", { method: "POST", headers: headers(), body: JSON.stringify({ question }) });
  if (response.status === 401) {
    const t = prompt("This assistant needs an access token:");
    if (t) { localStorage.setItem("assistant-token", t); card.remove(); return ask(question); }
  }
  if (!response.ok) {
    const err = await response.json().catch(() => ({ error: response.statusText }));
    if (response.status === 503 || response.status === 429) watchReady();  // loading or busy: say when to retry
    body.textContent = "Error: " + err.error + (err.hint ? " (" + err.hint + ")" : "");
    card.classList.add("error");
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), (event, data) => {
      if (event === "token") { streamed += data; body.textContent = streamed; }
      else if (event === "tool") { const d = document.createElement("div"); d.className = "tool-line"; d.textContent = data; $(".tools", card).append(d); }
      else if (event === "error") { body.textContent = "Error: " + data.error; }
      else if (event === "answer") { showAnswer(card, data); }
    });
  }
}

function showAnswer(card, data) {
  card.dataset.answerId = data.id;
  card.classList.toggle("ungrounded", !data.grounded);
  $(".body", card).innerHTML = renderMarkdown(data.answer);
  $(".tools", card).innerHTML = "";
  for (const call of data.tool_calls) {
    const d = document.createElement("details");
    d.innerHTML = "<summary>🔧 " + esc(call.name) + (call.error ? " — error" : "") + " (" + Math.round(call.ms) + " ms)</summary><pre></pre>";
    $("pre", d).textContent = JSON.stringify(call.error ? { error: call.error } : call.result, null, 2);
    $(".tools", card).append(d);
  }
  $(".notes", card).textContent = data.notes.join(" · ");
  const list = $(".citations", card);
  list.innerHTML = "";
  data.citations.forEach((c, i) => {
    const li = document.createElement("li");
    li.id = "cite-" + data.id + "-" + (i + 1);
    li.innerHTML = '<span class="title"></span> <span class="meta"></span><div class="passage"></div>';
    $(".title", li).textContent = c.title;
    $(".meta", li).textContent = "· " + c.source + " · " + c.lang;
    $(".passage", li).innerHTML = renderMarkdown(c.text);
    $(".title", li).addEventListener("click", () => li.classList.toggle("open"));
    list.append(li);
  });
  card.querySelectorAll("a.cite").forEach((a) => a.addEventListener("click", () => {
    const li = document.getElementById("cite-" + data.id + "-" + a.dataset.n);
    if (li) { li.classList.add("open"); li.scrollIntoView({ block: "nearest" }); }
  }));
  for (const [cls, rating] of [["up", 1], ["down", -1]]) {
    $("." + cls, card).onclick = async () => {
      const comment = $(".comment", card).value;
      const r = await fetch("/v1/feedback", { method: "POST", headers: headers(), body: JSON.stringify({ answer_id: data.id, rating, comment }) });
      $(".thanks", card).textContent = r.ok ? (rating > 0 ? "thanks!" : "thanks — noted for the maintainers") : "could not save feedback";
    };
  }
  $("#status").textContent = data.grounded ? "" : "not found in the knowledge base";
}

// Until the server has loaded its index, say so (and how far it got), and keep asking.
let watching = false;
async function watchReady() {
  if (watching) return;
  watching = true;
  try {
    for (;;) {
      let r;
      try { r = await fetch("/readyz", { cache: "no-store" }); } catch (err) { r = null; }
      const data = r ? await r.json().catch(() => ({})) : {};
      if (r && r.ok) { if ($("#status").dataset.loading) { $("#status").textContent = ""; delete $("#status").dataset.loading; } return; }
      if (r && !data.loading) { $("#status").textContent = data.error || "the server is not ready"; return; }
      if (data.loading) {
        $("#status").dataset.loading = "1";
        $("#status").textContent = "loading the knowledge base…" + (data.progress ? " (" + data.progress + ")" : "");
      }
      await new Promise((done) => setTimeout(done, 1000));
    }
  } finally { watching = false; }
}
watchReady();

$("#ask-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const q = $("#question").value.trim();
  if (!q) return;
  // The server's limit is in bytes (UTF-8): a Chinese character is three.
  const limit = parseInt($("#question").dataset.maxBytes, 10);
  const size = new TextEncoder().encode(q).length;
  if (limit > 0 && size > limit) {
    $("#status").textContent = `The question is ${size} bytes; the limit is ${limit}. Paste only the lines that matter.`;
    return;
  }
  $("#ask").disabled = true;
  $("#status").textContent = "thinking…";
  try { await ask(q); if ($("#status").textContent === "thinking…") $("#status").textContent = ""; }
  catch (err) { $("#status").textContent = "request failed: " + err; }
  finally { $("#ask").disabled = false; }
});
$("#question").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("#ask-form").requestSubmit(); });
