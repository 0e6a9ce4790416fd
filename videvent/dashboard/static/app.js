// The videvent live page: builds a card per camera, follows the update stream, draws the
// score charts and lets the user draw region polygons. No library: the page must work offline.
"use strict";

const CHART_WINDOW_S = 30;       // seconds of score shown on each chart
const MAX_POINTS = 3000;
const STATUS_TEXT = {connected: "connected", back: "connected", lost: "lost, reconnecting",
                     stalled: "stalled", finished: "finished", waiting: "waiting"};
const cameras = new Map();       // index -> camera view
const events = new Map();        // "camera-number" -> list item

function fmt(value, digits) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

// The token the page was opened with (?token=...), carried by every request the page makes:
// no cookie, which the browser would also send to every other service on this host.
const TOKEN = new URLSearchParams(location.search).get("token");

function authed(url) {
  if (!TOKEN) return url;
  const address = new URL(url, location.href);
  address.searchParams.set("token", TOKEN);
  return address.pathname + address.search;
}

async function getJSON(url) {
  const response = await fetch(authed(url), {cache: "no-store"});
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.json();
}

// ---- cameras -------------------------------------------------------------------------

function addCamera(info) {
  const card = document.getElementById("camera-template").content.firstElementChild.cloneNode(true);
  card.dataset.camera = info.index;
  card.querySelector(".camera-name").textContent = info.name;
  const view = {info, card, points: (info.history || []).slice(-MAX_POINTS), polygons: [],
                drawing: [], chartQueued: false,
                img: card.querySelector("img.live"), overlay: card.querySelector("canvas.regions"),
                chart: card.querySelector("canvas.chart")};
  cameras.set(info.index, view);
  document.getElementById("cameras").appendChild(card);
  view.img.addEventListener("load", () => drawRegions(view));
  view.img.addEventListener("error", () => setTimeout(() => openPicture(view), 2000));
  openPicture(view);
  setStatus(view, info.status, info.status_detail, info.status_since);
  setStats(view, info.stats || {});
  setupRegionEditor(view);
  loadRegions(view);
  queueChart(view);
}

function openPicture(view) {
  view.img.src = authed(`/cameras/${view.info.index}/mjpeg?open=${Date.now()}`);
}

function clock(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleTimeString() : "";
}

// What the camera is doing, in words: since when, and why when it is down.
function statusLine(status, detail, since) {
  detail = detail || {};
  const at = clock(since);
  if (status === "lost" && detail.attempts)   // not opened yet: tried again with backoff
    return `down since ${at}, attempt ${detail.attempts}: ${detail.error || "no answer"}`;
  if (status === "lost") return `lost since ${at}, reconnecting`;
  if (status === "connected" || status === "back") return `live since ${at}`;
  if (status === "stalled") return `no picture since ${at}`;
  if (status === "finished" && detail.error) return `gave up at ${at}: ${detail.error}`;
  if (status === "finished") return `finished at ${at}`;
  return "waiting for the camera";
}

function setStatus(view, status, detail, since) {
  const badge = view.card.querySelector(".status");
  badge.className = `badge status ${status}`;
  badge.textContent = status === "lost" && detail && detail.attempts ? "down, retrying"
    : STATUS_TEXT[status] || status;
  view.card.querySelector(".status-detail").textContent = statusLine(status, detail, since);
  view.card.dataset.status = status;
  view.card.classList.toggle("lost", status === "lost");
  view.card.classList.toggle("stalled", status === "stalled");
}

function setStats(view, stats) {
  view.card.querySelector(".fps").textContent = fmt(stats.fps, 1);
  view.card.querySelector(".dropped").textContent = stats.dropped ?? "–";
  view.card.querySelector(".latency").textContent =
    stats.latency_ms === undefined ? "–" : `${fmt(stats.latency_ms, 0)} ms`;
  // The disk the camera's events and logs use (of its --max-disk), its oldest event kept.
  view.card.querySelector(".disk").textContent = stats.disk_bytes === undefined ? "–"
    : bytesText(stats.disk_bytes) + (stats.disk_cap ? ` of ${bytesText(stats.disk_cap)}` : "");
  view.card.querySelector(".oldest-kept").textContent = stats.oldest_kept
    ? new Date(stats.oldest_kept).toLocaleString() : "–";
}

function bytesText(bytes) {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = Number(bytes), unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
  return `${value.toFixed(unit && value < 10 ? 1 : 0)} ${units[unit]}`;
}

function addScores(view, points) {
  // Points sent before the last snapshot of the camera are in it already.
  if (view.syncedUntil !== undefined) {
    points = points.filter(p => p[0] > view.syncedUntil);
    if (!points.length) return;
    delete view.syncedUntil;
  }
  view.points.push(...points);
  if (view.points.length > MAX_POINTS) view.points.splice(0, view.points.length - MAX_POINTS);
  const last = points[points.length - 1];
  view.card.querySelector(".score").textContent = fmt(last[1], 2);
  view.card.dataset.lastTime = last[0];
  view.card.dataset.points = (Number(view.card.dataset.points || 0) + points.length);
  queueChart(view);
}

function queueChart(view) {
  if (view.chartQueued) return;
  view.chartQueued = true;
  requestAnimationFrame(() => { view.chartQueued = false; drawChart(view); });
}

function drawChart(view) {
  const canvas = view.chart, ratio = window.devicePixelRatio || 1;
  const width = Math.round(canvas.clientWidth * ratio), height = Math.round(canvas.clientHeight * ratio);
  if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, width, height);
  const threshold = view.info.threshold;
  const end = view.points.length ? view.points[view.points.length - 1][0] : CHART_WINDOW_S;
  const start = end - CHART_WINDOW_S;
  const shown = view.points.filter(p => p[0] >= start);
  let top = Math.max(1, (threshold || 0) * 1.5);
  for (const [, score] of shown) if (score !== null) top = Math.max(top, score * 1.1);
  const x = t => (t - start) / CHART_WINDOW_S * (width - 1);
  const y = s => height - 2 - Math.max(0, Math.min(s, top)) / top * (height - 4);
  if (threshold !== null && threshold !== undefined) {
    g.strokeStyle = "#d0463c"; g.lineWidth = ratio; g.setLineDash([6 * ratio, 4 * ratio]);
    g.beginPath(); g.moveTo(0, y(threshold)); g.lineTo(width, y(threshold)); g.stroke();
    g.setLineDash([]);
    g.fillStyle = "#d0463c"; g.font = `${11 * ratio}px sans-serif`;
    g.fillText(`threshold ${threshold}`, 4 * ratio, y(threshold) - 3 * ratio);
  }
  g.strokeStyle = "#4aa3df"; g.lineWidth = 1.5 * ratio; g.beginPath();
  let drawing = false;
  for (const [t, score] of shown) {
    if (score === null) { drawing = false; continue; }
    if (drawing) g.lineTo(x(t), y(score)); else g.moveTo(x(t), y(score));
    drawing = true;
  }
  g.stroke();
}

// ---- region editor -------------------------------------------------------------------

function toPicture(view, event) {
  const box = view.overlay.getBoundingClientRect();
  return [Math.round((event.clientX - box.left) / box.width * view.info.width),
          Math.round((event.clientY - box.top) / box.height * view.info.height)];
}

function drawRegions(view) {
  const canvas = view.overlay, info = view.info;
  if (!info.width) return;
  if (canvas.width !== info.width || canvas.height !== info.height) {
    canvas.width = info.width; canvas.height = info.height;
  }
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.lineWidth = Math.max(1, info.width / 320);
  const outline = (points, closed, colour) => {
    if (!points.length) return;
    g.strokeStyle = colour; g.beginPath(); g.moveTo(...points[0]);
    for (const point of points.slice(1)) g.lineTo(...point);
    if (closed) g.closePath();
    g.stroke();
    g.fillStyle = colour;
    for (const [px, py] of points) g.fillRect(px - 2, py - 2, 5, 5);
  };
  for (const polygon of view.polygons) outline(polygon, true, "#f2d33c");
  outline(view.drawing, false, "#4aa3df");
}

async function loadRegions(view) {
  try {
    const region = await getJSON(`/cameras/${view.info.index}/region`);
    view.polygons = region.polygons;
    view.card.querySelector(".edit-region").hidden = !region.editable;
    drawRegions(view);
  } catch (error) { regionMessage(view, String(error), true); }
}

function regionMessage(view, text, isError) {
  const message = view.card.querySelector(".region-message");
  message.textContent = text;
  message.classList.toggle("error", !!isError);
}

function setupRegionEditor(view) {
  const card = view.card, tools = [".close-polygon", ".undo-point", ".clear-region", ".save-region"];
  const editing = on => {
    card.classList.toggle("editing", on);
    for (const tool of tools) card.querySelector(tool).hidden = !on;
    card.querySelector(".edit-region").textContent = on ? "Stop editing" : "Edit region";
  };
  card.querySelector(".edit-region").addEventListener("click", () => {
    editing(!card.classList.contains("editing"));
    regionMessage(view, card.classList.contains("editing") ? "click points on the picture" : "");
  });
  view.overlay.addEventListener("click", event => {
    view.drawing.push(toPicture(view, event));
    drawRegions(view);
  });
  card.querySelector(".close-polygon").addEventListener("click", () => {
    if (view.drawing.length < 3) { regionMessage(view, "a polygon needs at least 3 points", true); return; }
    view.polygons.push(view.drawing); view.drawing = []; drawRegions(view);
  });
  card.querySelector(".undo-point").addEventListener("click", () => { view.drawing.pop(); drawRegions(view); });
  card.querySelector(".clear-region").addEventListener("click", () => {
    view.polygons = []; view.drawing = []; drawRegions(view);
  });
  card.querySelector(".save-region").addEventListener("click", async () => {
    // The polygon being drawn is sent too: the server is the one judge of what is valid.
    const polygons = view.drawing.length ? [...view.polygons, view.drawing] : view.polygons;
    const response = await fetch(authed(`/cameras/${view.info.index}/region`), {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({polygons})});
    const answer = await response.json();
    if (!response.ok) { regionMessage(view, answer.error, true); return; }
    view.polygons = answer.polygons; view.drawing = [];
    drawRegions(view); editing(false);
    regionMessage(view, answer.polygons.length
      ? `saved ${answer.polygons.length} polygon(s); watched from the next session`
      : "cleared: the next session watches the whole picture");
  });
}

// ---- events --------------------------------------------------------------------------

// The event's length; when the camera was lost during it, the seconds of video it has (its
// clip's) and the span of the clock it covered, which are not the same.
function eventLength(event) {
  if (event.open) return "in progress";
  if (!event.video_s) return `${fmt(event.duration_s, 1)} s`;
  return `${fmt(event.video_s, 1)} s of video (over ${fmt(event.duration_s, 1)} s: ` +
         `the camera was lost meanwhile)`;
}

function showEvent(event) {
  const key = event.key || `${event.camera_index}-${event.number}`;
  let item = events.get(key);
  const list = document.getElementById("events");
  if (!item) {
    item = document.createElement("li");
    item.innerHTML = `<strong class="event-title"></strong> <span class="event-state"></span>
      <div class="event-meta"></div><img class="thumbnail" alt="event thumbnail" hidden>`;
    item.dataset.key = key;
    events.set(key, item);
    // Newest first: events arrive in order of their start.
    const after = [...list.children].find(other => Number(other.dataset.seenAt) < event.seen_at);
    list.insertBefore(item, after || null);
  }
  item.dataset.seenAt = event.seen_at;
  item.classList.toggle("open", event.open);
  item.classList.toggle("past", !!event.past);
  item.querySelector(".event-title").textContent = `${event.camera}: event ${event.number}`;
  item.querySelector(".event-state").textContent = eventLength(event);
  const when = event.past && event.session_started
    ? `earlier watch of ${new Date(event.session_started).toLocaleString()} · ` : "";
  item.querySelector(".event-meta").textContent =
    `${when}${event.start_timecode} to ${event.end_timecode} · peak ${fmt(event.peak_score, 1)}` +
    (event.kind ? ` · ${event.kind}` : "") +
    (event.regions && event.regions.length ? ` · ${event.regions.join(", ")}` : "");
  // One picture per event: the thumbnail, until the clip is written; then the clip, with the
  // thumbnail as its poster.
  const thumbnail = item.querySelector("img.thumbnail");
  const picture = event.thumbnail_url
    ? authed(`${event.thumbnail_url}?state=${event.open ? event.peak_frame : "final"}`) : null;
  let video = item.querySelector("video");
  if (event.clip_url && !video) {
    video = document.createElement("video");
    video.controls = true; video.muted = true; video.preload = "none";
    video.src = authed(event.clip_url);
    item.appendChild(video);
  }
  if (video) {
    if (picture) video.poster = picture;
    thumbnail.hidden = true;
    thumbnail.removeAttribute("src");
  } else if (picture) {
    thumbnail.src = picture;
    thumbnail.hidden = false;
  }
  document.getElementById("no-events").hidden = true;
}

// ---- updates -------------------------------------------------------------------------

function handle(message) {
  const view = cameras.get(message.camera_index);
  switch (message.type) {
    case "camera": {
      const known = cameras.get(message.camera.index);
      if (!known) { addCamera(message.camera); break; }
      Object.assign(known.info, message.camera);
      drawRegions(known); queueChart(known);
      break;
    }
    case "scores": if (view) addScores(view, message.points); break;
    case "status": if (view) setStatus(view, message.status, message.detail, message.since); break;
    case "stats": if (view) setStats(view, message.stats); break;
    case "event": showEvent(message.event); break;
  }
}

function follow() {
  const connection = document.getElementById("connection");
  const stream = new EventSource(authed("/api/stream"));
  stream.onopen = async () => {
    // Whatever happened before the stream was (re)opened.
    for (const info of await getJSON("/api/cameras")) sync(info);
    for (const event of (await getJSON("/api/events")).reverse()) showEvent(event);
    connection.className = "badge connected"; connection.textContent = "live";
  };
  stream.onerror = () => { connection.className = "badge lost"; connection.textContent = "reconnecting"; };
  stream.onmessage = message => handle(JSON.parse(message.data));
}

function sync(info) {
  const view = cameras.get(info.index);
  if (!view) { addCamera(info); return; }
  Object.assign(view.info, info);
  view.points = info.history.slice(-MAX_POINTS);
  if (view.points.length) view.syncedUntil = view.points[view.points.length - 1][0];
  setStatus(view, info.status, info.status_detail, info.status_since);
  setStats(view, info.stats);
  queueChart(view);
}

async function main() {
  for (const info of await getJSON("/api/cameras")) addCamera(info);
  follow();
}

main();
